//! A stand-in for kube-controller-manager's Deployment, ReplicaSet and StatefulSet
//! controllers, as far as a scenario needs them: when the embedded cluster starts, a
//! Deployment without a ReplicaSet gets one (carrying the Deployment's annotations, as the
//! Deployment controller copies them), and a ReplicaSet or StatefulSet with fewer pods than
//! replicas gets the rest from its template. Names and uids are derived from what is
//! created, so runs are reproducible. Only the start is covered: a workload scaled or
//! submitted later makes no pods.

use std::collections::BTreeMap;
use std::sync::Arc;

use volcano_api::Objects;
use volcano_api::k8s_openapi::api::apps::v1::{
    Deployment, ReplicaSet, ReplicaSetSpec, StatefulSetStatus,
};
use volcano_api::k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

/// The label the Deployment controller adds to tell its ReplicaSets' pods apart.
const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// The label a StatefulSet's pods carry: the revision they were made from.
const CONTROLLER_REVISION_HASH: &str = "controller-revision-hash";
/// The label naming a StatefulSet's pod, for its per-pod Service.
const STATEFUL_SET_POD_NAME: &str = "statefulset.kubernetes.io/pod-name";

/// The letters Kubernetes' generated name suffixes use (no vowels, no look-alikes).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn fnv(seed: &str) -> u64 {
    seed.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// `len` letters of Kubernetes' suffix alphabet, derived from `seed`.
fn suffix(seed: &str, len: usize) -> String {
    let base = ALPHABET.len() as u64;
    let mut h = fnv(seed);
    (0..len)
        .map(|_| {
            // One base-27 digit of the hash per letter; the remainder is below 27.
            let letter = ALPHABET[(h % base) as usize];
            h /= base;
            char::from(letter)
        })
        .collect()
}

fn key(kind: &str, meta: &ObjectMeta) -> String {
    format!(
        "{kind}/{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

/// Gives `meta` a uid derived from its kind and name if it has none.
fn ensure_uid(meta: &mut ObjectMeta, kind: &str) {
    if meta.uid.as_deref().unwrap_or_default().is_empty() {
        let seed = key(kind, meta);
        meta.uid = Some(format!("{:016x}-{}", fnv(&seed), suffix(&seed, 5)));
    }
}

fn controller_ref(kind: &str, meta: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: kind.into(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn owned_by(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

/// Makes what kube-controller-manager would have made of the workloads in `objects`.
pub fn start_workloads(objects: &mut Objects) {
    for d in &mut objects.deployments {
        ensure_uid(&mut d.metadata, "Deployment");
    }
    for rs in &mut objects.replica_sets {
        ensure_uid(&mut rs.metadata, "ReplicaSet");
    }
    for sts in &mut objects.stateful_sets {
        ensure_uid(&mut sts.metadata, "StatefulSet");
    }
    let new_sets: Vec<ReplicaSet> = objects
        .deployments
        .iter()
        .filter(|d| {
            let uid = d.metadata.uid.as_deref().unwrap_or_default();
            !objects
                .replica_sets
                .iter()
                .any(|rs| owned_by(&rs.metadata, uid))
        })
        .map(replica_set_of)
        .collect();
    objects.replica_sets.extend(new_sets);
    let mut pods = Vec::new();
    for rs in &objects.replica_sets {
        let spec = rs.spec.as_ref();
        let want = spec.and_then(|s| s.replicas).unwrap_or(1);
        let template = spec.and_then(|s| s.template.clone()).unwrap_or_default();
        let name = rs.metadata.name.clone().unwrap_or_default();
        let names = (0..).map(|i| format!("{name}-{}", suffix(&format!("{name}/{i}"), 5)));
        fill(
            objects,
            &mut pods,
            "ReplicaSet",
            &rs.metadata,
            want,
            &template,
            names,
            None,
        );
    }
    for sts in &mut objects.stateful_sets {
        // The revision its pods are labelled with, recorded as the one being rolled out.
        let name = sts.metadata.name.clone().unwrap_or_default();
        let status = sts.status.get_or_insert_with(StatefulSetStatus::default);
        status
            .update_revision
            .get_or_insert_with(|| format!("{name}-{}", suffix(&name, 10)));
    }
    for sts in &objects.stateful_sets {
        let name = sts.metadata.name.clone().unwrap_or_default();
        let revision = sts
            .status
            .as_ref()
            .and_then(|s| s.update_revision.clone())
            .unwrap_or_default();
        let spec = sts.spec.as_ref();
        let want = spec.and_then(|s| s.replicas).unwrap_or(1);
        let template = spec.map(|s| s.template.clone()).unwrap_or_default();
        let names = (0..).map(|i| format!("{name}-{i}"));
        let labels = (CONTROLLER_REVISION_HASH, revision);
        fill(
            objects,
            &mut pods,
            "StatefulSet",
            &sts.metadata,
            want,
            &template,
            names,
            Some(labels),
        );
    }
    objects.pods.extend(pods.into_iter().map(Arc::new));
}

/// Adds pods of `owner` from `template`, named by `names` (names taken are skipped), until it
/// owns `want`.
#[allow(clippy::too_many_arguments)]
fn fill(
    objects: &Objects,
    out: &mut Vec<Pod>,
    kind: &str,
    owner: &ObjectMeta,
    want: i32,
    template: &PodTemplateSpec,
    names: impl Iterator<Item = String>,
    revision: Option<(&str, String)>,
) {
    let uid = owner.uid.as_deref().unwrap_or_default();
    let ns = owner.namespace.clone();
    let have = objects
        .pods
        .iter()
        .filter(|p| owned_by(&p.metadata, uid))
        .count();
    let missing = usize::try_from(want).unwrap_or(0).saturating_sub(have);
    let taken = |name: &str| {
        objects
            .pods
            .iter()
            .map(|p| &**p)
            .chain(out.iter())
            .any(|p| p.metadata.namespace == ns && p.metadata.name.as_deref() == Some(name))
    };
    let mut made = Vec::new();
    for name in names {
        if made.len() == missing {
            break;
        }
        if taken(&name)
            || made
                .iter()
                .any(|p: &Pod| p.metadata.name.as_deref() == Some(&name))
        {
            continue;
        }
        let mut meta = template.metadata.clone().unwrap_or_default();
        let labels = meta.labels.get_or_insert_with(BTreeMap::new);
        if let Some((k, v)) = &revision {
            labels.insert((*k).to_string(), v.clone());
            labels.insert(STATEFUL_SET_POD_NAME.to_string(), name.clone());
        }
        meta.name = Some(name);
        meta.namespace = ns.clone();
        meta.owner_references = Some(vec![controller_ref(kind, owner)]);
        made.push(Pod {
            metadata: meta,
            spec: template.spec.clone(),
            status: None,
        });
    }
    out.extend(made);
}

/// The ReplicaSet the Deployment controller makes for a new Deployment: named and labelled
/// with a hash of the template, the Deployment's annotations copied (but kubectl's and the
/// Deployment controller's own), revision 1.
fn replica_set_of(d: &Deployment) -> ReplicaSet {
    let spec = d.spec.clone().unwrap_or_default();
    let name = d.metadata.name.clone().unwrap_or_default();
    let template_text = serde_json::to_string(&spec.template).unwrap_or_default();
    let hash = suffix(&format!("{name}/{template_text}"), 10);
    let mut template = spec.template.clone();
    let tmeta = template.metadata.get_or_insert_with(ObjectMeta::default);
    tmeta
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH.to_string(), hash.clone());
    let mut selector = spec.selector.clone();
    selector
        .match_labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH.to_string(), hash.clone());
    let mut annotations: BTreeMap<String, String> = d
        .metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| {
            k.as_str() != "kubectl.kubernetes.io/last-applied-configuration"
                && !k.starts_with("deployment.kubernetes.io/")
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    annotations.insert("deployment.kubernetes.io/revision".into(), "1".into());
    let mut meta = ObjectMeta {
        name: Some(format!("{name}-{hash}")),
        namespace: d.metadata.namespace.clone(),
        labels: tmeta.labels.clone(),
        annotations: Some(annotations),
        owner_references: Some(vec![controller_ref("Deployment", &d.metadata)]),
        ..Default::default()
    };
    ensure_uid(&mut meta, "ReplicaSet");
    ReplicaSet {
        metadata: meta,
        spec: Some(ReplicaSetSpec {
            replicas: Some(spec.replicas.unwrap_or(1)),
            selector,
            template: Some(template),
            ..Default::default()
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests;
