//! The PodGroup Volcano's PodGroup controller builds for a pod of its scheduler that names none
//! (`buildPodGroupFromPod`): its gang size from the annotations of the workload that owns the
//! pod, everything else from the pod. The controller-manager creates it; the scheduler keeps
//! one in memory for a bare pod (no controller owner) when no PodGroup object is made for it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::keys;
use crate::resources::{format_amount, pod_requests};
use crate::scheduling::{NetworkTopologySpec, PodGroup, PodGroupSpec, PodGroupStatus, phase};
use crate::workload::parse_group_min_member;

/// Volcano's `AnnotationPrefix`: the owner annotations a PodGroup inherits start with it.
/// (`scheduling.volcano.sh/...` keys do not: they are read, not copied.)
const INHERITED_PREFIX: &str = "volcano.sh/";

/// The PodGroup a lone pod gets: `podgroup-<owner uid>` for pods of one controller (so a
/// ReplicaSet's or StatefulSet's replicas share one), else `podgroup-<pod uid>`.
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

/// The gang size the owners' `scheduling.volcano.sh/group-min-member` asks for; 1 without
/// one. A value that is no number, or is negative, leaves it at 1 with a warning, as Volcano
/// does (it logs and goes on rather than leave the pods without a PodGroup).
pub fn min_member(owner_annotations: &BTreeMap<String, String>, pod: &Pod) -> i32 {
    let Some(value) = owner_annotations.get(keys::GROUP_MIN_MEMBER) else {
        return 1;
    };
    match parse_group_min_member(value) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(
                pod = pod.metadata.name.as_deref().unwrap_or_default(),
                namespace = pod.metadata.namespace.as_deref().unwrap_or_default(),
                error = %e,
                "the owner's gang size is not usable; minMember stays 1"
            );
            1
        }
    }
}

/// The PodGroup `name` for `pod`, given its owners' annotations.
pub fn pod_group_for(pod: &Pod, name: &str, owners: &BTreeMap<String, String>) -> PodGroup {
    let default_spec = Default::default();
    let spec = pod.spec.as_ref().unwrap_or(&default_spec);
    let min_member = min_member(owners, pod);
    // Volcano's minResources is one pod's usage times the gang size: what the gang needs to
    // start, checked when it is enqueued.
    let times = i64::from(min_member.max(0));
    let min_resources = pod_requests(spec)
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| {
            let q = Quantity(format_amount(&k, v.saturating_mul(times)));
            (k, q)
        })
        .collect();
    let pod_annotations = pod.metadata.annotations.clone().unwrap_or_default();
    let pod_labels = pod.metadata.labels.clone().unwrap_or_default();
    let mut annotations: BTreeMap<String, String> = owners
        .iter()
        .filter(|(k, _)| k.starts_with(INHERITED_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // The pod's own annotations win over the inherited ones.
    for k in [keys::PREEMPTABLE, keys::COOLDOWN_TIME, keys::REVOCABLE_ZONE] {
        if let Some(v) = pod_annotations.get(k) {
            annotations.insert(k.to_string(), v.clone());
        }
    }
    // One disruption budget: minAvailable when the pod sets it, else maxUnavailable.
    if let Some(v) = pod_annotations.get(keys::JDB_MIN_AVAILABLE) {
        annotations.insert(keys::JDB_MIN_AVAILABLE.to_string(), v.clone());
    } else if let Some(v) = pod_annotations.get(keys::JDB_MAX_UNAVAILABLE) {
        annotations.insert(keys::JDB_MAX_UNAVAILABLE.to_string(), v.clone());
    }
    let labels: BTreeMap<String, String> = [keys::PREEMPTABLE, keys::COOLDOWN_TIME]
        .into_iter()
        .filter_map(|k| pod_labels.get(k).map(|v| (k.to_string(), v.clone())))
        .collect();
    let mut pg = PodGroup::new(
        name,
        PodGroupSpec {
            min_member,
            min_task_member: BTreeMap::new(),
            queue: pod_annotations
                .get(keys::POD_QUEUE_NAME)
                .cloned()
                .unwrap_or_default(),
            priority_class_name: spec.priority_class_name.clone().unwrap_or_default(),
            min_resources: Some(min_resources),
            network_topology: network_topology(pod),
            sub_group_policy: None,
        },
    );
    pg.metadata.namespace = pod.metadata.namespace.clone();
    pg.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    pg.metadata.labels = (!labels.is_empty()).then_some(labels);
    pg.metadata.owner_references = Some(owner_references(pod));
    pg.status = Some(PodGroupStatus {
        phase: phase::PENDING.to_string(),
        ..Default::default()
    });
    pg
}

/// The network topology the pod's annotations ask of its PodGroup, as Volcano reads them: `hard`
/// unless the mode says `soft` (any case; another word is warned about and taken as `hard`),
/// with the highest tier when it is a whole number (otherwise warned about and left unset).
/// The scheduler does not place by network topology yet (no HyperNodes): the PodGroup carries
/// it for when it does, as Volcano's does.
pub fn network_topology(pod: &Pod) -> Option<NetworkTopologySpec> {
    let annotations = pod.metadata.annotations.as_ref()?;
    let mode = annotations.get(keys::NETWORK_TOPOLOGY_MODE);
    let tier = annotations.get(keys::NETWORK_TOPOLOGY_HIGHEST_TIER);
    if mode.is_none() && tier.is_none() {
        return None;
    }
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let mode = match mode.map(|m| m.to_lowercase()) {
        Some(m) if m == "soft" => "soft".to_string(),
        Some(m) if m != "hard" => {
            tracing::warn!(pod = pod_name, mode = %m, "unknown network-topology mode; using hard");
            "hard".to_string()
        }
        _ => "hard".to_string(),
    };
    let highest_tier_allowed = tier.and_then(|t| match t.trim().parse::<i64>() {
        Ok(n) => Some(n),
        Err(e) => {
            tracing::warn!(pod = pod_name, tier = %t, error = %e, "network-topology highest tier is not a number; left unset");
            None
        }
    });
    Some(NetworkTopologySpec {
        mode,
        highest_tier_allowed,
        ..NetworkTopologySpec::default()
    })
}

/// The pod's owners when one of them is its controller, else the pod itself. Without
/// `blockOwnerDeletion`: setting it needs `update` on the owner's finalizers (a ReplicaSet's,
/// a StatefulSet's, any kind's) where the OwnerReferencesPermissionEnforcement admission
/// plugin is on, and a PodGroup has no reason to hold up its owner's foreground deletion.
fn owner_references(pod: &Pod) -> Vec<OwnerReference> {
    let refs = pod.metadata.owner_references.as_deref().unwrap_or_default();
    if refs.iter().any(|r| r.controller == Some(true)) {
        return refs
            .iter()
            .map(|r| OwnerReference {
                block_owner_deletion: None,
                ..r.clone()
            })
            .collect();
    }
    vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: None,
    }]
}

/// Whether `pod` is bare: it names no PodGroup and no controller owns it (a workload's
/// replicas share their owner's PodGroup). Whose scheduler it names is not looked at.
pub fn is_bare_pod(pod: &Pod) -> bool {
    !names_pod_group(pod) && !has_controlling_owner(pod)
}

/// Whether `pod` has a controlling owner (a ReplicaSet's, a StatefulSet's, a Job's pod).
pub fn has_controlling_owner(pod: &Pod) -> bool {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true))
}

/// Whether `pod` names its PodGroup (under either annotation Volcano reads).
pub fn names_pod_group(pod: &Pod) -> bool {
    pod.metadata.annotations.as_ref().is_some_and(|a| {
        [keys::GROUP_NAME, keys::VOLCANO_GROUP_NAME]
            .iter()
            .any(|k| a.get(*k).is_some_and(|v| !v.is_empty()))
    })
}
