//! What one pod's volumes are, read once per task from the storage catalog: kube-scheduler's
//! PreFilter verdicts, the bound volumes, the claims still to bind with their candidate
//! volumes, and the volumes a node has to attach.

use volcano_api::NamespacedName;
use volcano_api::k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};

use super::Enabled;
use crate::fit::FitReason;
use crate::model::storage::{
    self, SELECTED_NODE, StorageCatalog, WAIT_FOR_FIRST_CONSUMER, bound_volume, claim_class,
    claim_request, volume_bound_to, volume_capacity,
};
use crate::plugins::label_selector::selector_matches;

/// VolumeBinding's PreFilter reason for a claim whose class binds at once but is not bound.
pub(super) const UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// A claim with `WaitForFirstConsumer` binding that is not bound yet.
#[derive(Debug, Clone)]
pub(super) struct UnboundClaim {
    /// The claim.
    pub key: NamespacedName,
    /// Storage asked, in bytes.
    pub request: i64,
    /// Its class.
    pub class: String,
    /// The node a provisioner was already asked to provision for.
    pub selected_node: Option<String>,
    /// A volume whose `claimRef` already names this claim: the only one it may take.
    pub prebound: Option<String>,
    /// The volumes that match it whatever the node (size, modes, class, selector, free), the
    /// smallest first, ties by name: kube's binder takes the smallest that fits the node.
    pub candidates: Vec<String>,
}

/// One pod's volumes.
#[derive(Debug, Clone, Default)]
pub(super) struct PodVolumes {
    /// The task-level verdict (kube-scheduler's PreFilter).
    pub pre: Option<FitReason>,
    /// Names of the volumes its bound claims hold (VolumeBinding's node affinity check).
    pub bound: Vec<String>,
    /// Names of the volumes its claims name in `spec.volumeName`, bound or not (VolumeZone).
    pub named: Vec<String>,
    /// Its claims still to bind, the smallest request first (the binder's order).
    pub unbound: Vec<UnboundClaim>,
    /// `(driver, unique volume name)` of each volume a node attaches for it (NodeVolumeLimits).
    pub attachable: Vec<(String, String)>,
}

/// The names of the claims `pod` uses: `persistentVolumeClaim` volumes by their claim name,
/// generic ephemeral volumes by the name their controller gives the claim, `<pod>-<volume>`.
pub(super) fn claim_names(pod: &Pod) -> impl Iterator<Item = String> + '_ {
    let pod_name = pod.metadata.name.as_deref().unwrap_or("");
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .filter_map(move |v| {
            if let Some(c) = &v.persistent_volume_claim {
                Some(c.claim_name.clone())
            } else {
                v.ephemeral
                    .as_ref()
                    .map(|_| format!("{pod_name}-{}", v.name))
            }
        })
}

/// Whether `pod` uses any claim.
pub(super) fn uses_claims(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .is_some_and(|vs| {
            vs.iter()
                .any(|v| v.persistent_volume_claim.is_some() || v.ephemeral.is_some())
        })
}

fn not_found(kind: &str, name: &str) -> FitReason {
    FitReason::unresolvable(format!("{kind} \"{name}\" not found"))
}

/// Reads `pod`'s volumes from `cat`, with the PreFilter verdicts of the enabled filters.
pub(super) fn pod_volumes(cat: &StorageCatalog, pod: &Pod, on: Enabled) -> PodVolumes {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let mut out = PodVolumes::default();
    let mut immediate = false;
    for name in claim_names(pod) {
        let Some(pvc) = cat.claim(ns, &name) else {
            out.pre
                .get_or_insert_with(|| not_found("persistentvolumeclaim", &name));
            continue;
        };
        if let Some(err) = claim_error(pod, pvc, &name) {
            out.pre.get_or_insert(err);
            continue;
        }
        if on.limits
            && let Some(a) = attachable(cat, pvc, ns, &name)
        {
            out.attachable.push(a);
        }
        let volume_name = pvc
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.as_deref())
            .filter(|n| !n.is_empty());
        if let Some(v) = volume_name {
            out.named.push(v.to_string());
        } else if on.zone && !on.binding {
            // VolumeZone's own PreFilter, which only matters when VolumeBinding's is off.
            if let Some(err) = zone_unbound_error(cat, pvc) {
                out.pre.get_or_insert(err);
            }
        }
        if let Some(v) = bound_volume(pvc) {
            out.bound.push(v.to_string());
            continue;
        }
        let class = claim_class(pvc);
        let delayed = cat
            .class(class)
            .is_some_and(|c| c.volume_binding_mode.as_deref() == Some(WAIT_FOR_FIRST_CONSUMER));
        // A claim pre-bound by `spec.volumeName` waits for the PV controller like an
        // immediate one, as kube's binder treats it.
        if !delayed || volume_name.is_some() {
            immediate = true;
            continue;
        }
        out.unbound.push(unbound_claim(cat, pvc, ns, &name, class));
    }
    if on.binding && immediate {
        out.pre
            .get_or_insert_with(|| FitReason::unresolvable(UNBOUND_IMMEDIATE));
    }
    if on.zone && !on.binding {
        for v in &out.named {
            if cat.volume(v).is_none() {
                out.pre
                    .get_or_insert_with(|| not_found("persistentvolume", v));
            }
        }
    }
    out.unbound.sort_by_key(|c| c.request);
    out.attachable.sort();
    out.attachable.dedup();
    out
}

/// Why a claim the pod names cannot serve it whatever the node.
fn claim_error(pod: &Pod, pvc: &PersistentVolumeClaim, name: &str) -> Option<FitReason> {
    if pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Lost") {
        let volume = pvc
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.as_deref())
            .unwrap_or("");
        return Some(FitReason::unresolvable(format!(
            "persistentvolumeclaim \"{name}\" bound to non-existent persistentvolume \"{volume}\""
        )));
    }
    if pvc.metadata.deletion_timestamp.is_some() {
        return Some(FitReason::unresolvable(format!(
            "persistentvolumeclaim \"{name}\" is being deleted"
        )));
    }
    // A generic ephemeral volume's claim must be the pod's own. Without any controller
    // reference (a scenario that wrote the claim by hand) it is taken as the pod's.
    let is_ephemeral = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .any(|v| {
            v.ephemeral.is_some()
                && format!("{}-{}", pod.metadata.name.as_deref().unwrap_or(""), v.name) == name
        });
    let controller = pvc
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    if is_ephemeral
        && let Some(o) = controller
        && Some(o.uid.as_str()) != pod.metadata.uid.as_deref()
    {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let pod_name = pod.metadata.name.as_deref().unwrap_or("");
        return Some(FitReason::unresolvable(format!(
            "PVC {ns}/{name} was not created for pod {ns}/{pod_name} (pod is not owner)"
        )));
    }
    None
}

/// VolumeZone's PreFilter verdict on a claim with no volume named.
fn zone_unbound_error(cat: &StorageCatalog, pvc: &PersistentVolumeClaim) -> Option<FitReason> {
    let class = claim_class(pvc);
    if class.is_empty() {
        return Some(FitReason::unresolvable(
            "PersistentVolumeClaim had no pv name and storageClass name",
        ));
    }
    let Some(sc) = cat.class(class) else {
        return Some(not_found("storageclass.storage.k8s.io", class));
    };
    match sc.volume_binding_mode.as_deref() {
        Some(WAIT_FOR_FIRST_CONSUMER) => None,
        // The API server defaults the mode; a class without one is only in a scenario.
        None => Some(FitReason::unresolvable(format!(
            "VolumeBindingMode not set for StorageClass \"{class}\""
        ))),
        Some(_) => Some(FitReason::unresolvable("PersistentVolume had no name")),
    }
}

/// The CSI volume a node attaches for `pvc`, as NodeVolumeLimits names it: the bound PV's
/// driver and handle, or for a claim still to bind its class's provisioner and a handle of
/// the claim's own (counted once per claim).
fn attachable(
    cat: &StorageCatalog,
    pvc: &PersistentVolumeClaim,
    ns: &str,
    name: &str,
) -> Option<(String, String)> {
    let pv = pvc
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .filter(|n| !n.is_empty())
        .and_then(|v| cat.volume(v));
    if let Some(pv) = pv {
        // In-tree volumes migrated to CSI are not translated: only CSI volumes count.
        let csi = pv.spec.as_ref()?.csi.as_ref()?;
        return Some((
            csi.driver.clone(),
            format!("{}/{}", csi.driver, csi.volume_handle),
        ));
    }
    let class = claim_class(pvc);
    if class.is_empty() {
        return None;
    }
    let provisioner = &cat.class(class)?.provisioner;
    Some((
        provisioner.clone(),
        format!("{provisioner}/unbound-claim:{ns}/{name}"),
    ))
}

fn unbound_claim(
    cat: &StorageCatalog,
    pvc: &PersistentVolumeClaim,
    ns: &str,
    name: &str,
    class: &str,
) -> UnboundClaim {
    let request = claim_request(pvc);
    let prebound = cat
        .volumes_of_class(class)
        .find(|pv| volume_bound_to(pv, pvc) && fits_statically(pv, pvc, request, true))
        .and_then(|pv| pv.metadata.name.clone());
    let mut candidates: Vec<(i64, &str)> = cat
        .volumes_of_class(class)
        .filter(|pv| fits_statically(pv, pvc, request, false))
        .filter_map(|pv| Some((volume_capacity(pv), pv.metadata.name.as_deref()?)))
        .collect();
    candidates.sort();
    UnboundClaim {
        key: NamespacedName::new(ns, name),
        request,
        class: class.to_string(),
        selected_node: pvc
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SELECTED_NODE))
            .cloned(),
        prebound,
        candidates: candidates.into_iter().map(|(_, n)| n.to_string()).collect(),
    }
}

/// Whether `pv` could serve `pvc` on some node, as kube's `FindMatchingVolume` checks it
/// before node affinity: large enough, same volume mode and attributes class, not being
/// deleted; then, unless it is already pre-bound to the claim, free (no `claimRef`, phase
/// `Available`; a PV without status counts as available, as no PV controller runs in the
/// simulator), selected by the claim's selector, of its class, and offering every access
/// mode the claim asks.
fn fits_statically(
    pv: &PersistentVolume,
    pvc: &PersistentVolumeClaim,
    request: i64,
    prebound: bool,
) -> bool {
    let (Some(spec), Some(claim)) = (pv.spec.as_ref(), pvc.spec.as_ref()) else {
        return false;
    };
    if volume_capacity(pv) < request
        || spec.volume_mode.as_deref().unwrap_or("Filesystem")
            != claim.volume_mode.as_deref().unwrap_or("Filesystem")
        || spec.volume_attributes_class_name != claim.volume_attributes_class_name
        || pv.metadata.deletion_timestamp.is_some()
    {
        return false;
    }
    if prebound {
        return true;
    }
    if spec.claim_ref.is_some() {
        return false;
    }
    let phase = pv.status.as_ref().and_then(|s| s.phase.as_deref());
    if phase.is_some_and(|p| p != "Available") {
        return false;
    }
    if let Some(sel) = &claim.selector
        && !selector_matches(sel, pv.metadata.labels.as_ref())
    {
        return false;
    }
    if storage::volume_class(pv) != claim_class(pvc) {
        return false;
    }
    let modes = spec.access_modes.as_deref().unwrap_or(&[]);
    claim
        .access_modes
        .iter()
        .flatten()
        .all(|m| modes.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use volcano_api::Objects;
    use volcano_api::k8s_openapi::api::core::v1::{
        PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, PersistentVolumeSpec,
        PodSpec, Volume, VolumeResourceRequirements,
    };
    use volcano_api::k8s_openapi::api::storage::v1::StorageClass;
    use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    const ALL: Enabled = Enabled {
        limits: true,
        binding: true,
        zone: true,
    };

    fn size(s: &str) -> BTreeMap<String, Quantity> {
        [("storage".to_string(), Quantity(s.to_string()))].into()
    }

    fn pod(claim: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                volumes: Some(vec![Volume {
                    name: "v".into(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: claim.into(),
                        read_only: None,
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            status: None,
        }
    }

    fn claim(class: &str, request: &str) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some("data".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                storage_class_name: Some(class.into()),
                access_modes: Some(vec!["ReadWriteOnce".into()]),
                resources: Some(VolumeResourceRequirements {
                    requests: Some(size(request)),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: None,
        }
    }

    fn pv(name: &str, class: &str, capacity: &str, modes: &[&str]) -> PersistentVolume {
        PersistentVolume {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(PersistentVolumeSpec {
                storage_class_name: Some(class.into()),
                capacity: Some(size(capacity)),
                access_modes: Some(modes.iter().map(|m| m.to_string()).collect()),
                ..Default::default()
            }),
            status: None,
        }
    }

    fn class(name: &str, mode: &str) -> StorageClass {
        StorageClass {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            provisioner: NO_PROVISIONER_FOR_TESTS.into(),
            volume_binding_mode: Some(mode.into()),
            ..Default::default()
        }
    }

    const NO_PROVISIONER_FOR_TESTS: &str = "kubernetes.io/no-provisioner";

    #[test]
    fn a_missing_claim_is_named_as_the_api_server_names_it() {
        let cat = StorageCatalog::of(&Objects::default());
        let v = pod_volumes(&cat, &pod("data"), ALL);
        assert_eq!(
            v.pre.map(|e| (e.reason, e.unresolvable)),
            Some(("persistentvolumeclaim \"data\" not found".into(), true))
        );
    }

    #[test]
    fn an_unbound_claim_of_an_immediate_class_waits_for_the_pv_controller() {
        let cat = StorageCatalog::of(&Objects {
            persistent_volume_claims: vec![claim("fast", "1Gi")],
            storage_classes: vec![class("fast", "Immediate")],
            ..Default::default()
        });
        let v = pod_volumes(&cat, &pod("data"), ALL);
        assert_eq!(v.pre.map(|e| e.reason).as_deref(), Some(UNBOUND_IMMEDIATE));
    }

    #[test]
    fn candidates_are_the_large_enough_free_volumes_of_the_class_smallest_first() {
        let cat = StorageCatalog::of(&Objects {
            persistent_volume_claims: vec![claim("local", "5Gi")],
            storage_classes: vec![class("local", WAIT_FOR_FIRST_CONSUMER)],
            persistent_volumes: vec![
                pv("big", "local", "50Gi", &["ReadWriteOnce"]),
                pv("small", "local", "10Gi", &["ReadWriteOnce", "ReadOnlyMany"]),
                pv("too-small", "local", "1Gi", &["ReadWriteOnce"]),
                pv("wrong-mode", "local", "10Gi", &["ReadOnlyMany"]),
                pv("other-class", "slow", "10Gi", &["ReadWriteOnce"]),
            ],
            ..Default::default()
        });
        let v = pod_volumes(&cat, &pod("data"), ALL);
        assert!(v.pre.is_none());
        assert_eq!(v.unbound.len(), 1);
        assert_eq!(v.unbound[0].candidates, ["small", "big"]);
    }
}
