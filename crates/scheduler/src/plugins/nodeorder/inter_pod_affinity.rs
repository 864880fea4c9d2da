//! InterPodAffinity's score: the pod's preferred affinity and anti-affinity terms, and existing
//! pods' terms that match it (kube-scheduler's symmetric scoring), normalised over the
//! candidate nodes.

use crate::model::{NodeId, Snapshot, TaskId};

/// Placed pods' preferred terms and labels by topology domain.
pub(super) struct PodAffinityScore {}

impl PodAffinityScore {
    /// Indexes the snapshot's placed pods.
    pub(super) fn new(_s: &Snapshot) -> Self {
        PodAffinityScore {}
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
