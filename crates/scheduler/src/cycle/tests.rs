use std::path::Path;
use std::sync::Arc;

use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::scenario::load_str;

use super::*;
use crate::framework::Unobserved;

const CLUSTER: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ns}
spec: {minMember: 1}
status: {phase: Inqueue}
---
apiVersion: v1
kind: Pod
metadata: {name: good, namespace: ns, annotations: {scheduling.k8s.io/group-name: pg}}
spec:
  schedulerName: volcano
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: bad, namespace: ns, annotations: {scheduling.k8s.io/group-name: pg}}
spec:
  schedulerName: volcano
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"#;

fn objects() -> Objects {
    match load_str(Path::new("cycle.yaml"), CLUSTER) {
        Ok(s) => s.objects,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn without_the_implicit_queues_a_session_still_runs_and_binds() {
    let objs = objects();
    assert!(objs.queues.is_empty());
    let mut cycle = SchedulingCycle::new(CacheOptions::default());
    let prepared = match cycle.prepare(&objs) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(prepared.source, SnapshotSource::Rebuilt);
    let d = prepared.run(
        &SchedulerConf::default_conf(),
        SessionOptions::default(),
        &mut Unobserved,
    );
    assert_eq!(d.binds.len(), 2, "{:?}", d.unschedulable);
}

#[test]
fn an_unreadable_pod_is_left_out_by_name_and_the_others_are_scheduled() {
    let mut objs = objects();
    let bad = objs
        .pods
        .iter_mut()
        .map(Arc::make_mut)
        .find(|p| p.metadata.name.as_deref() == Some("bad"));
    if let Some(spec) = bad.and_then(|p| p.spec.as_mut()) {
        let requests = spec.containers[0]
            .resources
            .get_or_insert_with(Default::default)
            .requests
            .get_or_insert_with(Default::default);
        requests.insert("cpu".into(), Quantity("lots".into()));
    }
    let mut cycle = SchedulingCycle::new(CacheOptions::default());
    let prepared = match cycle.prepare(&objs) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    let left: Vec<String> = prepared
        .left_out
        .iter()
        .map(|e| e.object.to_string())
        .collect();
    assert_eq!(left, ["Pod ns/bad"]);
    let d = prepared.run(
        &SchedulerConf::default_conf(),
        SessionOptions::default(),
        &mut Unobserved,
    );
    assert_eq!(d.binds.len(), 1);
    assert_eq!(d.binds[0].0, NamespacedName::new("ns", "good"));
}

#[test]
fn a_followed_change_is_served_from_the_kept_snapshot() {
    let mut objs = objects();
    objs.queues.push(implicit_queue(keys::ROOT_QUEUE));
    objs.queues.push(implicit_queue(keys::DEFAULT_QUEUE));
    let mut cycle = SchedulingCycle::new(CacheOptions::default());
    let first = cycle.prepare(&objs).map(|p| p.source);
    assert_eq!(first, Ok(SnapshotSource::Rebuilt));
    let old = objs.pods[0].clone();
    if let Some(spec) = Arc::make_mut(&mut objs.pods[0]).spec.as_mut() {
        spec.node_name = Some("n1".into());
    }
    cycle.follow(&WatchEvent::Pod(Some(old), Some(objs.pods[0].clone())));
    let second = match cycle.prepare(&objs) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(second.source, SnapshotSource::Kept);
    let bound = second
        .snapshot
        .tasks
        .iter()
        .filter(|t| t.node.is_some())
        .count();
    assert_eq!(bound, 1);
}

#[test]
fn a_namespace_or_claim_changed_keeps_the_snapshot_and_rereads_only_the_cluster_objects() {
    use std::sync::Arc;

    use volcano_api::ObjectStore;
    use volcano_api::k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim};
    use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    let mut objs = objects();
    objs.queues = vec![implicit_queue(keys::ROOT_QUEUE), implicit_queue("default")];
    let mut store = ObjectStore::new(objs).journaling();
    let mut cycle = SchedulingCycle::new(CacheOptions::default());
    let prepare =
        |cycle: &mut SchedulingCycle, store: &ObjectStore| match cycle.prepare(store.objects()) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
    let first = prepare(&mut cycle, &store);
    assert_eq!(first.source, SnapshotSource::Rebuilt);
    assert!(!first.snapshot.cluster.namespace_labels.contains_key("ns"));

    store.upsert(Namespace {
        metadata: ObjectMeta {
            name: Some("ns".into()),
            labels: Some([("team".to_string(), "a".to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    });
    store.upsert(PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some("data".into()),
            namespace: Some("ns".into()),
            ..Default::default()
        },
        ..Default::default()
    });
    for event in store.take_journal() {
        cycle.follow(&event);
    }
    let second = prepare(&mut cycle, &store);
    assert_eq!(
        second.source,
        SnapshotSource::Kept,
        "jobs and nodes are kept"
    );
    let labels = second.snapshot.cluster.namespace_labels("ns");
    assert_eq!(labels.get("team").map(String::as_str), Some("a"));
    assert!(
        !Arc::ptr_eq(&first.snapshot.cluster, &second.snapshot.cluster),
        "the session that holds the first snapshot keeps what it read"
    );
    let third = prepare(&mut cycle, &store);
    assert!(
        Arc::ptr_eq(&second.snapshot.cluster, &third.snapshot.cluster),
        "nothing changed: the cluster objects are shared, not read again"
    );
}

#[test]
fn a_gang_is_short_of_pods_until_its_last_pod_is_followed() {
    let yaml = CLUSTER.replace("spec: {minMember: 1}", "spec: {minMember: 3}");
    let mut objs = match load_str(Path::new("cycle.yaml"), &yaml) {
        Ok(s) => s.objects,
        Err(e) => panic!("{e}"),
    };
    objs.queues.push(implicit_queue(keys::ROOT_QUEUE));
    objs.queues.push(implicit_queue(keys::DEFAULT_QUEUE));
    let mut cycle = SchedulingCycle::new(CacheOptions::default());
    let first = objs.pods[0].clone();
    let gang = NamespacedName::new("ns", "pg");
    assert_eq!(cycle.gang_key(&first), Some(gang.clone()));
    // Before any snapshot the cache knows no gang: short of nothing, so a pod wakes a session.
    assert!(!cycle.gang_short_of_pods(&gang));
    if let Err(e) = cycle.prepare(&objs) {
        panic!("{e}");
    }
    assert!(cycle.gang_short_of_pods(&gang), "2 of 3 pods");
    let mut third = (*first).clone();
    third.metadata.name = Some("third".to_string());
    cycle.follow(&WatchEvent::Pod(None, Some(Arc::new(third))));
    assert!(!cycle.gang_short_of_pods(&gang), "the gang is whole");
}
