//! The checks Volcano's admission webhooks make of CronJobs, JobFlows, HyperNodes, network
//! topologies and sub-group policies, as pure functions of the object: a scenario file names the file and document
//! around their answer, the webhook server answers the API server with it, so both refuse the
//! same objects.

mod cron_job;
mod job_flow;
mod network_topology;
mod sub_group_policy;

pub use crate::topology::check_hyper_node;
pub use cron_job::check_cron_job;
pub use job_flow::{JobFlowInvalid, check_job_flow};
pub use network_topology::{MODE_HARD, MODE_SOFT, check_network_topology};
pub use sub_group_policy::check_sub_group_policy;

pub use crate::field_error::FieldError;
