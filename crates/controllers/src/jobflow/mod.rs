//! The JobFlow and JobTemplate controllers (`flow.volcano.sh`), sans-IO.
//!
//! A JobFlow's flows each become one Volcano Job, `<jobflow>-<template>`, made from the
//! JobTemplate of the flow's name; a flow's Job is created once the Jobs of all its `dependsOn`
//! targets have `Completed`. As in Volcano, the `dependsOn.probe` checks (`httpGetList`,
//! `tcpSocketList`, `taskStatusList`) are kept in the object but not evaluated: Volcano's
//! controller waits for `Completed` only.
//!
//! - [`controller`]: the work queue of flows and templates, and the changes of each turn.
//! - [`sync`]: one JobFlow turn: the Jobs to create or delete and the status to write.
//! - [`status`]: a flow's status from its Jobs, and its phase transitions.
//! - [`template`]: a JobTemplate's list of the Jobs made from it.

pub mod controller;
pub mod status;
pub mod sync;
pub mod template;

#[cfg(test)]
mod tests;

pub use controller::{FlowKey, FlowWork, JobFlowController};
pub use sync::{FlowSync, JobFlowError, sync_job_flow};
pub use template::sync_job_template;

/// The `<namespace>.<name>` value of the labels a flow's Jobs carry.
pub fn object_string(namespace: &str, name: &str) -> String {
    format!("{namespace}.{name}")
}

/// The name of the Job a flow makes from a template.
pub fn job_name(job_flow: &str, template: &str) -> String {
    format!("{job_flow}-{template}")
}
