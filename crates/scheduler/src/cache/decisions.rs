//! Decisions back onto the objects.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use volcano_api::k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod, PodCondition,
};
use volcano_api::{NamespacedName, Objects};

use super::object_key;
use crate::model::gpu;
use crate::model::storage::{BIND_COMPLETED, BOUND_BY_CONTROLLER, SELECTED_NODE};

/// Applies a session's decisions to the objects as a cluster would: bound pods get their node,
/// evicted pods are removed, waiting pods get their `PodScheduled=False` condition, PodGroup
/// status and Queue `allocated` are written. The inverse
/// step of [`build_snapshot`](super::build_snapshot), for whoever keeps the objects (the CLI driver, tests).
pub fn apply_decisions(objs: &mut Objects, d: &crate::framework::Decisions) {
    let binds: HashMap<&NamespacedName, &str> =
        d.binds.iter().map(|(p, n)| (p, n.as_str())).collect();
    let evicted: BTreeSet<&NamespacedName> = d.evictions.iter().collect();
    for p in &mut objs.pods {
        if let Some(node) = binds.get(&object_key(&p.metadata)) {
            bind_pod(Arc::make_mut(p), node);
        }
    }
    let nominated: HashMap<&NamespacedName, &str> =
        d.nominated.iter().map(|(p, n)| (p, n.as_str())).collect();
    for p in &mut objs.pods {
        if let Some(node) = nominated.get(&object_key(&p.metadata)) {
            nominate_pod(Arc::make_mut(p), node);
        }
    }
    let conditions: HashMap<&NamespacedName, &crate::framework::PodUnschedulable> =
        d.pod_conditions.iter().map(|c| (&c.key, c)).collect();
    if !conditions.is_empty() {
        for p in &mut objs.pods {
            if let Some(c) = conditions.get(&object_key(&p.metadata)) {
                set_pod_scheduled(Arc::make_mut(p), c);
            }
        }
    }
    let devices: HashMap<&NamespacedName, &str> =
        d.gpu_devices.iter().map(|(p, v)| (p, v.as_str())).collect();
    if !devices.is_empty() {
        for p in &mut objs.pods {
            if let Some(v) = devices.get(&object_key(&p.metadata)) {
                set_gpu_devices(Arc::make_mut(p), v);
            }
        }
    }
    apply_volume_bindings(objs, d);
    objs.pods
        .retain(|p| !evicted.contains(&object_key(&p.metadata)));
    let statuses: HashMap<&NamespacedName, _> =
        d.pod_groups.iter().map(|u| (&u.key, &u.status)).collect();
    for pg in &mut objs.pod_groups {
        if let Some(status) = statuses.get(&object_key(&pg.metadata)) {
            pg.status = Some((*status).clone());
        }
    }
    let allocated: HashMap<&str, _> = d
        .queues
        .iter()
        .map(|q| (q.name.as_str(), &q.allocated))
        .collect();
    for q in &mut objs.queues {
        if let Some(a) = q.metadata.name.as_deref().and_then(|n| allocated.get(n)) {
            q.status.get_or_insert_with(Default::default).allocated = Some((*a).clone());
        }
    }
}

/// Writes the session's claim bindings: a chosen volume and its claim bound to each other, a
/// claim to provision annotated with its node.
fn apply_volume_bindings(objs: &mut Objects, d: &crate::framework::Decisions) {
    if d.volume_bindings.is_empty() {
        return;
    }
    let mut uids: HashMap<NamespacedName, Option<String>> = HashMap::new();
    for pvc in &mut objs.persistent_volume_claims {
        let key = object_key(&pvc.metadata);
        let Some(b) = d.volume_bindings.get(&key) else {
            continue;
        };
        match &b.volume {
            Some(v) => bind_claim(pvc, v),
            None => select_node(pvc, &b.node),
        }
        uids.insert(key, pvc.metadata.uid.clone());
    }
    let chosen: HashMap<&str, &NamespacedName> = d
        .volume_bindings
        .iter()
        .filter_map(|(c, b)| Some((b.volume.as_deref()?, c)))
        .collect();
    for pv in &mut objs.persistent_volumes {
        let Some(claim) = pv.metadata.name.as_deref().and_then(|n| chosen.get(n)) else {
            continue;
        };
        let uid = uids.get(*claim).cloned().flatten();
        bind_volume_to_claim(pv, claim, uid);
    }
}

/// Points `pv`'s `claimRef` at `claim` (kube-scheduler's own write when it binds a claim at
/// scheduling), with the annotation saying a controller did it and the phase the PV
/// controller then sets.
pub fn bind_volume_to_claim(
    pv: &mut PersistentVolume,
    claim: &NamespacedName,
    uid: Option<String>,
) {
    pv.spec.get_or_insert_with(Default::default).claim_ref = Some(ObjectReference {
        api_version: Some("v1".to_string()),
        kind: Some("PersistentVolumeClaim".to_string()),
        namespace: Some(claim.namespace.clone()),
        name: Some(claim.name.clone()),
        uid,
        ..Default::default()
    });
    pv.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(BOUND_BY_CONTROLLER.to_string(), "yes".to_string());
    pv.status.get_or_insert_with(Default::default).phase = Some("Bound".to_string());
}

/// Completes `pvc`'s binding to volume `volume`, as the PV controller does once the volume's
/// `claimRef` names the claim: `spec.volumeName`, the `bind-completed` and
/// `bound-by-controller` annotations, phase `Bound`.
pub fn bind_claim(pvc: &mut PersistentVolumeClaim, volume: &str) {
    pvc.spec.get_or_insert_with(Default::default).volume_name = Some(volume.to_string());
    let a = pvc
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    a.insert(BIND_COMPLETED.to_string(), "yes".to_string());
    a.insert(BOUND_BY_CONTROLLER.to_string(), "yes".to_string());
    pvc.status.get_or_insert_with(Default::default).phase = Some("Bound".to_string());
}

/// Asks the claim's provisioner for a volume reachable from `node`, as kube-scheduler does.
pub fn select_node(pvc: &mut PersistentVolumeClaim, node: &str) {
    pvc.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(SELECTED_NODE.to_string(), node.to_string());
}

/// Binds a pod to `node`, as the API server's binding does: the pod is scheduled now.
pub fn bind_pod(pod: &mut Pod, node: &str) {
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    spec.node_name = Some(node.to_string());
    replace_pod_scheduled(
        pod,
        PodCondition {
            status: "True".to_string(),
            ..Default::default()
        },
    );
}

/// Writes the node a preemptor's evictions freed as the pod's `status.nominatedNodeName`.
pub fn nominate_pod(pod: &mut Pod, node: &str) {
    pod.status
        .get_or_insert_with(Default::default)
        .nominated_node_name = Some(node.to_string());
}

/// Writes the GPU devices a pod holds on it, as Volcano's annotation.
pub fn set_gpu_devices(pod: &mut Pod, devices: &str) {
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(gpu::POD_VGPU_IDS.to_string(), devices.to_string());
}

/// Sets a waiting pod's `PodScheduled` condition, as the pods/status patch does in a cluster:
/// the condition of that type is replaced, the others are kept.
pub fn set_pod_scheduled(pod: &mut Pod, c: &crate::framework::PodUnschedulable) {
    replace_pod_scheduled(
        pod,
        PodCondition {
            status: "False".to_string(),
            reason: Some(c.reason.clone()),
            message: Some(c.message.clone()),
            ..Default::default()
        },
    );
}

/// Puts `condition` in as the pod's one `PodScheduled` condition, keeping the others.
fn replace_pod_scheduled(pod: &mut Pod, condition: PodCondition) {
    let conds = pod
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new);
    conds.retain(|x| x.type_ != crate::framework::POD_SCHEDULED);
    conds.push(PodCondition {
        type_: crate::framework::POD_SCHEDULED.to_string(),
        ..condition
    });
}
