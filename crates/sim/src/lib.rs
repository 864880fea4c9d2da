//! The embedded cluster of volcano-rs: an in-memory object store that plays the API server,
//! driving the controllers and the scheduler exactly as a cluster would.
//!
//! - [`store`]: the objects, with creation, patches and deletes as the API server applies them,
//!   and the watch events each change produces.
//! - [`cluster`]: the store with the controllers and the scheduler wired to it.
//! - [`workloads`]: the ReplicaSets and pods kube-controller-manager would make of a
//!   scenario's Deployments, ReplicaSets and StatefulSets.
//! - [`schedule`]: `volcano schedule`: controllers and sessions with frozen time.
//! - [`simulate`]: `volcano sim`: the same over virtual time, with kubelets and node events.
//! - [`metrics`]: what a simulation measured.
//! - [`generate`]: synthetic workloads from a `key=value` spec and a seed.
//! - [`report`]: a run's metrics as one self-contained HTML page.
//! - [`bench`]: `volcano bench`, sessions over a synthetic cluster, timed.
//! - [`topology`]: network-topology figures (gangs kept in one domain, domain occupancy).
//! - [`openb`], [`alloc_vs_load`]: the Alibaba GPU trace and the FGD paper's experiment.

pub mod alloc_vs_load;
pub mod bench;
pub mod churn;
pub mod cluster;
pub mod decisions;
pub mod faults;
pub mod generate;
pub mod metrics;
pub mod openb;
pub mod report;
pub mod schedule;
pub mod simulate;
pub mod soak;
pub mod store;
pub mod topology;
pub mod workloads;

pub use cluster::{Cluster, ClusterError};
pub use store::Store;
