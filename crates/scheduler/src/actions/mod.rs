//! Actions: the steps a session runs in the configured order.

mod allocate;
mod backfill;
mod enqueue;
mod evict;
mod job_queues;
mod nodes;
mod placer;
mod preempt;
mod reclaim;
mod sub_groups;
mod topology;

pub use crate::framework::conditions::NOT_ENQUEUED;

use crate::conf::ActionKind;
use crate::framework::Session;

/// Runs the action `kind` over the session. [`Session::run_actions`] runs them all; a runtime
/// that times each one calls [`Session::run_actions_observed`].
pub fn run(kind: &ActionKind, ssn: &mut Session) {
    ssn.action = Some(*kind);
    match kind {
        ActionKind::Enqueue => enqueue::execute(ssn),
        ActionKind::Allocate => allocate::execute(ssn),
        ActionKind::Backfill => backfill::execute(ssn),
        ActionKind::Preempt => preempt::execute(ssn),
        ActionKind::Reclaim => reclaim::execute(ssn),
    }
}
