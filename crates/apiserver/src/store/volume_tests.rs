//! Volumes, claims, storage classes and CSINodes as kube-apiserver keeps them: defaults on
//! create, the scheduler's binding writes, status through its subresource only.

use serde_json::{Value, json};

use super::*;

const NOW: i64 = 1_714_564_800;

fn w() -> WriteOptions {
    WriteOptions {
        now: NOW,
        dry_run: false,
    }
}

fn kind(resource: &str) -> &'static KindInfo {
    kinds::find(resource).unwrap()
}

#[test]
fn volumes_claims_and_classes_get_kube_apiserver_defaults() {
    let mut s = Store::new(StoreOptions::default(), NOW);
    let sc = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner"});
    let sc = s.create(kind("storageclasses"), None, sc, &w()).unwrap();
    assert_eq!(sc["volumeBindingMode"], "Immediate");
    assert_eq!(sc["reclaimPolicy"], "Delete");
    assert!(sc["metadata"].get("namespace").is_none());

    let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": "/mnt"}},
        "status": {"phase": "Bound"}});
    let pv = s.create(kind("persistentvolumes"), None, pv, &w()).unwrap();
    assert_eq!(
        pv["status"]["phase"], "Pending",
        "a new volume is not bound"
    );
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(pv["spec"]["volumeMode"], "Filesystem");

    let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let pvc = s
        .create(kind("persistentvolumeclaims"), Some("default"), pvc, &w())
        .unwrap();
    assert_eq!(pvc["status"]["phase"], "Pending");
    assert_eq!(pvc["metadata"]["namespace"], "default");

    let csi = json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
        "metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "d", "nodeID": "n1"}]}});
    s.create(kind("csinodes"), None, csi, &w()).unwrap();
    let sel = Selectors::parse(None, None).unwrap();
    for resource in [
        "storageclasses",
        "persistentvolumes",
        "persistentvolumeclaims",
        "csinodes",
    ] {
        assert_eq!(s.list(kind(resource), None, &sel).0.len(), 1, "{resource}");
    }
}

#[test]
fn binding_a_claim_to_a_volume_is_written_and_watched_as_the_volume_binder_writes_it() {
    let mut s = Store::new(StoreOptions::default(), NOW);
    let pv = json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "10Gi"}}});
    s.create(kind("persistentvolumes"), None, pv, &w()).unwrap();
    let pvc = json!({"metadata": {"name": "data", "namespace": "default"}, "spec": {}});
    let pvc = s
        .create(kind("persistentvolumeclaims"), Some("default"), pvc, &w())
        .unwrap();
    let before = s.resource_version();

    // The binder points the volume at the claim, then the claim at the volume.
    let claim_ref = json!({"spec": {"claimRef": {"kind": "PersistentVolumeClaim",
        "namespace": "default", "name": "data", "uid": pvc["metadata"]["uid"].clone()}}});
    let pv = s
        .patch(
            kind("persistentvolumes"),
            None,
            "pv1",
            PatchType::Merge,
            &claim_ref,
            Part::Main,
            &w(),
        )
        .unwrap();
    assert_eq!(pv["spec"]["claimRef"]["name"], "data");
    let mut bound = (*pvc).clone();
    bound["spec"]["volumeName"] = json!("pv1");
    bound["metadata"]["annotations"] = json!({"pv.kubernetes.io/bind-completed": "yes"});
    bound["status"] = json!({"phase": "Bound"});
    let bound = s
        .update(
            kind("persistentvolumeclaims"),
            Some("default"),
            "data",
            bound,
            Part::Main,
            &w(),
        )
        .unwrap();
    assert_eq!(bound["spec"]["volumeName"], "pv1");
    assert_eq!(
        bound["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"],
        "yes"
    );
    assert_eq!(
        bound["status"]["phase"], "Pending",
        "status moves only through the status subresource"
    );
    let status = json!({"status": {"phase": "Bound"}});
    let bound = s
        .patch(
            kind("persistentvolumeclaims"),
            Some("default"),
            "data",
            PatchType::Merge,
            &status,
            Part::Status,
            &w(),
        )
        .unwrap();
    assert_eq!(bound["status"]["phase"], "Bound");

    let watched: Vec<(String, Value)> = s
        .revisions_since(before)
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.kind.kind.to_string(),
                r.object.pointer("/spec").cloned().unwrap_or_default(),
            )
        })
        .collect();
    let kinds: Vec<&str> = watched.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "PersistentVolume",
            "PersistentVolumeClaim",
            "PersistentVolumeClaim"
        ]
    );
    assert_eq!(watched[1].1["volumeName"], "pv1");
}
