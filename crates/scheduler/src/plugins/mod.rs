//! The plugins volcano-rs implements; [`crate::registry`] builds them by their kinds.

mod binpack;
pub mod capacity;
mod conformance;
mod deviceshare;
mod drf;
mod fgd;
mod gang;
pub(crate) mod label_selector;
mod network_topology_aware;
mod nodeorder;
mod overcommit;
mod predicates;
mod priority;
mod proportion;
mod queue_accounting;

use crate::model::Snapshot;

pub(crate) use binpack::Binpack;
pub(crate) use capacity::Capacity;
pub(crate) use conformance::Conformance;
pub use conformance::is_critical;
pub(crate) use deviceshare::DeviceShare;
pub(crate) use drf::Drf;
pub(crate) use fgd::Fgd;
pub(crate) use gang::Gang;
pub use gang::gang_safe_victims;
pub(crate) use network_topology_aware::NetworkTopologyAware;
pub(crate) use nodeorder::NodeOrder;
pub use nodeorder::non_zero;
pub(crate) use overcommit::Overcommit;
pub(crate) use predicates::Predicates;
pub(crate) use priority::Priority;
pub(crate) use proportion::Proportion;

/// Every queue's deserved resources under `proportion` for the snapshot (by queue index;
/// `None` for queues without jobs): the share reclaim works towards.
pub fn proportion_deserved(s: &Snapshot) -> Vec<Option<crate::resource::Resource>> {
    proportion::Proportion::new(s).deserved()
}
pub use predicates::{node_affinity_matches, tolerates_all};

/// The cluster's GPU fragmentation under `fgd`'s default typical workload, and its free GPU
/// share, both in GPU thousandths: `(Σ fragmentation, Σ free)`.
pub fn gpu_fragmentation(s: &Snapshot) -> (f64, u64) {
    fgd::Fgd::new(&crate::conf::Arguments::default(), s).cluster(s)
}
