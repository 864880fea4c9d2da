//! The controllers of volcano-rs, sans-IO: each reconciler reads an object and what it owns from
//! a [`ClusterView`] and returns the [`Change`]s to make. The caller (the simulator, the
//! Kubernetes runtime, a test) applies them and feeds the resulting watch events back.
//!
//! - [`job`]: Volcano Jobs: their PodGroup, pods, lifecycle policies, state machine and status.
//! - [`job_plugins`]: the job plugins (`svc`, `env`, `ssh`), below both the job controller that
//!   runs them and admission, which checks a Job's plugin arguments.
//! - [`pod_view`]: what the controller-manager keeps of each watched pod.
//! - [`podgroup`]: a PodGroup for every pod of ours that has none.
//! - [`queue`]: queue state (Open/Closing/Closed), driven by Commands.
//! - [`cronjob`]: Volcano CronJobs: Jobs from a template on a cron schedule.
//! - [`hypernode`]: HyperNodes discovered from node labels, and every HyperNode's node count.
//! - [`command`]: Commands routed to the controller of their target, consumed at most once.
//! - [`admission`]: the rules of Volcano's Job admission webhook, as a library.
//! - [`workqueue`]: keyed work queues with capped exponential backoff.
//! - [`manager`]: all of the above behind one entry point.

pub mod admission;
pub mod change;
pub mod command;
pub mod cronjob;
pub mod hypernode;
pub mod job;
pub mod job_plugins;
pub mod jobflow;
pub mod manager;
pub mod pod_view;
pub mod podgroup;
pub mod queue;
pub mod time;
pub mod view;
pub mod workqueue;

pub use change::{Change, Owned};

pub use manager::{ControllerManager, ManagerOptions, Work, WorkKey};
pub use view::ClusterView;
