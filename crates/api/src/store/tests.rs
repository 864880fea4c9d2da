use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::*;
use crate::scheduling::{PodGroup, PodGroupSpec};

fn pod(name: &str, job: Option<&str>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            owner_references: job.map(|j| {
                vec![OwnerReference {
                    api_version: "batch.volcano.sh/v1alpha1".into(),
                    kind: "Job".into(),
                    name: j.into(),
                    uid: format!("uid-{j}"),
                    controller: Some(true),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn pod_group(name: &str, queue: &str) -> PodGroup {
    PodGroup {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        spec: PodGroupSpec {
            queue: queue.into(),
            ..Default::default()
        },
        status: None,
    }
}

fn names(pods: &[&Pod]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect()
}

#[test]
fn a_deleted_object_leaves_the_others_in_order_and_findable() {
    let mut store = ObjectStore::default().keeping_order();
    for (n, j) in [("a", "j1"), ("b", "j2"), ("c", "j1"), ("d", "j1")] {
        store.upsert(pod(n, Some(j)));
    }
    assert!(
        store
            .delete::<Pod>(&NamespacedName::new("ns", "b"))
            .is_some()
    );
    let order: Vec<_> = store
        .objects()
        .pods
        .iter()
        .map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(
        order,
        [Some("a".into()), Some("c".into()), Some("d".into())]
    );
    assert!(store.get::<Pod>(&NamespacedName::new("ns", "d")).is_some());
    assert_eq!(names(&store.pods_of_job("ns", "j1")), ["a", "c", "d"]);
    assert!(store.pods_of_job("ns", "j2").is_empty());
    assert!(
        store
            .delete::<Pod>(&NamespacedName::new("ns", "b"))
            .is_none()
    );
}

#[test]
fn a_pod_group_moved_to_another_queue_is_found_there_only() {
    let mut store = ObjectStore::new(Objects {
        pod_groups: vec![pod_group("g1", ""), pod_group("g2", "q")],
        ..Default::default()
    });
    assert_eq!(store.pod_groups_in_queue("default").len(), 1);
    store.modify::<PodGroup>(&NamespacedName::new("ns", "g1"), |pg| {
        pg.spec.queue = "q".into()
    });
    assert!(store.pod_groups_in_queue("default").is_empty());
    assert_eq!(store.pod_groups_in_queue("q").len(), 2);
}

#[test]
fn the_journal_holds_every_event_once_and_reset_reports_only_differences() {
    let mut store = ObjectStore::default().journaling();
    store.upsert(pod("a", None));
    assert!(
        store.create(pod("a", None)).is_none(),
        "a create of a held name changes nothing"
    );
    store.upsert(pod("b", None));
    assert_eq!(store.take_journal().len(), 2);
    let events = store.reset(vec![pod("b", None), pod("c", None)], |x, y| x == y);
    let changed: Vec<String> = events
        .iter()
        .filter_map(|e| e.object())
        .map(|o| o.to_string())
        .collect();
    assert_eq!(changed, ["Pod ns/a", "Pod ns/c"]);
    assert_eq!(store.take_journal().len(), 2);
    assert!(store.take_journal().is_empty());
}

#[test]
fn without_order_a_deletion_moves_the_last_into_the_gap_and_all_stay_findable() {
    let mut store = ObjectStore::default();
    for (n, j) in [("a", "j1"), ("b", "j2"), ("c", "j1"), ("d", "j1")] {
        store.upsert(pod(n, Some(j)));
    }
    assert!(
        store
            .delete::<Pod>(&NamespacedName::new("ns", "a"))
            .is_some()
    );
    for n in ["b", "c", "d"] {
        let p: Option<&Pod> = store.get(&NamespacedName::new("ns", n));
        assert_eq!(p.and_then(|p| p.metadata.name.as_deref()), Some(n));
    }
    assert_eq!(names(&store.pods_of_job("ns", "j1")), ["d", "c"]);
}

#[test]
fn a_pod_without_namespace_is_stored_in_default_and_a_renamed_one_is_found_by_its_new_name() {
    let mut store = ObjectStore::default();
    let mut p = pod("a", None);
    p.metadata.namespace = None;
    store.upsert(p);
    assert!(store.contains::<Pod>(&NamespacedName::new("default", "a")));
    store.modify::<Pod>(&NamespacedName::new("default", "a"), |p| {
        p.metadata.name = Some("b".into())
    });
    assert!(!store.contains::<Pod>(&NamespacedName::new("default", "a")));
    assert!(
        store
            .delete::<Pod>(&NamespacedName::new("default", "b"))
            .is_some()
    );
    assert!(store.objects().pods.is_empty());
}

#[test]
fn objects_of_one_identity_given_at_once_are_one_as_applying_them_in_turn_would_leave_it() {
    let mut store = ObjectStore::new(Objects {
        pods: vec![
            pod("a", Some("j1")).into(),
            pod("b", Some("j1")).into(),
            pod("a", Some("j2")).into(),
        ],
        ..Default::default()
    })
    .keeping_order();
    let mut applied = ObjectStore::default().keeping_order();
    for p in [
        pod("a", Some("j1")),
        pod("b", Some("j1")),
        pod("a", Some("j2")),
    ] {
        applied.upsert(p);
    }
    assert_eq!(store.objects().pods, applied.objects().pods);
    assert_eq!(
        names(
            &store
                .objects()
                .pods
                .iter()
                .map(|p| &**p)
                .collect::<Vec<_>>()
        ),
        ["a", "b"]
    );
    assert_eq!(names(&store.pods_of_job("ns", "j1")), ["b"]);
    assert_eq!(names(&store.pods_of_job("ns", "j2")), ["a"]);
    assert!(
        store
            .delete::<Pod>(&NamespacedName::new("ns", "a"))
            .is_some()
    );
    assert!(!store.contains::<Pod>(&NamespacedName::new("ns", "a")));
    assert_eq!(
        names(
            &store
                .objects()
                .pods
                .iter()
                .map(|p| &**p)
                .collect::<Vec<_>>()
        ),
        ["b"]
    );
}

#[test]
fn storage_kinds_and_namespaces_round_trip_with_their_watch_events() {
    use k8s_openapi::api::core::v1::{
        Namespace, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    };
    use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

    let named = |name: &str| ObjectMeta {
        name: Some(name.into()),
        ..Default::default()
    };
    let mut store = ObjectStore::new(Objects {
        namespaces: vec![Namespace {
            metadata: named("team"),
            ..Default::default()
        }],
        storage_classes: vec![StorageClass {
            metadata: named("local"),
            provisioner: "kubernetes.io/no-provisioner".into(),
            ..Default::default()
        }],
        ..Default::default()
    })
    .journaling();
    assert!(store.contains::<Namespace>(&NamespacedName::cluster("team")));
    assert!(store.contains::<StorageClass>(&NamespacedName::cluster("local")));

    let created = store.upsert(PersistentVolumeClaim {
        metadata: named("data"),
        ..Default::default()
    });
    assert_eq!(
        created.object().map(|o| o.to_string()).as_deref(),
        Some("PersistentVolumeClaim default/data"),
        "a claim stored without a namespace is in default"
    );
    store.upsert(PersistentVolume {
        metadata: named("pv1"),
        ..Default::default()
    });
    store.upsert(CSINode {
        metadata: named("n1"),
        ..Default::default()
    });
    let bound =
        store.modify::<PersistentVolumeClaim>(&NamespacedName::new("default", "data"), |pvc| {
            pvc.spec = Some(PersistentVolumeClaimSpec {
                volume_name: Some("pv1".into()),
                ..Default::default()
            });
        });
    let Some(WatchEvent::PersistentVolumeClaim(Some(old), Some(new))) = bound else {
        panic!("binding a claim is a PersistentVolumeClaim change: {bound:?}");
    };
    assert!(old.spec.is_none());
    assert_eq!(
        new.spec.as_ref().and_then(|s| s.volume_name.as_deref()),
        Some("pv1")
    );
    let gone = store.delete::<CSINode>(&NamespacedName::cluster("n1"));
    assert_eq!(gone.map(|e| e.kind()), Some(ObjectKind::CSINode));

    let kinds: Vec<ObjectKind> = store.take_journal().iter().map(WatchEvent::kind).collect();
    assert_eq!(
        kinds,
        [
            ObjectKind::PersistentVolumeClaim,
            ObjectKind::PersistentVolume,
            ObjectKind::CSINode,
            ObjectKind::PersistentVolumeClaim,
            ObjectKind::CSINode,
        ]
    );
    let objects = store.objects();
    assert_eq!(objects.persistent_volumes.len(), 1);
    assert_eq!(objects.persistent_volume_claims.len(), 1);
    assert!(objects.csi_nodes.is_empty());
}

#[test]
fn workloads_are_stored_in_a_namespace_with_their_watch_events() {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, ReplicaSetSpec, StatefulSet};

    let named = |name: &str| ObjectMeta {
        name: Some(name.into()),
        ..Default::default()
    };
    let mut store = ObjectStore::new(Objects::default()).journaling();
    let created = store.upsert(ReplicaSet {
        metadata: named("web-1"),
        ..Default::default()
    });
    assert_eq!(
        created.object().map(|o| o.to_string()).as_deref(),
        Some("ReplicaSet default/web-1"),
        "a workload stored without a namespace is in default"
    );
    store.upsert(StatefulSet {
        metadata: named("db"),
        ..Default::default()
    });
    store.upsert(Deployment {
        metadata: named("web"),
        ..Default::default()
    });
    let scaled = store.modify::<ReplicaSet>(&NamespacedName::new("default", "web-1"), |rs| {
        rs.spec = Some(ReplicaSetSpec {
            replicas: Some(0),
            ..Default::default()
        });
    });
    let Some(WatchEvent::ReplicaSet(Some(old), Some(new))) = scaled else {
        panic!("scaling a ReplicaSet is a ReplicaSet change: {scaled:?}");
    };
    assert!(old.spec.is_none());
    assert_eq!(new.spec.and_then(|s| s.replicas), Some(0));
    store.delete::<StatefulSet>(&NamespacedName::new("default", "db"));
    let kinds: Vec<ObjectKind> = store.take_journal().iter().map(WatchEvent::kind).collect();
    assert_eq!(
        kinds,
        [
            ObjectKind::ReplicaSet,
            ObjectKind::StatefulSet,
            ObjectKind::Deployment,
            ObjectKind::ReplicaSet,
            ObjectKind::StatefulSet,
        ]
    );
    assert_eq!(store.objects().replica_sets.len(), 1);
    assert!(store.objects().stateful_sets.is_empty());
    assert_eq!(store.objects().deployments.len(), 1);
}
