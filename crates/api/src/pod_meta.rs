//! The metadata every component's own copy of a watched pod keeps: the scheduler's and the
//! controller-manager's each hold every pod of the cluster, and read the same part of its
//! metadata.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// `kubectl apply`'s copy of the whole object it applied: often an object's largest annotation,
/// and read by none of our components.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A pod's metadata, taken by move, with what is read of it: identity and version, labels and
/// annotations (but [`LAST_APPLIED`]), creation and deletion times, owners. Finalizers,
/// generation and managed fields are left out.
pub fn kept_meta(m: ObjectMeta) -> ObjectMeta {
    let annotations = m.annotations.map(|mut a| {
        a.remove(LAST_APPLIED);
        a
    });
    ObjectMeta {
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resource_version: m.resource_version,
        labels: m.labels,
        annotations,
        creation_timestamp: m.creation_timestamp,
        deletion_timestamp: m.deletion_timestamp,
        owner_references: m.owner_references,
        ..ObjectMeta::default()
    }
}
