// A fixture that does not build should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use volcano_api::k8s_openapi::api::apps::v1::{
    ReplicaSet, ReplicaSetSpec, StatefulSet, StatefulSetSpec, StatefulSetStatus,
};
use volcano_api::k8s_openapi::api::core::v1::{
    Container, Pod, PodSpec, PodTemplateSpec, ResourceRequirements,
};
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, ObjectMeta, OwnerReference,
};
use volcano_api::keys;
use volcano_api::scheduling::PodGroup;
use volcano_api::{NamespacedName, ObjectStore, Objects};

use super::build::{min_member, pod_group_for};
use super::{PodGroupController, PodGroupKey};
use crate::change::Change;
use crate::time::Instant;
use crate::view::ClusterView;
use crate::workqueue::RetryPolicy;

fn map(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn owned_pod(name: &str, owner_kind: &str, owner: &str, labels: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            labels: map(labels),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: owner_kind.into(),
                name: owner.into(),
                uid: format!("uid-{owner}"),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            scheduler_name: Some("volcano".into()),
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([("cpu".to_string(), Quantity("1".into()))])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn replica_set(name: &str, replicas: i32, annotations: &[(&str, &str)]) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            annotations: map(annotations),
            ..Default::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: map(&[("app", name)]),
                ..Default::default()
            },
            template: Some(PodTemplateSpec::default()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn stateful_set(name: &str, annotations: &[(&str, &str)], revision: &str) -> StatefulSet {
    StatefulSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            annotations: map(annotations),
            ..Default::default()
        },
        spec: Some(StatefulSetSpec {
            replicas: Some(2),
            selector: LabelSelector {
                match_labels: map(&[("app", name)]),
                ..Default::default()
            },
            ..Default::default()
        }),
        status: Some(StatefulSetStatus {
            update_revision: Some(revision.into()),
            ..Default::default()
        }),
    }
}

fn controller() -> PodGroupController {
    PodGroupController::new(RetryPolicy::default(), vec!["volcano".into()])
}

/// Applies the changes this controller makes, as the API server would.
fn apply(store: &mut ObjectStore, changes: Vec<Change>) {
    for change in changes {
        match change {
            Change::CreatePodGroup(pg) => {
                store.create(*pg);
            }
            Change::UpdatePodGroupSpec {
                namespace,
                name,
                spec,
            } => {
                store.modify::<PodGroup>(&NamespacedName::new(namespace, name), |pg| {
                    pg.spec = *spec;
                });
            }
            Change::DeletePodGroup { namespace, name } => {
                store.delete::<PodGroup>(&NamespacedName::new(namespace, name));
            }
            Change::PatchPodAnnotations {
                namespace,
                name,
                annotations,
            } => {
                store.modify::<Pod>(&NamespacedName::new(namespace, name), |pod| {
                    let a = pod.metadata.annotations.get_or_insert_default();
                    for (k, v) in annotations {
                        match v {
                            Some(v) => a.insert(k, v),
                            None => a.remove(&k),
                        };
                    }
                });
            }
            other => panic!("the PodGroup controller made {other:?}"),
        }
    }
}

/// Runs the controller's turns until it has nothing left, applying every change.
fn settle(c: &mut PodGroupController, store: &mut ObjectStore) -> Vec<PodGroupKey> {
    let mut turns = Vec::new();
    loop {
        let work = c.next(&ClusterView::new(store), Instant::default());
        let Some(work) = work else { break };
        apply(store, work.changes);
        c.finish(&work.key, true, Instant::default());
        turns.push(work.key);
    }
    turns
}

fn group_of<'s>(store: &'s ObjectStore, pod: &str) -> Option<&'s str> {
    let pod: &Pod = store.get(&NamespacedName::new("default", pod))?;
    pod.metadata
        .annotations
        .as_ref()?
        .get(keys::GROUP_NAME)
        .map(String::as_str)
}

fn pod_group<'s>(store: &'s ObjectStore, name: &str) -> &'s PodGroup {
    store
        .get(&NamespacedName::new("default", name))
        .unwrap_or_else(|| panic!("no PodGroup {name}"))
}

#[test]
fn a_replica_sets_pods_share_one_pod_group_with_its_min_member() {
    let pods: Vec<Pod> = (0..3)
        .map(|i| owned_pod(&format!("web-{i}"), "ReplicaSet", "web", &[("app", "web")]))
        .collect();
    let mut store = ObjectStore::new(Objects {
        replica_sets: vec![replica_set(
            "web",
            3,
            &[
                (keys::GROUP_MIN_MEMBER, "3"),
                (keys::PREEMPTABLE, "true"),
                (keys::POD_QUEUE_NAME, "ignored-by-volcano"),
            ],
        )],
        pods: pods.iter().cloned().map(Arc::new).collect(),
        ..Default::default()
    });
    let mut c = controller();
    for p in &pods {
        c.on_pod(p);
    }
    settle(&mut c, &mut store);
    assert_eq!(store.objects().pod_groups.len(), 1, "one gang, not three");
    for p in ["web-0", "web-1", "web-2"] {
        assert_eq!(group_of(&store, p), Some("podgroup-uid-web"), "{p}");
    }
    let pg = pod_group(&store, "podgroup-uid-web");
    assert_eq!(pg.spec.min_member, 3);
    let cpu = pg.spec.min_resources.as_ref().and_then(|r| r.get("cpu"));
    assert_eq!(
        cpu.map(|q| q.0.as_str()),
        Some("3"),
        "three pods of one cpu"
    );
    let annotations = pg.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations.get(keys::PREEMPTABLE).map(String::as_str),
        Some("true"),
        "volcano.sh/ annotations of the owner are inherited"
    );
    assert!(
        !annotations.contains_key(keys::GROUP_MIN_MEMBER),
        "scheduling.volcano.sh/ annotations are read, not copied"
    );
    assert_eq!(
        pg.spec.queue, "",
        "the queue comes from the pod's annotation only, as in Volcano"
    );
    let owner = &pg.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("ReplicaSet", "web")
    );
}

#[test]
fn a_bad_min_member_falls_back_to_one_as_volcano_does() {
    let pod = owned_pod("p", "ReplicaSet", "web", &[]);
    for (value, want) in [
        ("three", 1),
        ("-2", 1),
        ("2.5", 1),
        ("", 1),
        ("99999999999", 1),
        ("0", 0),
        ("4", 4),
    ] {
        let owners = map(&[(keys::GROUP_MIN_MEMBER, value)]).unwrap();
        assert_eq!(min_member(&owners, &pod), want, "{value:?}");
    }
    assert_eq!(min_member(&BTreeMap::new(), &pod), 1, "no annotation");
}

#[test]
fn the_pods_own_annotations_win_over_the_owners() {
    let mut pod = owned_pod("p", "ReplicaSet", "web", &[]);
    pod.metadata.annotations = map(&[
        (keys::PREEMPTABLE, "false"),
        (keys::JDB_MIN_AVAILABLE, "2"),
        (keys::JDB_MAX_UNAVAILABLE, "1"),
        (keys::POD_QUEUE_NAME, "q1"),
    ]);
    let owners = map(&[(keys::PREEMPTABLE, "true"), (keys::COOLDOWN_TIME, "60s")]).unwrap();
    let pg = pod_group_for(&pod, "pg", &owners);
    let a = pg.metadata.annotations.unwrap_or_default();
    assert_eq!(a.get(keys::PREEMPTABLE).map(String::as_str), Some("false"));
    assert_eq!(a.get(keys::COOLDOWN_TIME).map(String::as_str), Some("60s"));
    assert_eq!(
        a.get(keys::JDB_MIN_AVAILABLE).map(String::as_str),
        Some("2")
    );
    assert!(
        !a.contains_key(keys::JDB_MAX_UNAVAILABLE),
        "one budget: minAvailable when the pod sets both"
    );
    assert_eq!(pg.spec.queue, "q1");
}

#[test]
fn a_pods_network_topology_annotations_shape_its_group_as_volcano_reads_them() {
    let with = |pairs: &[(&str, &str)]| {
        let mut pod = owned_pod("p", "ReplicaSet", "web", &[]);
        pod.metadata.annotations = map(pairs);
        pod_group_for(&pod, "pg", &BTreeMap::new())
            .spec
            .network_topology
            .map(|nt| serde_json::to_value(nt).unwrap())
    };
    assert_eq!(with(&[]), None);
    assert_eq!(
        with(&[
            (keys::NETWORK_TOPOLOGY_MODE, "Soft"),
            (keys::NETWORK_TOPOLOGY_HIGHEST_TIER, "2"),
        ]),
        Some(serde_json::json!({"mode": "soft", "highestTierAllowed": 2}))
    );
    // A tier alone is a hard limit; an unknown mode is taken as hard, a bad tier left unset.
    assert_eq!(
        with(&[(keys::NETWORK_TOPOLOGY_HIGHEST_TIER, "1")]),
        Some(serde_json::json!({"mode": "hard", "highestTierAllowed": 1}))
    );
    assert_eq!(
        with(&[
            (keys::NETWORK_TOPOLOGY_MODE, "strict"),
            (keys::NETWORK_TOPOLOGY_HIGHEST_TIER, "two"),
        ]),
        Some(serde_json::json!({"mode": "hard"}))
    );
}

#[test]
fn a_replica_set_changed_after_its_pod_has_a_stale_group_brings_it_up_to_date() {
    // The PodGroup was made before the annotation arrived; the pod is not in it yet.
    let pod = owned_pod("web-0", "ReplicaSet", "web", &[("app", "web")]);
    let before = pod_group_for(&pod, "podgroup-uid-web", &BTreeMap::new());
    assert_eq!(before.spec.min_member, 1);
    let rs = replica_set("web", 2, &[(keys::GROUP_MIN_MEMBER, "2")]);
    let mut store = ObjectStore::new(Objects {
        replica_sets: vec![rs.clone()],
        pods: vec![pod.into()],
        pod_groups: vec![before],
        ..Default::default()
    });
    let mut c = controller();
    c.on_replica_set(&rs);
    let turns = settle(&mut c, &mut store);
    assert!(matches!(&turns[..], [PodGroupKey::Workload(_)]));
    assert_eq!(pod_group(&store, "podgroup-uid-web").spec.min_member, 2);
    assert_eq!(group_of(&store, "web-0"), Some("podgroup-uid-web"));
}

#[test]
fn a_pod_already_in_a_group_is_left_alone_as_leader_worker_sets_are() {
    let mut pod = owned_pod("lws-0-1", "StatefulSet", "lws-0", &[("app", "lws-0")]);
    pod.metadata.labels = map(&[("app", "lws-0"), ("controller-revision-hash", "r1")]);
    pod.metadata.annotations = map(&[(keys::GROUP_NAME, "lws-group")]);
    let sts = stateful_set("lws-0", &[(keys::GROUP_MIN_MEMBER, "4")], "r1");
    let mut store = ObjectStore::new(Objects {
        stateful_sets: vec![sts.clone()],
        pods: vec![pod.clone().into()],
        ..Default::default()
    });
    let mut c = controller();
    c.on_pod(&pod);
    c.on_stateful_set(&sts);
    assert!(
        settle(&mut c, &mut store).is_empty(),
        "no turn does anything"
    );
    assert!(store.objects().pod_groups.is_empty());
}

#[test]
fn a_stateful_set_turn_takes_a_pod_of_the_revision_being_rolled_out() {
    let mut old = owned_pod("db-0", "StatefulSet", "db", &[]);
    old.metadata.labels = map(&[("app", "db"), ("controller-revision-hash", "r1")]);
    let mut new = owned_pod("db-1", "StatefulSet", "db", &[]);
    new.metadata.labels = map(&[("app", "db"), ("controller-revision-hash", "r2")]);
    let sts = stateful_set("db", &[(keys::GROUP_MIN_MEMBER, "2")], "r2");
    let mut store = ObjectStore::new(Objects {
        stateful_sets: vec![sts.clone()],
        pods: vec![old.into(), new.into()],
        ..Default::default()
    });
    let mut c = controller();
    c.on_stateful_set(&sts);
    settle(&mut c, &mut store);
    assert_eq!(group_of(&store, "db-0"), None, "an old revision's pod");
    assert_eq!(group_of(&store, "db-1"), Some("podgroup-uid-db"));
    assert_eq!(pod_group(&store, "podgroup-uid-db").spec.min_member, 2);
}

#[test]
fn a_replica_set_scaled_to_zero_loses_its_pod_group() {
    let pod = owned_pod("web-0", "ReplicaSet", "web", &[("app", "web")]);
    let pg = pod_group_for(&pod, "podgroup-uid-web", &BTreeMap::new());
    let rs = replica_set("web", 0, &[(keys::GROUP_MIN_MEMBER, "3")]);
    let mut store = ObjectStore::new(Objects {
        replica_sets: vec![rs.clone()],
        pod_groups: vec![pg],
        ..Default::default()
    });
    let mut c = controller();
    c.on_replica_set(&rs);
    settle(&mut c, &mut store);
    assert!(store.objects().pod_groups.is_empty());
}

#[test]
fn pods_of_another_scheduler_get_no_group_from_their_workload() {
    let mut pod = owned_pod("web-0", "ReplicaSet", "web", &[("app", "web")]);
    if let Some(spec) = pod.spec.as_mut() {
        spec.scheduler_name = Some("default-scheduler".into());
    }
    let rs = replica_set("web", 1, &[(keys::GROUP_MIN_MEMBER, "1")]);
    let mut store = ObjectStore::new(Objects {
        replica_sets: vec![rs.clone()],
        pods: vec![pod.clone().into()],
        ..Default::default()
    });
    let mut c = controller();
    c.on_pod(&pod);
    c.on_replica_set(&rs);
    settle(&mut c, &mut store);
    assert!(store.objects().pod_groups.is_empty());
}

#[test]
fn a_pod_named_at_admission_gets_that_pod_group_without_a_patch() {
    let mut pod = owned_pod("lone", "ReplicaSet", "web", &[("app", "web")]);
    pod.metadata.owner_references = None;
    pod.metadata.annotations = map(&[
        (keys::GROUP_NAME, "podgroup-req-1"),
        (keys::GROUP_NAMED_AT_ADMISSION, "true"),
    ]);
    let mut store = ObjectStore::new(Objects {
        pods: vec![pod.clone().into()],
        ..Default::default()
    });
    let mut c = controller();
    c.on_pod(&pod);
    let work = c
        .next(&ClusterView::new(&store), Instant::default())
        .expect("a turn");
    assert!(
        matches!(work.changes.as_slice(), [Change::CreatePodGroup(pg)]
            if pg.metadata.name.as_deref() == Some("podgroup-req-1")),
        "{:?}",
        work.changes
    );
    apply(&mut store, work.changes);
    c.finish(&work.key, true, Instant::default());
    let pg = pod_group(&store, "podgroup-req-1");
    assert_eq!(
        pg.metadata.owner_references.as_ref().unwrap()[0].uid,
        "uid-lone",
        "the PodGroup goes with its pod"
    );
    assert_eq!(pg.spec.min_member, 1);
    // Every later change of the pod finds its PodGroup there and nothing to do.
    c.on_pod(&pod);
    assert!(settle(&mut c, &mut store).is_empty());
    assert_eq!(store.objects().pod_groups.len(), 1);
}

#[test]
fn a_replica_named_at_admission_shares_its_workloads_pod_group() {
    let rs = replica_set("web", 2, &[(keys::GROUP_MIN_MEMBER, "2")]);
    let pods: Vec<Pod> = (0..2)
        .map(|i| {
            let mut p = owned_pod(&format!("web-{i}"), "ReplicaSet", "web", &[("app", "web")]);
            p.metadata.annotations = map(&[
                (keys::GROUP_NAME, "podgroup-uid-web"),
                (keys::GROUP_NAMED_AT_ADMISSION, "true"),
            ]);
            p
        })
        .collect();
    let mut store = ObjectStore::new(Objects {
        replica_sets: vec![rs.clone()],
        pods: pods.iter().cloned().map(Arc::new).collect(),
        ..Default::default()
    });
    let mut c = controller();
    for p in &pods {
        c.on_pod(p);
    }
    c.on_replica_set(&rs);
    settle(&mut c, &mut store);
    assert_eq!(store.objects().pod_groups.len(), 1);
    assert_eq!(pod_group(&store, "podgroup-uid-web").spec.min_member, 2);
}

#[test]
fn with_bare_pod_groups_off_a_bare_pod_is_left_to_the_scheduler_and_a_replica_is_not() {
    let rs = replica_set("web", 1, &[]);
    let replica = owned_pod("web-0", "ReplicaSet", "web", &[("app", "web")]);
    let mut bare = owned_pod("lone", "ReplicaSet", "web", &[]);
    bare.metadata.owner_references = None;
    let mut store = ObjectStore::new(Objects {
        replica_sets: vec![rs],
        pods: vec![replica.clone().into(), bare.clone().into()],
        ..Default::default()
    });
    let mut c = controller();
    c.set_bare_pod_groups(false);
    assert!(!c.needs_pod_group(&bare));
    c.on_pod(&bare);
    c.on_pod(&replica);
    settle(&mut c, &mut store);
    let names: Vec<_> = store
        .objects()
        .pod_groups
        .iter()
        .filter_map(|pg| pg.metadata.name.clone())
        .collect();
    assert_eq!(names, vec!["podgroup-uid-web".to_string()]);
    assert_eq!(
        group_of(&store, "lone"),
        None,
        "the bare pod is not patched"
    );
    // On (Volcano's way), the bare pod gets its own PodGroup and is named in it.
    c.set_bare_pod_groups(true);
    c.on_pod(&bare);
    settle(&mut c, &mut store);
    assert_eq!(group_of(&store, "lone"), Some("podgroup-uid-lone"));
}
