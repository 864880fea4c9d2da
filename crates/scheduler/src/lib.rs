//! The volcano-rs scheduling core: Volcano's sessions, actions and plugins as a sans-IO
//! library. Input: a [`model::Snapshot`] and a [`conf::SchedulerConf`]. Output:
//! [`framework::Decisions`]. No clock, no network, no randomness: the same input always gives
//! the same decisions.
//!
//! Modules form layers, each naming only those below it: `resource`, `conf`, `fit` and `model`
//! at the bottom; the `framework` (sessions, tiers, statements) on them; `plugins` and
//! `actions` on the framework, neither naming the other; `cache` beside them; and the
//! [`registry`], which alone knows every plugin and action by its kind, on top.

pub mod actions;
pub mod cache;
pub mod conf;
pub mod cycle;
pub mod fit;
pub mod framework;
pub mod invariants;
pub mod model;
pub mod plugins;
pub mod registry;
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
