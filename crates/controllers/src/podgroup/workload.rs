//! A ReplicaSet or StatefulSet seen added or changed, as Volcano's PodGroup controller takes it
//! (`addReplicaSet`, `addStatefulSet`): scaled to zero, its PodGroup goes; otherwise the first
//! of its pods that is ours and has no PodGroup yet gets the workload's PodGroup, created or
//! brought up to date with the workload's annotations (a pod that arrived before the
//! annotation did, say).

use std::collections::BTreeMap;

use volcano_api::NamespacedName;
use volcano_api::k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::build::{made_pod_group, owner_annotations, pod_group_for};
use crate::change::Change;
use crate::view::ClusterView;

/// The label a StatefulSet's controller puts on each pod: the revision it was made from.
const CONTROLLER_REVISION_HASH: &str = "controller-revision-hash";

/// A workload kind whose pods share one PodGroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkloadKind {
    /// `apps/v1` ReplicaSet (a Deployment's pods come through one).
    ReplicaSet,
    /// `apps/v1` StatefulSet.
    StatefulSet,
}

/// A ReplicaSet or StatefulSet by kind, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkloadKey {
    /// The kind.
    pub kind: WorkloadKind,
    /// Namespace and name.
    pub key: NamespacedName,
}

impl WorkloadKey {
    /// The key of a ReplicaSet.
    pub fn replica_set(rs: &ReplicaSet) -> Self {
        Self::of(WorkloadKind::ReplicaSet, &rs.metadata)
    }

    /// The key of a StatefulSet.
    pub fn stateful_set(sts: &StatefulSet) -> Self {
        Self::of(WorkloadKind::StatefulSet, &sts.metadata)
    }

    fn of(kind: WorkloadKind, meta: &ObjectMeta) -> Self {
        WorkloadKey {
            kind,
            key: NamespacedName::new(
                meta.namespace.clone().unwrap_or_default(),
                meta.name.clone().unwrap_or_default(),
            ),
        }
    }
}

/// What a workload, as it is now, asks of the PodGroup controller. `None`: it is gone.
struct Shape<'a> {
    meta: &'a ObjectMeta,
    replicas: i32,
    /// The labels its pods carry, as Volcano selects them: the selector's `matchLabels` only.
    pod_labels: BTreeMap<String, String>,
}

fn shape<'a>(w: &WorkloadKey, view: &ClusterView<'a>) -> Option<Shape<'a>> {
    let (ns, name) = (w.key.namespace.as_str(), w.key.name.as_str());
    match w.kind {
        WorkloadKind::ReplicaSet => {
            let rs = view.replica_set(ns, name)?;
            let spec = rs.spec.as_ref();
            Some(Shape {
                meta: &rs.metadata,
                // The API server defaults an absent count to 1.
                replicas: spec.and_then(|s| s.replicas).unwrap_or(1),
                pod_labels: spec
                    .and_then(|s| s.selector.match_labels.clone())
                    .unwrap_or_default(),
            })
        }
        WorkloadKind::StatefulSet => {
            let sts = view.stateful_set(ns, name)?;
            let spec = sts.spec.as_ref();
            let mut pod_labels = spec
                .and_then(|s| s.selector.match_labels.clone())
                .unwrap_or_default();
            // Only pods of the revision being rolled out: a template change shows in them.
            let revision = sts
                .status
                .as_ref()
                .and_then(|s| s.update_revision.clone())
                .unwrap_or_default();
            pod_labels.insert(CONTROLLER_REVISION_HASH.to_string(), revision);
            Some(Shape {
                meta: &sts.metadata,
                replicas: spec.and_then(|s| s.replicas).unwrap_or(1),
                pod_labels,
            })
        }
    }
}

fn has_labels(pod: &Pod, wanted: &BTreeMap<String, String>) -> bool {
    let labels = pod.metadata.labels.as_ref();
    wanted
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// The changes a workload's turn makes.
pub(super) fn changes_for_workload(
    w: &WorkloadKey,
    view: &ClusterView<'_>,
    ours: impl Fn(&Pod) -> bool,
) -> Vec<Change> {
    let Some(shape) = shape(w, view) else {
        return Vec::new();
    };
    let ns = w.key.namespace.as_str();
    if shape.replicas == 0 {
        let name = format!("podgroup-{}", shape.meta.uid.as_deref().unwrap_or_default());
        return match view.pod_group(ns, &name) {
            Some(_) => vec![Change::DeletePodGroup {
                namespace: ns.to_string(),
                name,
            }],
            None => Vec::new(),
        };
    }
    let first =
        view.objects().pods.iter().find(|p| {
            p.metadata.namespace.as_deref() == Some(ns) && has_labels(p, &shape.pod_labels)
        });
    let Some(pod) = first else {
        return Vec::new();
    };
    // A pod already in a PodGroup keeps it: LeaderWorkerSet, for one, makes its own.
    let Some(name) = made_pod_group(pod).filter(|_| ours(pod)) else {
        return Vec::new();
    };
    create_or_update(pod, name, view)
}

/// Volcano's `createOrUpdateNormalPodPG`: the pod's PodGroup is created, or its spec replaced
/// when the owners' annotations now ask for another; then the pod is put in it.
fn create_or_update(pod: &Pod, name: String, view: &ClusterView<'_>) -> Vec<Change> {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let wanted = pod_group_for(pod, &name, &owner_annotations(pod, view));
    let mut changes = Vec::new();
    match view.pod_group(&ns, &name) {
        None => changes.push(Change::CreatePodGroup(Box::new(wanted))),
        Some(pg) if pg.spec != wanted.spec => changes.push(Change::UpdatePodGroupSpec {
            namespace: ns.clone(),
            name: name.clone(),
            spec: Box::new(wanted.spec),
        }),
        Some(_) => {}
    }
    changes.extend(super::name_in_pod(pod, name));
    changes
}
