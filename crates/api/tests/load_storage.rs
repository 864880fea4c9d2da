//! Loading the kinds volume scheduling and pod affinity read: Namespace, PersistentVolume,
//! PersistentVolumeClaim, StorageClass and CSINode.

// A test that cannot even load its fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{assert_error, key};
use volcano_api::scenario::load_str;

const STORAGE: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: team, labels: {tier: gold}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local, namespace: ignored}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {path: /mnt/disk1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [n1]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local
  resources: {requests: {storage: 5Gi}}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: n1}
spec:
  drivers:
  - name: ebs.csi.aws.com
    nodeID: i-123
    allocatable: {count: 25}
"#;

#[test]
fn storage_kinds_and_namespaces_load_into_their_lists() {
    let s = load_str(Path::new("storage.yaml"), STORAGE).unwrap();
    let o = &s.objects;
    assert_eq!(o.namespaces.len(), 1);
    let labels = o.namespaces[0].metadata.labels.as_ref().unwrap();
    assert_eq!(labels.get("tier").map(String::as_str), Some("gold"));
    assert_eq!(o.storage_classes.len(), 1);
    assert_eq!(
        o.storage_classes[0].volume_binding_mode.as_deref(),
        Some("WaitForFirstConsumer")
    );
    assert_eq!(
        o.storage_classes[0].metadata.namespace, None,
        "a StorageClass is cluster-scoped"
    );
    assert_eq!(o.persistent_volumes.len(), 1);
    assert_eq!(o.persistent_volume_claims.len(), 1);
    assert_eq!(
        o.persistent_volume_claims[0].metadata.namespace.as_deref(),
        Some("default"),
        "a claim without a namespace is in default, as a pod is"
    );
    assert_eq!(o.csi_nodes.len(), 1);
    assert_eq!(
        o.csi_nodes[0].spec.drivers[0]
            .allocatable
            .as_ref()
            .and_then(|a| a.count),
        Some(25)
    );
    for k in [
        key("Namespace", "", "team"),
        key("StorageClass", "", "local"),
        key("PersistentVolume", "", "pv1"),
        key("PersistentVolumeClaim", "default", "data"),
        key("CSINode", "", "n1"),
    ] {
        assert!(s.sources.contains_key(&k), "{k} has a source");
    }
}

#[test]
fn a_claim_defined_twice_in_one_namespace_is_refused() {
    let claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {}\n";
    let text = format!("{claim}---\n{claim}");
    assert_error(
        &text,
        &[
            "document 2",
            "PersistentVolumeClaim default/data",
            "defined twice",
        ],
    );
}

#[test]
fn a_volume_with_a_bad_capacity_names_the_field() {
    let text = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1}\nspec:\n  capacity: {storage: lots}\n";
    assert_error(
        text,
        &["PersistentVolume pv1", "field spec.capacity.storage"],
    );
}

#[test]
fn a_claim_with_a_bad_request_names_the_field() {
    let text = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: team}\nspec:\n  resources: {requests: {storage: 5 GB}}\n";
    assert_error(
        text,
        &[
            "PersistentVolumeClaim team/data",
            "field spec.resources.requests.storage",
        ],
    );
}

#[test]
fn a_csinode_with_a_count_that_is_no_number_names_the_field() {
    let text = "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: n1}\nspec:\n  drivers: [{name: d, nodeID: i, allocatable: {count: many}}]\n";
    assert_error(
        text,
        &["CSINode n1", "field spec.drivers[0].allocatable.count"],
    );
}

#[test]
fn a_storage_class_needs_the_storage_api_version() {
    let text = "apiVersion: v1\nkind: StorageClass\nmetadata: {name: local}\nprovisioner: x\n";
    assert_error(
        text,
        &[
            "field apiVersion",
            "StorageClass needs apiVersion storage.k8s.io/v1",
        ],
    );
}
