//! PodTopologySpread's score: `ScheduleAnyway` constraints (and the cluster's default
//! constraints for pods without any), fewer matching pods in a node's domains scoring higher.

use crate::conf::Arguments;
use crate::model::{NodeId, Snapshot, TaskId};

/// Matching pods counted by topology domain, for the constraints in play.
pub(super) struct SpreadScore {}

impl SpreadScore {
    /// Reads the plugin's arguments and indexes the snapshot's placed pods.
    pub(super) fn new(_args: &Arguments, _s: &Snapshot) -> Self {
        SpreadScore {}
    }

    /// Adds `weight` × the normalised score of each of `nodes` for `t` to `scores`.
    pub(super) fn score(
        &self,
        _s: &Snapshot,
        _t: TaskId,
        _nodes: &[NodeId],
        _scores: &mut [f64],
        _weight: f64,
    ) {
    }

    /// `t` was placed on its node in the session.
    pub(super) fn on_allocate(&mut self, _s: &Snapshot, _t: TaskId) {}

    /// `t`'s placement was undone, or `t` is being evicted.
    pub(super) fn on_deallocate(&mut self, _s: &Snapshot, _t: TaskId) {}
}
