//! Shadow PodGroups: with `shadow_pod_groups`, a bare pod of ours (no PodGroup named, no
//! controller owner) is scheduled as a gang of one with no PodGroup object, and nothing is
//! written to the PodGroup it does not have; why it waits is written on the pod.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Each test file uses some of the shared helpers.
#[allow(dead_code)]
mod support;

use std::sync::Arc;
use support::*;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use volcano_api::{NamespacedName, ObjectKind, Objects, keys};
use volcano_scheduler::cache::{CacheOptions, apply_decisions, build_snapshot};
use volcano_scheduler::framework::Decisions;
use volcano_testkit::build::*;

fn session(objs: &Objects, shadow_pod_groups: bool, i: u32) -> Decisions {
    let opts = CacheOptions {
        shadow_pod_groups,
        ..CacheOptions::default()
    };
    let snap = build_snapshot(objs, &opts).expect("valid objects");
    volcano_scheduler::run_session(
        snap,
        &conf(volcano_testkit::conf::predicates_only()),
        session_options(i),
    )
}

/// One 4-cpu node; a bare pod that fits and one that never can.
fn cluster_with_bare_pods() -> Objects {
    cluster()
        .with(node("n0").cpu(4).mem_gi(8))
        .with(pod("ns", "fits").cpu_milli(1000))
        .with(pod("ns", "too-big").cpu_milli(8000))
        .objects()
}

/// A bare pod asking for `cpu_milli` that names `queue` by its annotation.
fn in_queue(name: &str, cpu_milli: i64, queue: &str) -> Pod {
    let mut p = pod("ns", name).cpu_milli(cpu_milli).build();
    p.metadata.annotations = Some([(keys::POD_QUEUE_NAME.to_string(), queue.to_string())].into());
    p
}

fn key(name: &str) -> NamespacedName {
    NamespacedName::new("ns", name)
}

#[test]
fn a_bare_pod_is_bound_with_nothing_written_to_a_pod_group() {
    let mut objs = cluster_with_bare_pods();
    let d = session(&objs, true, 1);
    assert_eq!(d.binds, vec![(key("fits"), "n0".to_string())]);
    assert!(d.pod_groups.is_empty(), "{:?}", d.pod_groups);
    assert!(
        d.events.iter().all(|e| e.object.kind == ObjectKind::Pod),
        "{:?}",
        d.events
    );
    // Why the other waits is on the pod, once.
    let told: Vec<_> = d.pod_conditions.iter().map(|c| c.key.clone()).collect();
    assert_eq!(told, vec![key("too-big")]);
    assert!(
        d.events
            .iter()
            .any(|e| e.object.key == key("too-big") && e.reason == "FailedScheduling")
    );
    apply_decisions(&mut objs, &d);
    let next = session(&objs, true, 2);
    assert!(next.binds.is_empty(), "{:?}", next.binds);
    assert!(next.pod_groups.is_empty());
    assert!(
        next.pod_conditions.is_empty() && next.events.is_empty(),
        "told again: {:?} {:?}",
        next.pod_conditions,
        next.events
    );
}

#[test]
fn without_shadows_a_bare_pod_waits_for_its_pod_group_object() {
    let d = session(&cluster_with_bare_pods(), false, 1);
    assert!(d.binds.is_empty(), "{:?}", d.binds);
}

#[test]
fn a_replica_waits_for_the_pod_group_its_owner_shares_and_a_named_one_for_its_own() {
    let mut replica = pod("ns", "replica").cpu_milli(1000).build();
    replica.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        name: "rs".into(),
        uid: "rs-1".into(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    let mut objs = cluster()
        .with(node("n0").cpu(4).mem_gi(8))
        .with(pod("ns", "named").cpu_milli(1000).group("later"))
        .objects();
    objs.pods.push(replica.into());
    let d = session(&objs, true, 1);
    assert!(d.binds.is_empty(), "{:?}", d.binds);
}

#[test]
fn a_bare_pod_counts_against_the_queue_it_names() {
    let small = in_queue("in-small", 2000, "small");
    let mut objs = cluster()
        .with(node("n0").cpu(8).mem_gi(8))
        .with(queue("small").capability_cpu(1000))
        .objects();
    objs.pods.push(small.into());
    let d = session(&objs, true, 1);
    assert!(
        d.binds.is_empty(),
        "over its queue's capability: {:?}",
        d.binds
    );
    // The same pod in the default queue is bound.
    Arc::make_mut(&mut objs.pods[0]).metadata.annotations = None;
    let d = session(&objs, true, 1);
    assert_eq!(d.binds, vec![(key("in-small"), "n0".to_string())]);
}

#[test]
fn bare_pods_are_taken_oldest_first() {
    use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use volcano_api::k8s_openapi::jiff::Timestamp;
    let at = |name: &str, second: i64| {
        let mut p = pod("ns", name).cpu_milli(3000).build();
        p.metadata.creation_timestamp = Some(Time(Timestamp::from_second(second).unwrap()));
        p
    };
    let mut objs = cluster().with(node("n0").cpu(4).mem_gi(8)).objects();
    // Listed, named and keyed (the builder's uid is `<namespace>-<name>`) newest first.
    objs.pods.push(at("a-newer", 20).into());
    objs.pods.push(at("b-older", 10).into());
    let d = session(&objs, true, 1);
    assert_eq!(d.binds, vec![(key("b-older"), "n0".to_string())]);
}

#[test]
fn a_bare_pod_naming_a_queue_that_does_not_exist_is_told_so_once() {
    let lost = in_queue("lost", 1000, "nowhere");
    let mut objs = cluster().with(node("n0").cpu(4).mem_gi(8)).objects();
    objs.pods.push(lost.into());
    let d = session(&objs, true, 1);
    assert!(d.binds.is_empty());
    let told: Vec<_> = d
        .pod_conditions
        .iter()
        .map(|c| (&c.key, &c.message))
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].0, &key("lost"));
    assert!(told[0].1.contains("\"nowhere\""), "{}", told[0].1);
    assert!(
        d.events
            .iter()
            .any(|e| e.object.key == key("lost") && e.reason == "FailedScheduling")
    );
    // Once the pod carries the condition, nothing is told again.
    apply_decisions(&mut objs, &d);
    let next = session(&objs, true, 2);
    assert!(
        next.pod_conditions.is_empty() && next.events.is_empty(),
        "{:?} {:?}",
        next.pod_conditions,
        next.events
    );
}
