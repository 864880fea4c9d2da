//! The plugins volcano-rs implements, by their Volcano names.

mod binpack;
pub mod capacity;
mod conformance;
mod deviceshare;
mod drf;
mod fgd;
mod gang;
mod nodeorder;
mod overcommit;
mod predicates;
mod priority;
mod proportion;
mod queue_accounting;

use crate::conf::PluginOption;
use crate::framework::Plugin;
use crate::model::Snapshot;

pub use conformance::is_critical;
pub use gang::gang_safe_victims;
pub use nodeorder::non_zero;

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

/// Builds the plugin `opt` names over the session's snapshot; `None` for a name this build does
/// not implement (configuration parsing has already rejected or reported those).
pub fn build(opt: &PluginOption, s: &Snapshot) -> Option<Box<dyn Plugin>> {
    let args = &opt.arguments;
    Some(match opt.name.as_str() {
        "priority" => Box::new(priority::Priority),
        "gang" => Box::new(gang::Gang),
        "conformance" => Box::new(conformance::Conformance),
        "drf" => Box::new(drf::Drf::new(s)),
        "proportion" => Box::new(proportion::Proportion::new(s)),
        "capacity" => Box::new(capacity::Capacity::new(opt, s)),
        "predicates" => Box::new(predicates::Predicates::new(args)),
        "nodeorder" => Box::new(nodeorder::NodeOrder::new(args)),
        "binpack" => Box::new(binpack::Binpack::new(args, s)),
        "overcommit" => Box::new(overcommit::Overcommit::new(args, s)),
        "deviceshare" => Box::new(deviceshare::DeviceShare::new(args)),
        "fgd" => Box::new(fgd::Fgd::new(args, s)),
        _ => return None,
    })
}
