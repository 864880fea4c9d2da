use kube::runtime::watcher::Event;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;

fn pod(name: &str, rv: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn key(name: &str) -> Key {
    NamespacedName::new("ns", name)
}

#[test]
fn a_watch_event_older_than_the_cache_changes_nothing() {
    let mut c = ClusterMirror::default();
    assert_eq!(c.apply(Update::Pod(Event::Apply(pod("a", "5")))).len(), 1);
    assert!(c.apply(Update::Pod(Event::Apply(pod("a", "4")))).is_empty());
    assert!(c.apply(Update::Pod(Event::Apply(pod("a", "5")))).is_empty());
    let changed = c.apply(Update::Pod(Event::Apply(pod("a", "6"))));
    assert!(matches!(&changed[..], [WatchEvent::Pod(Some(_), Some(_))]));
}

#[test]
fn a_write_answered_before_a_deletion_the_watch_told_does_not_bring_the_object_back() {
    let mut c = ClusterMirror::default();
    // The watch tells of a pod made by a controller's turn, then of its deletion, before the
    // turn ends and hands in the create's answer.
    c.apply(Update::Pod(Event::Apply(pod("a", "5"))));
    c.apply(Update::Pod(Event::Delete(pod("a", "7"))));
    assert!(c.apply(Update::Pod(Event::Apply(pod("a", "5")))).is_empty());
    assert!(c.pod(&key("a")).is_none(), "the deleted pod stays deleted");
    // A pod made again under the same name is newer than the deletion.
    let changed = c.apply(Update::Pod(Event::Apply(pod("a", "9"))));
    assert!(matches!(&changed[..], [WatchEvent::Pod(None, Some(_))]));
    assert!(c.pod(&key("a")).is_some());
    // Only the deleted pod is buried.
    assert_eq!(c.apply(Update::Pod(Event::Apply(pod("b", "3")))).len(), 1);
}

#[test]
fn a_relist_drops_what_went_away_while_the_watch_was_down() {
    let mut c = ClusterMirror::default();
    for n in ["a", "b", "c"] {
        c.apply(Update::Pod(Event::Apply(pod(n, "1"))));
    }
    c.apply(Update::Pod(Event::Init));
    c.apply(Update::Pod(Event::InitApply(pod("a", "1"))));
    c.apply(Update::Pod(Event::InitApply(pod("c", "2"))));
    let gone = c.apply(Update::Pod(Event::InitDone));
    assert_eq!(gone.len(), 1);
    assert!(
        matches!(&gone[0], WatchEvent::Pod(Some(p), None) if p.metadata.name.as_deref() == Some("b"))
    );
    assert!(c.pod(&key("a")).is_some());
    assert!(c.pod(&key("b")).is_none());
    assert_eq!(
        c.pod(&key("c"))
            .and_then(|p| p.metadata.resource_version.clone())
            .as_deref(),
        Some("2")
    );
    assert!(c.synced(&[Kind::Pod]));
    assert!(!c.synced(&[Kind::Pod, Kind::Node]));
}

#[test]
fn deletes_keep_the_index_right_for_the_object_moved_into_the_hole() {
    let mut c = ClusterMirror::default();
    for n in ["a", "b", "c"] {
        c.apply(Update::Pod(Event::Apply(pod(n, "1"))));
    }
    c.apply(Update::Pod(Event::Delete(pod("a", "2"))));
    assert_eq!(c.objects().pods.len(), 2);
    let changed = c.apply(Update::Pod(Event::Apply(pod("c", "3"))));
    assert_eq!(changed.len(), 1);
    assert_eq!(c.objects().pods.len(), 2);
    assert!(
        c.apply(Update::Pod(Event::Delete(pod("zz", "3"))))
            .is_empty()
    );
}

#[test]
fn an_assumed_write_is_replaced_by_its_watch_event() {
    let mut c = ClusterMirror::default();
    c.apply(Update::Pod(Event::Apply(pod("a", "1"))));
    c.assume_pod(&key("a"), |p| {
        p.spec.get_or_insert_with(Default::default).node_name = Some("n1".into());
    });
    assert_eq!(
        c.pod(&key("a"))
            .and_then(|p| p.spec.as_ref()?.node_name.clone())
            .as_deref(),
        Some("n1")
    );
    let mut bound = pod("a", "2");
    bound.spec = Some(Default::default());
    bound.spec.as_mut().unwrap().node_name = Some("n1".into());
    assert_eq!(c.apply(Update::Pod(Event::Apply(bound))).len(), 1);
}

#[test]
fn an_event_object_finds_its_uid_in_the_cache() {
    let mut c = ClusterMirror::default();
    let mut p = pod("a", "1");
    p.metadata.uid = Some("uid-a".into());
    c.apply(Update::Pod(Event::Apply(p)));
    assert_eq!(
        c.uid_of(&ObjectRef::new(ObjectKind::Pod, key("a")))
            .as_deref(),
        Some("uid-a")
    );
    assert_eq!(
        c.uid_of(&ObjectRef::new(ObjectKind::Pod, key("missing"))),
        None
    );
    assert_eq!(
        c.uid_of(&ObjectRef::new(
            ObjectKind::Node,
            NamespacedName::cluster("n1")
        )),
        None
    );
}

#[test]
fn storage_objects_and_namespaces_are_mirrored_and_their_relist_drops_what_went_away() {
    use volcano_api::k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim};
    use volcano_api::k8s_openapi::api::storage::v1::CSINode;

    let meta = |ns: Option<&str>, name: &str| ObjectMeta {
        name: Some(name.into()),
        namespace: ns.map(str::to_string),
        resource_version: Some("1".into()),
        ..Default::default()
    };
    let mut c = ClusterMirror::journaling();
    let ns = Namespace {
        metadata: meta(None, "team"),
        ..Default::default()
    };
    let claim = PersistentVolumeClaim {
        metadata: meta(Some("team"), "data"),
        ..Default::default()
    };
    let csi = |name: &str| CSINode {
        metadata: meta(None, name),
        ..Default::default()
    };
    c.apply(Update::Namespace(Event::Apply(ns)));
    c.apply(Update::PersistentVolumeClaim(Event::Apply(claim)));
    c.apply(Update::CSINode(Event::Apply(csi("n1"))));
    c.apply(Update::CSINode(Event::Apply(csi("n2"))));
    let kinds: Vec<ObjectKind> = c.take_journal().iter().map(WatchEvent::kind).collect();
    assert_eq!(
        kinds,
        [
            ObjectKind::Namespace,
            ObjectKind::PersistentVolumeClaim,
            ObjectKind::CSINode,
            ObjectKind::CSINode
        ]
    );
    let claim_ref = ObjectRef::new(
        ObjectKind::PersistentVolumeClaim,
        NamespacedName::new("team", "data"),
    );
    assert!(c.uid_of(&claim_ref).is_none(), "held, without a uid");
    assert_eq!(c.objects().persistent_volume_claims.len(), 1);

    c.apply(Update::CSINode(Event::Init));
    c.apply(Update::CSINode(Event::InitApply(csi("n2"))));
    c.apply(Update::CSINode(Event::InitDone));
    // A journaling mirror returns nothing: what changed is in its journal.
    let gone = c.take_journal();
    assert!(
        matches!(&gone[..], [WatchEvent::CSINode(Some(n), None)] if n.metadata.name.as_deref() == Some("n1"))
    );
    assert!(c.synced(&[Kind::CSINode]));
    assert_eq!(c.objects().csi_nodes.len(), 1);
    assert_eq!(c.objects().namespaces.len(), 1);
}

#[test]
fn workloads_are_mirrored_with_their_changes_and_uids() {
    use volcano_api::k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, StatefulSet};

    let meta = |name: &str, version: &str| ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        uid: Some(format!("uid-{name}")),
        resource_version: Some(version.into()),
        ..Default::default()
    };
    let mut c = ClusterMirror::default();
    c.apply(Update::ReplicaSet(Event::Apply(ReplicaSet {
        metadata: meta("web-1", "1"),
        ..Default::default()
    })));
    c.apply(Update::StatefulSet(Event::Apply(StatefulSet {
        metadata: meta("db", "2"),
        ..Default::default()
    })));
    let scaled = c.apply(Update::ReplicaSet(Event::Apply(ReplicaSet {
        metadata: meta("web-1", "3"),
        spec: Some(ReplicaSetSpec {
            replicas: Some(0),
            ..Default::default()
        }),
        ..Default::default()
    })));
    assert!(
        matches!(&scaled[..], [WatchEvent::ReplicaSet(Some(_), Some(new))] if new.spec.as_ref().and_then(|s| s.replicas) == Some(0)),
        "a scale is seen as a change of the ReplicaSet: {scaled:?}"
    );
    let rs = ObjectRef::new(
        ObjectKind::ReplicaSet,
        NamespacedName::new("default", "web-1"),
    );
    assert_eq!(c.uid_of(&rs).as_deref(), Some("uid-web-1"));
    assert_eq!(c.objects().replica_sets.len(), 1);
    assert_eq!(c.objects().stateful_sets.len(), 1);
}
