//! The PodGroup controller: a pod of ours that belongs to no PodGroup (a Deployment's, a
//! StatefulSet's, a bare pod) gets one of its own, so the scheduler can treat every pod as
//! part of a gang.

use std::collections::BTreeMap;

use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::keys;
use volcano_api::resources::{format_amount, pod_requests};
use volcano_api::scheduling::{PodGroup, PodGroupSpec, PodGroupStatus, phase};

use crate::change::Change;
use crate::time::Instant;
use crate::view::{ClusterView, owning_job, pod_annotation as annotation};
use crate::workqueue::{RetryPolicy, WorkQueue};
use volcano_api::NamespacedName;

/// The PodGroup controller.
pub struct PodGroupController {
    queue: WorkQueue<NamespacedName>,
    scheduler_names: Vec<String>,
}

/// One turn: the changes for one pod.
#[derive(Debug)]
pub struct PodGroupWork {
    /// The pod.
    pub pod: NamespacedName,
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
        }
    }

    /// Whether the pod is ours and has no PodGroup.
    pub fn needs_pod_group(&self, pod: &Pod) -> bool {
        let ours = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref())
            .is_some_and(|n| self.scheduler_names.iter().any(|s| s == n));
        ours && owning_job(pod).is_none()
            && annotation(pod, keys::GROUP_NAME).is_none_or(str::is_empty)
            && annotation(pod, keys::VOLCANO_GROUP_NAME).is_none_or(str::is_empty)
    }

    /// A pod was added or changed.
    pub fn on_pod(&mut self, pod: &Pod) {
        if self.needs_pod_group(pod) {
            self.queue.add(NamespacedName::new(
                pod.metadata.namespace.clone().unwrap_or_default(),
                pod.metadata.name.clone().unwrap_or_default(),
            ));
        }
    }

    /// Entries in the work queue.
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// When the next retry is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        self.queue.next_ready_at()
    }

    /// Takes the next pod and gives it a PodGroup.
    pub fn next(&mut self, view: &ClusterView<'_>, now: Instant) -> Option<PodGroupWork> {
        loop {
            let key = self.queue.pop(now)?;
            match view
                .pod(&key.namespace, &key.name)
                .filter(|p| self.needs_pod_group(p))
            {
                Some(pod) => {
                    return Some(PodGroupWork {
                        changes: changes_for(pod, view),
                        pod: key,
                    });
                }
                None => {
                    self.queue.forget(&key);
                    self.queue.done(&key);
                }
            }
        }
    }

    /// Reports how a turn's changes went; a failed turn is retried with backoff.
    pub fn finish(&mut self, pod: &NamespacedName, ok: bool, now: Instant) {
        if ok {
            self.queue.forget(pod);
        } else {
            let _ = self.queue.retry(pod.clone(), now);
        }
        self.queue.done(pod);
    }
}

/// The PodGroup a lone pod gets: `podgroup-<owner uid>` for pods of one controller (so a
/// Deployment's replicas share one), else `podgroup-<pod uid>`.
pub fn pod_group_name(pod: &Pod) -> String {
    let owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    let uid = match owner {
        Some(o) => o.uid.as_str(),
        None => pod.metadata.uid.as_deref().unwrap_or_default(),
    };
    if uid.is_empty() {
        format!(
            "podgroup-{}",
            pod.metadata.name.as_deref().unwrap_or_default()
        )
    } else {
        format!("podgroup-{uid}")
    }
}

fn changes_for(pod: &Pod, view: &ClusterView<'_>) -> Vec<Change> {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod_group_name(pod);
    let mut changes = Vec::new();
    if view.pod_group(&ns, &name).is_none() {
        changes.push(Change::CreatePodGroup(Box::new(pod_group_for(pod, &name))));
    }
    changes.push(Change::PatchPodAnnotations {
        namespace: ns,
        name: pod.metadata.name.clone().unwrap_or_default(),
        annotations: BTreeMap::from([(keys::GROUP_NAME.to_string(), Some(name))]),
    });
    changes
}

fn pod_group_for(pod: &Pod, name: &str) -> PodGroup {
    let spec = pod.spec.clone().unwrap_or_default();
    let min_resources = pod_requests(&spec)
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| {
            let q = Quantity(format_amount(&k, v));
            (k, q)
        })
        .collect();
    let pod_annotations = pod.metadata.annotations.clone().unwrap_or_default();
    let mut annotations = BTreeMap::new();
    for k in [
        keys::PREEMPTABLE,
        keys::COOLDOWN_TIME,
        keys::REVOCABLE_ZONE,
        keys::JDB_MIN_AVAILABLE,
        keys::JDB_MAX_UNAVAILABLE,
    ] {
        if let Some(v) = pod_annotations.get(k) {
            annotations.insert(k.to_string(), v.clone());
        }
    }
    let mut pg = PodGroup::new(
        name,
        PodGroupSpec {
            min_member: 1,
            min_task_member: BTreeMap::new(),
            queue: pod_annotations
                .get(keys::POD_QUEUE_NAME)
                .cloned()
                .unwrap_or_default(),
            priority_class_name: spec.priority_class_name.clone().unwrap_or_default(),
            min_resources: Some(min_resources),
            network_topology: None,
            sub_group_policy: None,
        },
    );
    pg.metadata.namespace = pod.metadata.namespace.clone();
    pg.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    // The pod's owners, without `blockOwnerDeletion`: setting it needs `update` on the owner's
    // finalizers (a ReplicaSet's, a StatefulSet's, any kind's) where the
    // OwnerReferencesPermissionEnforcement admission plugin is on, and a PodGroup has no reason
    // to hold up its owner's foreground deletion.
    let owners = pod.metadata.owner_references.as_ref().map(|refs| {
        refs.iter()
            .map(
                |r| volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    block_owner_deletion: None,
                    ..r.clone()
                },
            )
            .collect()
    });
    pg.metadata.owner_references = owners.or_else(|| {
        Some(vec![
            volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: pod.metadata.name.clone().unwrap_or_default(),
                uid: pod.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: None,
            },
        ])
    });
    pg.status = Some(PodGroupStatus {
        phase: phase::PENDING.to_string(),
        ..Default::default()
    });
    pg
}
