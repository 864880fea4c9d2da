//! The volcano-rs scheduling core: Volcano's sessions, actions and plugins as a sans-IO
//! library. Input: a [`model::Snapshot`] and a [`conf::SchedulerConf`]. Output:
//! [`framework::Decisions`]. No clock, no network, no randomness: the same input always gives
//! the same decisions.

pub mod actions;
pub mod cache;
pub mod conf;
pub mod fit;
pub mod framework;
pub mod invariants;
pub mod model;
pub mod plugins;
pub mod resource;

use framework::{Decisions, Session, SessionOptions};

/// Runs one session: opens it over `snap`, runs the configured actions, closes it.
pub fn run_session(
    snap: model::Snapshot,
    conf: &conf::SchedulerConf,
    opts: SessionOptions,
) -> Decisions {
    let mut ssn = Session::open(snap, conf, opts);
    ssn.run_actions();
    ssn.close()
}
