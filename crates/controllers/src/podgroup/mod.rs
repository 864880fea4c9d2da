//! The PodGroup controller: a pod of ours that belongs to no PodGroup (a Deployment's, a
//! StatefulSet's, a bare pod) gets one, so the scheduler can treat every pod as part of a
//! gang. The replicas of one ReplicaSet or StatefulSet share a PodGroup whose gang size is the
//! workload's `scheduling.volcano.sh/group-min-member` annotation ([`build`]); a workload
//! added or changed gets its own turn ([`workload`]).

pub mod build;
#[cfg(test)]
mod tests;
pub mod workload;

use std::collections::BTreeMap;

use volcano_api::k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::keys;
use volcano_api::pod_group_of_pod::is_bare_pod;

use crate::change::Change;
use crate::time::Instant;
use crate::view::{ClusterView, owning_job, pod_annotation as annotation};
use crate::workqueue::{RetryPolicy, WorkQueue};
pub use build::pod_group_name;
use build::{made_pod_group, owner_annotations, pod_group_for};
use volcano_api::NamespacedName;
use workload::{WorkloadKey, changes_for_workload};

/// The PodGroup controller.
pub struct PodGroupController {
    queue: WorkQueue<PodGroupKey>,
    scheduler_names: Vec<String>,
    /// Whether a bare pod ([`is_bare_pod`]) gets a PodGroup object, as in Volcano; without
    /// one, the scheduler keeps its PodGroup in memory.
    bare_pod_groups: bool,
}

/// What a turn of the PodGroup controller is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PodGroupKey {
    /// A pod that needs a PodGroup.
    Pod(NamespacedName),
    /// A ReplicaSet or StatefulSet added or changed.
    Workload(WorkloadKey),
}

/// One turn: the changes for one pod or workload.
#[derive(Debug)]
pub struct PodGroupWork {
    /// The pod or workload.
    pub key: PodGroupKey,
    /// What to change.
    pub changes: Vec<Change>,
}

impl PodGroupController {
    /// The scheduler names whose pods this controller looks after.
    pub fn scheduler_names(&self) -> &[String] {
        &self.scheduler_names
    }

    /// A controller for pods whose `schedulerName` is one of `scheduler_names`.
    pub fn new(retry: RetryPolicy, scheduler_names: Vec<String>) -> Self {
        PodGroupController {
            queue: WorkQueue::new(retry),
            scheduler_names,
            bare_pod_groups: true,
        }
    }

    /// Whether a bare pod gets a PodGroup object (on unless turned off): off, it is left to
    /// the scheduler's shadow PodGroup, which costs the API server nothing.
    pub fn set_bare_pod_groups(&mut self, on: bool) {
        self.bare_pod_groups = on;
    }

    /// Whether a bare pod gets a PodGroup object.
    pub fn bare_pod_groups(&self) -> bool {
        self.bare_pod_groups
    }

    /// Whether the pod is ours and its PodGroup is ours to make: it names none, or the one its
    /// admission named (which may exist already: the turn then finds nothing to do). A bare
    /// pod needs none when bare pods are left to the scheduler.
    pub fn needs_pod_group(&self, pod: &Pod) -> bool {
        self.is_ours(pod)
            && owning_job(pod).is_none()
            && (self.bare_pod_groups || !is_bare_pod(pod))
            && made_pod_group(pod).is_some()
    }

    /// Whether the pod's `schedulerName` is one of ours.
    fn is_ours(&self, pod: &Pod) -> bool {
        pod.spec
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref())
            .is_some_and(|n| self.scheduler_names.iter().any(|s| s == n))
    }

    /// A pod was added or changed.
    pub fn on_pod(&mut self, pod: &Pod) {
        if self.needs_pod_group(pod) {
            self.queue.add(PodGroupKey::Pod(NamespacedName::new(
                pod.metadata.namespace.clone().unwrap_or_default(),
                pod.metadata.name.clone().unwrap_or_default(),
            )));
        }
    }

    /// A ReplicaSet was added or changed (a Deployment's new revision, a scale, an
    /// annotation set after its pods were made).
    pub fn on_replica_set(&mut self, rs: &ReplicaSet) {
        self.queue
            .add(PodGroupKey::Workload(WorkloadKey::replica_set(rs)));
    }

    /// A StatefulSet was added or changed.
    pub fn on_stateful_set(&mut self, sts: &StatefulSet) {
        self.queue
            .add(PodGroupKey::Workload(WorkloadKey::stateful_set(sts)));
    }

    /// Entries in the work queue.
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// When the next retry is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        self.queue.next_ready_at()
    }

    /// Takes the next pod or workload and gives what needs one a PodGroup.
    pub fn next(&mut self, view: &ClusterView<'_>, now: Instant) -> Option<PodGroupWork> {
        loop {
            let key = self.queue.pop(now)?;
            let changes = match &key {
                PodGroupKey::Pod(pod) => view
                    .pod(&pod.namespace, &pod.name)
                    .filter(|p| self.needs_pod_group(p))
                    .map(|p| changes_for(p, view))
                    .filter(|c| !c.is_empty()),
                PodGroupKey::Workload(w) => {
                    Some(changes_for_workload(w, view, |p| self.is_ours(p)))
                        .filter(|c| !c.is_empty())
                }
            };
            match changes {
                Some(changes) => return Some(PodGroupWork { key, changes }),
                None => {
                    self.queue.forget(&key);
                    self.queue.done(&key);
                }
            }
        }
    }

    /// Reports how a turn's changes went; a failed turn is retried with backoff.
    pub fn finish(&mut self, key: &PodGroupKey, ok: bool, now: Instant) {
        if ok {
            self.queue.forget(key);
        } else {
            let _ = self.queue.retry(key.clone(), now);
        }
        self.queue.done(key);
    }
}

fn changes_for(pod: &Pod, view: &ClusterView<'_>) -> Vec<Change> {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let Some(name) = made_pod_group(pod) else {
        return Vec::new();
    };
    let mut changes = Vec::new();
    if view.pod_group(&ns, &name).is_none() {
        let owners = owner_annotations(pod, view);
        changes.push(Change::CreatePodGroup(Box::new(pod_group_for(
            pod, &name, &owners,
        ))));
    }
    changes.extend(name_in_pod(pod, name));
    changes
}

/// The patch that names PodGroup `name` in `pod`, unless the pod names it already (as one
/// named at admission does).
pub(crate) fn name_in_pod(pod: &Pod, name: String) -> Option<Change> {
    (annotation(pod, keys::GROUP_NAME) != Some(name.as_str())).then(|| {
        Change::PatchPodAnnotations {
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            annotations: BTreeMap::from([(keys::GROUP_NAME.to_string(), Some(name))]),
        }
    })
}
