//! Objects created for an owner that is already gone are collected at once, as Kubernetes'
//! garbage collector collects them moments later.

use serde_json::json;

use super::*;

const NOW: i64 = 1_714_564_800;

fn w() -> WriteOptions {
    WriteOptions {
        now: NOW,
        dry_run: false,
    }
}

fn owned_pod(name: &str, owner_uid: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1",
               "kind": "Job", "name": "j", "uid": owner_uid, "controller": true}]},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

#[test]
fn a_pod_created_for_a_deleted_owner_is_collected_and_one_for_a_live_owner_stays() {
    let mut s = Store::new(StoreOptions::default(), NOW);
    let job = json!({"metadata": {"name": "j"}, "spec": {"minAvailable": 1, "tasks": [
        {"name": "t", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    ]}});
    let job = s
        .create(kinds::find("jobs").unwrap(), Some("default"), job, &w())
        .unwrap();
    let uid = job["metadata"]["uid"].as_str().unwrap().to_string();
    s.create(
        kinds::pods(),
        Some("default"),
        owned_pod("live", &uid),
        &w(),
    )
    .unwrap();
    s.take_revisions();
    // A controller with a stale view creates a pod for a Job deleted meanwhile.
    let created = s
        .create(
            kinds::pods(),
            Some("default"),
            owned_pod("orphan", "gone-uid"),
            &w(),
        )
        .unwrap();
    assert_eq!(
        created["metadata"]["name"], "orphan",
        "the create itself succeeds"
    );
    assert!(s.get(kinds::pods(), Some("default"), "orphan").is_err());
    let changes: Vec<_> = s.take_revisions().iter().map(|c| c.change).collect();
    assert_eq!(changes, vec![ChangeType::Added, ChangeType::Deleted]);
    assert!(s.get(kinds::pods(), Some("default"), "live").is_ok());
}
