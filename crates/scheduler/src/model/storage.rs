//! The storage objects the volume filters read, indexed once per snapshot: claims by namespace
//! and name, volumes by name and by class, classes by name, CSINodes by node name. Lookups
//! take `&str`s, so a filter asking per node allocates nothing.

use std::collections::HashMap;

use volcano_api::k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use volcano_api::k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use volcano_api::resources::canonical_amount;
use volcano_api::{NamespacedName, Objects};

use super::TaskId;

/// Annotation the PV controller puts on a claim once its binding is complete.
pub const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// Annotation saying the binding was made by a controller (or the scheduler), not a user.
pub const BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// Annotation naming the node a claim's volume is to be provisioned for.
pub const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The beta annotation naming a class, still honoured before `storageClassName`.
pub const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// The provisioner of classes whose volumes are created by hand only.
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// The binding mode that leaves binding to the scheduler.
pub const WAIT_FOR_FIRST_CONSUMER: &str = "WaitForFirstConsumer";

/// A claim binding a session's placement decided (kube-scheduler's assumed binding): the
/// chosen volume, or none when the claim is to be provisioned for `node`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimBinding {
    /// The task whose placement made the choice.
    pub task: TaskId,
    /// The claim.
    pub claim: NamespacedName,
    /// The node the task was placed on.
    pub node: String,
    /// The PersistentVolume chosen; `None` for dynamic provisioning.
    pub volume: Option<String>,
}

/// The storage objects of a snapshot.
#[derive(Debug, Clone, Default)]
pub struct StorageCatalog {
    claims: HashMap<String, HashMap<String, PersistentVolumeClaim>>,
    volumes: HashMap<String, PersistentVolume>,
    /// Volume names by class, each list in name order so matching is deterministic.
    by_class: HashMap<String, Vec<String>>,
    classes: HashMap<String, StorageClass>,
    csi_nodes: HashMap<String, CSINode>,
}

impl StorageCatalog {
    /// Indexes the storage objects of `objs`; objects without a name are left out.
    pub fn of(objs: &Objects) -> Self {
        let mut c = StorageCatalog::default();
        for pvc in &objs.persistent_volume_claims {
            let (Some(name), ns) = (&pvc.metadata.name, &pvc.metadata.namespace) else {
                continue;
            };
            let ns = ns.clone().unwrap_or_else(|| "default".to_string());
            c.claims
                .entry(ns)
                .or_default()
                .insert(name.clone(), pvc.clone());
        }
        for pv in &objs.persistent_volumes {
            let Some(name) = &pv.metadata.name else {
                continue;
            };
            c.by_class
                .entry(volume_class(pv).to_string())
                .or_default()
                .push(name.clone());
            c.volumes.insert(name.clone(), pv.clone());
        }
        for names in c.by_class.values_mut() {
            names.sort();
        }
        for sc in &objs.storage_classes {
            if let Some(name) = &sc.metadata.name {
                c.classes.insert(name.clone(), sc.clone());
            }
        }
        for cn in &objs.csi_nodes {
            if let Some(name) = &cn.metadata.name {
                c.csi_nodes.insert(name.clone(), cn.clone());
            }
        }
        c
    }

    /// Whether there is no claim at all (no pod can use a volume the filters check).
    pub fn has_no_claims(&self) -> bool {
        self.claims.is_empty()
    }

    /// The claim `name` in namespace `ns`.
    pub fn claim(&self, ns: &str, name: &str) -> Option<&PersistentVolumeClaim> {
        self.claims.get(ns)?.get(name)
    }

    /// The PersistentVolume `name`.
    pub fn volume(&self, name: &str) -> Option<&PersistentVolume> {
        self.volumes.get(name)
    }

    /// The PersistentVolumes of class `class` (`""`: those of no class), in name order.
    pub fn volumes_of_class<'a>(
        &'a self,
        class: &str,
    ) -> impl Iterator<Item = &'a PersistentVolume> + 'a {
        self.by_class
            .get(class)
            .into_iter()
            .flatten()
            .filter_map(|n| self.volumes.get(n))
    }

    /// The StorageClass `name`.
    pub fn class(&self, name: &str) -> Option<&StorageClass> {
        self.classes.get(name)
    }

    /// The CSINode of node `node`.
    pub fn csi_node(&self, node: &str) -> Option<&CSINode> {
        self.csi_nodes.get(node)
    }

    /// Whether any CSINode limits how many volumes of a driver a node may attach.
    pub fn has_attach_limits(&self) -> bool {
        self.csi_nodes.values().any(|cn| {
            cn.spec
                .drivers
                .iter()
                .any(|d| d.allocatable.as_ref().and_then(|a| a.count).is_some())
        })
    }

    /// How many volumes of CSI driver `driver` node `node` may attach, where its CSINode
    /// says.
    pub fn attach_limit(&self, node: &str, driver: &str) -> Option<i64> {
        self.csi_node(node)?
            .spec
            .drivers
            .iter()
            .find(|d| d.name == driver)?
            .allocatable
            .as_ref()?
            .count
            .map(i64::from)
    }
}

/// A claim's class: the beta annotation first, then `spec.storageClassName`; `""` for none.
pub fn claim_class(pvc: &PersistentVolumeClaim) -> &str {
    pvc.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(BETA_STORAGE_CLASS))
        .map(String::as_str)
        .or_else(|| {
            pvc.spec
                .as_ref()
                .and_then(|s| s.storage_class_name.as_deref())
        })
        .unwrap_or("")
}

/// A volume's class, read as [`claim_class`] reads a claim's.
pub fn volume_class(pv: &PersistentVolume) -> &str {
    pv.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(BETA_STORAGE_CLASS))
        .map(String::as_str)
        .or_else(|| {
            pv.spec
                .as_ref()
                .and_then(|s| s.storage_class_name.as_deref())
        })
        .unwrap_or("")
}

/// The volume a claim is bound to, when its binding is complete: `spec.volumeName` set and
/// the PV controller's `bind-completed` annotation on it, as kube-scheduler reads it. A claim
/// whose `status.phase` is `Bound` counts too: no PV controller runs in the simulator, and
/// a scenario author who writes a bound claim means one.
pub fn bound_volume(pvc: &PersistentVolumeClaim) -> Option<&str> {
    let name = pvc
        .spec
        .as_ref()?
        .volume_name
        .as_deref()
        .filter(|n| !n.is_empty())?;
    let completed = pvc
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(BIND_COMPLETED));
    let phase_bound = pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
    (completed || phase_bound).then_some(name)
}

/// The storage a claim asks for, in bytes (0 when it names none or the amount is unreadable:
/// the API server rejects such a claim, so it cannot reach a filter).
pub fn claim_request(pvc: &PersistentVolumeClaim) -> i64 {
    pvc.spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| canonical_amount("storage", &q.0).ok())
        .unwrap_or(0)
}

/// A volume's capacity in bytes (0 when it names none or the amount is unreadable).
pub fn volume_capacity(pv: &PersistentVolume) -> i64 {
    pv.spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| canonical_amount("storage", &q.0).ok())
        .unwrap_or(0)
}

/// Whether `pv`'s `claimRef` names `pvc` (and its UID, where the reference carries one).
pub fn volume_bound_to(pv: &PersistentVolume, pvc: &PersistentVolumeClaim) -> bool {
    let Some(r) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    let ns = pvc.metadata.namespace.as_deref().unwrap_or("default");
    r.name.as_deref() == pvc.metadata.name.as_deref()
        && r.namespace.as_deref().unwrap_or("default") == ns
        && r.uid
            .as_deref()
            .filter(|u| !u.is_empty())
            .is_none_or(|u| pvc.metadata.uid.as_deref() == Some(u))
}

#[cfg(test)]
mod tests {
    use super::*;
    use volcano_api::k8s_openapi::api::core::v1::{
        PersistentVolumeClaimSpec, PersistentVolumeClaimStatus, VolumeResourceRequirements,
    };
    use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn claim(volume: Option<&str>, annotated: bool, phase: Option<&str>) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some("data".into()),
                namespace: Some("ns".into()),
                annotations: annotated
                    .then(|| [(BIND_COMPLETED.to_string(), "yes".to_string())].into()),
                ..Default::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                volume_name: volume.map(str::to_string),
                resources: Some(VolumeResourceRequirements {
                    requests: Some([("storage".to_string(), Quantity("10Gi".into()))].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: phase.map(|p| PersistentVolumeClaimStatus {
                phase: Some(p.into()),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_claim_is_bound_only_once_its_binding_completed() {
        assert_eq!(bound_volume(&claim(Some("pv1"), true, None)), Some("pv1"));
        assert_eq!(
            bound_volume(&claim(Some("pv1"), false, Some("Bound"))),
            Some("pv1")
        );
        // Pre-bound by a user, not yet completed by the PV controller.
        assert_eq!(bound_volume(&claim(Some("pv1"), false, None)), None);
        assert_eq!(bound_volume(&claim(None, true, None)), None);
    }

    #[test]
    fn claim_request_is_in_bytes() {
        assert_eq!(claim_request(&claim(None, false, None)), 10 << 30);
    }
}
