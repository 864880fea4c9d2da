//! Which PodGroup a pod of ours gets from this controller, and what its owners add to it. The
//! PodGroup itself is built as Volcano builds it ([`volcano_api::pod_group_of_pod`]).

use std::collections::BTreeMap;

use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::keys;
pub use volcano_api::pod_group_of_pod::{min_member, pod_group_for, pod_group_name};

use crate::view::{ClusterView, pod_annotation};

/// The PodGroup this controller makes for `pod`, if it makes one: the one named at the pod's
/// admission ([`keys::GROUP_NAMED_AT_ADMISSION`]), else [`pod_group_name`] for a pod that
/// names none. A pod that names a PodGroup itself (a Job's, a user's) gets none from us.
pub fn made_pod_group(pod: &Pod) -> Option<String> {
    let annotation = |key: &str| pod_annotation(pod, key).filter(|v| !v.is_empty());
    match annotation(keys::GROUP_NAME) {
        Some(name) if annotation(keys::GROUP_NAMED_AT_ADMISSION) == Some("true") => {
            Some(name.to_string())
        }
        Some(_) => None,
        None if annotation(keys::VOLCANO_GROUP_NAME).is_some() => None,
        None => Some(pod_group_name(pod)),
    }
}

/// The annotations of the workloads that own `pod` (ReplicaSets and StatefulSets, looked up by
/// name in the pod's namespace), the first owner listed winning a key both set. An owner
/// not found is skipped, as Volcano skips one it cannot get.
pub fn owner_annotations(pod: &Pod, view: &ClusterView<'_>) -> BTreeMap<String, String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let mut out = BTreeMap::new();
    for owner in pod.metadata.owner_references.iter().flatten() {
        let annotations = match owner.kind.as_str() {
            "ReplicaSet" => view
                .replica_set(ns, &owner.name)
                .and_then(|rs| rs.metadata.annotations.as_ref()),
            "StatefulSet" => view
                .stateful_set(ns, &owner.name)
                .and_then(|sts| sts.metadata.annotations.as_ref()),
            _ => None,
        };
        for (k, v) in annotations.into_iter().flatten() {
            out.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    out
}
