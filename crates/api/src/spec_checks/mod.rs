//! The checks Volcano's admission webhooks make of CronJobs, JobFlows and HyperNodes, as pure functions of
//! the object: a scenario file names the file and document around their answer, the webhook
//! server answers the API server with it, so both refuse the same objects.

mod cron_job;
mod hyper_node;
mod job_flow;
mod network_topology;

pub use cron_job::check_cron_job;
pub use hyper_node::check_hyper_node;
pub use job_flow::{JobFlowInvalid, check_job_flow};
pub use network_topology::{MODE_HARD, MODE_SOFT, check_network_topology};

/// A field of an object and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// The field's path (`spec.schedule`, `spec.flows[1].dependsOn.targets[0]`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl FieldError {
    /// The error `message` about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}
