//! Actions: the steps a session runs in the configured order.

mod allocate;
mod backfill;
mod enqueue;
mod evict;
mod job_queues;
mod nodes;
mod preempt;
mod reclaim;

pub use crate::framework::conditions::NOT_ENQUEUED;

use crate::framework::Session;

/// Runs the action `name`; names were checked when the configuration was parsed.
pub fn run(name: &str, ssn: &mut Session) {
    ssn.action.clear();
    ssn.action.push_str(name);
    match name {
        "enqueue" => enqueue::execute(ssn),
        "allocate" => allocate::execute(ssn),
        "backfill" => backfill::execute(ssn),
        "preempt" => preempt::execute(ssn),
        "reclaim" => reclaim::execute(ssn),
        _ => {}
    }
}
