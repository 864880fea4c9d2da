//! `conformance`: never victimise critical pods: those of the system priority classes and
//! everything in `kube-system`.

use crate::framework::Plugin;
use crate::model::{Snapshot, TaskId};

/// The conformance plugin.
pub struct Conformance;

/// Priority classes Kubernetes reserves for pods the cluster cannot run without.
const CRITICAL_CLASSES: [&str; 2] = ["system-cluster-critical", "system-node-critical"];

/// Whether the pod must never be evicted by the scheduler.
pub fn is_critical(s: &Snapshot, t: TaskId) -> bool {
    let task = s.task(t);
    let class = task
        .pod
        .spec
        .as_ref()
        .and_then(|spec| spec.priority_class_name.as_deref());
    task.namespace == "kube-system" || class.is_some_and(|c| CRITICAL_CLASSES.contains(&c))
}

fn evictable(s: &Snapshot, candidates: &[TaskId]) -> Vec<TaskId> {
    candidates
        .iter()
        .copied()
        .filter(|&t| !is_critical(s, t))
        .collect()
}

impl Plugin for Conformance {
    fn name(&self) -> &'static str {
        "conformance"
    }

    fn preemptable(&self, s: &Snapshot, _p: TaskId, candidates: &[TaskId]) -> Option<Vec<TaskId>> {
        Some(evictable(s, candidates))
    }

    fn reclaimable(&self, s: &Snapshot, _r: TaskId, candidates: &[TaskId]) -> Option<Vec<TaskId>> {
        Some(evictable(s, candidates))
    }

    fn protects_victim(&self, s: &Snapshot, victim: TaskId) -> bool {
        is_critical(s, victim)
    }
}
