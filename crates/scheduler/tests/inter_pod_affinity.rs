//! Inter-pod affinity and anti-affinity as a user of the cluster sees them: where replicas go,
//! what a gang that cannot be spread waits with, which pods preemption takes out of the way.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Each test file uses some of the shared helpers.
#[path = "inter_pod_affinity/builders.rs"]
mod builders;
#[allow(dead_code)]
mod support;

use builders::*;
use std::sync::Arc;
use support::*;
use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{Affinity, Namespace, Pod};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use volcano_testkit::build::*;

#[test]
fn required_anti_affinity_keeps_replicas_one_per_node() {
    let mut objs = cluster()
        .with(zoned("n1", "a", 16))
        .with(zoned("n2", "a", 16))
        .with(zoned("n3", "b", 16))
        .with(gang("ns", "web").min(3).pods(3, 1000, GI))
        .objects();
    shape(
        &mut objs,
        "web-",
        "web",
        Some(required_anti_affinity(app_term("web", HOSTNAME))),
    );
    let d = run_session_n(&objs, &default_conf(), 1);
    let mut nodes: Vec<String> = bound(&d).into_values().collect();
    nodes.sort();
    assert_eq!(nodes, ["n1", "n2", "n3"]);
}

#[test]
fn a_gang_that_cannot_be_spread_binds_nothing_and_says_why() {
    let mut objs = cluster()
        .with(zoned("n1", "a", 16))
        .with(zoned("n2", "a", 16))
        .with(gang("ns", "web").min(3).pods(3, 1000, GI))
        .objects();
    shape(
        &mut objs,
        "web-",
        "web",
        Some(required_anti_affinity(app_term("web", HOSTNAME))),
    );
    let d = run_session_n(&objs, &default_conf(), 1);
    assert!(d.binds.is_empty(), "{:?}", d.binds);
    assert!(d.pipelined.is_empty(), "{:?}", d.pipelined);
    let why = &d.unschedulable[&key("ns", "web")].message;
    assert!(
        why.contains("0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules"),
        "{why}"
    );
}

#[test]
fn required_affinity_follows_the_pod_it_names_into_its_zone() {
    let mut objs = cluster()
        .with(zoned("n1", "a", 16))
        .with(zoned("n2", "b", 16))
        .with(zoned("n3", "b", 16))
        .with(pod("ns", "db-0").cpu_milli(500).on("n2").running())
        .with(gang("ns", "web").min(2).pods(2, 1000, GI))
        .objects();
    shape(&mut objs, "db-", "db", None);
    shape(
        &mut objs,
        "web-",
        "web",
        Some(required_affinity(app_term("db", ZONE))),
    );
    let d = run_session_n(&objs, &default_conf(), 1);
    let b = bound(&d);
    assert_eq!(b.len(), 2, "{b:?}");
    assert!(b.values().all(|n| n == "n2" || n == "n3"), "{b:?}");

    // Without the pod it names, no node will do, and preemption cannot help.
    let mut objs = cluster()
        .with(zoned("n1", "a", 16))
        .with(gang("ns", "web").min(1).pods(1, 1000, GI))
        .objects();
    shape(
        &mut objs,
        "web-",
        "web",
        Some(required_affinity(app_term("db", ZONE))),
    );
    let d = run_session_n(&objs, &default_conf(), 1);
    assert!(d.binds.is_empty());
    let why = &d.unschedulable[&key("ns", "web")].message;
    assert!(
        why.contains("1 node(s) didn't match pod affinity rules"),
        "{why}"
    );
}

#[test]
fn a_group_with_affinity_to_itself_starts_anywhere_then_stays_together() {
    let mut objs = cluster()
        .with(zoned("n1", "a", 16))
        .with(zoned("n2", "b", 16))
        .with(zoned("n3", "b", 16))
        .with(gang("ns", "web").min(3).pods(3, 1000, GI))
        .objects();
    shape(
        &mut objs,
        "web-",
        "web",
        Some(required_affinity(app_term("web", ZONE))),
    );
    let d = run_session_n(&objs, &default_conf(), 1);
    let b = bound(&d);
    assert_eq!(b.len(), 3, "{b:?}");
    let zone = |n: &str| if n == "n1" { "a" } else { "b" };
    let first = zone(&b["web-0"]);
    assert!(b.values().all(|n| zone(n) == first), "{b:?}");
}

#[test]
fn an_existing_pods_anti_affinity_keeps_the_pods_it_names_away() {
    let mut objs = cluster()
        .with(zoned("n1", "a", 16))
        .with(zoned("n2", "a", 16))
        .with(zoned("n3", "b", 16))
        .with(pod("ns", "loner-0").cpu_milli(500).on("n1").running())
        .with(gang("ns", "web").min(2).pods(2, 1000, GI))
        .objects();
    shape(
        &mut objs,
        "loner-",
        "loner",
        Some(required_anti_affinity(app_term("web", ZONE))),
    );
    shape(&mut objs, "web-", "web", None);
    let d = run_session_n(&objs, &default_conf(), 1);
    let b = bound(&d);
    assert_eq!(b.len(), 2, "{b:?}");
    assert!(b.values().all(|n| n == "n3"), "{b:?}");
}

#[test]
fn namespace_selector_reaches_pods_of_other_namespaces() {
    let mut objs = cluster()
        .with(zoned("n1", "a", 16))
        .with(zoned("n2", "b", 16))
        .with(pod("data", "db-0").cpu_milli(500).on("n2").running())
        .with(gang("ns", "web").min(1).pods(1, 1000, GI))
        .objects();
    objs.namespaces = vec![Namespace {
        metadata: ObjectMeta {
            name: Some("data".into()),
            labels: Some(labels(&[("tier", "storage")])),
            ..Default::default()
        },
        ..Default::default()
    }];
    shape(&mut objs, "db-", "db", None);
    let mut t = app_term("db", ZONE);
    t.namespace_selector = Some(LabelSelector {
        match_labels: Some(labels(&[("tier", "storage")])),
        ..Default::default()
    });
    shape(&mut objs, "web-", "web", Some(required_affinity(t)));
    let d = run_session_n(&objs, &default_conf(), 1);
    assert_eq!(bound(&d).get("web-0").map(String::as_str), Some("n2"));

    // By default only the pod's own namespace is looked in.
    shape(
        &mut objs,
        "web-",
        "web",
        Some(required_affinity(app_term("db", ZONE))),
    );
    let d = run_session_n(&objs, &default_conf(), 1);
    assert!(d.binds.is_empty(), "{:?}", d.binds);
}

/// One node; `low` pods (priority 10) fill it as `fill`, the preemptor (priority 1000) asks
/// for 1 CPU with `affinity`.
fn preemption_case(fill: &[(&str, &str, i64)], affinity: Affinity) -> Objects {
    let mut c = cluster()
        .with(queue("q1").weight(1))
        .with(priority_class("low", 10))
        .with(priority_class("high", 1000))
        .with(zoned("n1", "a", 4));
    for (name, _, cpu) in fill {
        c = c.with(
            gang("ns", name)
                .queue("q1")
                .priority_class("low")
                .pods_like(1, template().cpu_milli(*cpu).mem(GI).priority(10)),
        );
    }
    c = c.with(
        gang("ns", "preemptor")
            .queue("q1")
            .priority_class("high")
            .pods_like(1, template().cpu_milli(1000).mem(GI).priority(1000)),
    );
    let mut objs = c.objects();
    for (name, app, _) in fill {
        let prefix = format!("{name}-");
        for p in objs.pods.iter_mut().map(Arc::make_mut).filter(|p| {
            p.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(&prefix))
        }) {
            run_on(p, "n1");
        }
        shape(&mut objs, &prefix, app, None);
        set_phase(&mut objs, name, "Running");
    }
    shape(&mut objs, "preemptor-", "web", Some(affinity));
    set_phase(&mut objs, "preemptor", "Inqueue");
    objs
}

fn run_on(p: &mut Pod, node: &str) {
    if let Some(spec) = p.spec.as_mut() {
        spec.node_name = Some(node.into());
    }
    if let Some(st) = p.status.as_mut() {
        st.phase = Some("Running".into());
    }
}

#[test]
fn preemption_evicts_the_pod_in_the_way_of_anti_affinity() {
    // Room enough for the preemptor, but the db pod it must avoid is on the only node.
    let objs = preemption_case(
        &[("db", "db", 1000), ("other", "other", 1000)],
        required_anti_affinity(app_term("db", HOSTNAME)),
    );
    let d = run_session_n(&objs, &conf(volcano_testkit::conf::evicting()), 1);
    assert_eq!(d.evictions, [key("ns", "db-0")]);
    assert_eq!(
        d.pipelined,
        [(key("ns", "preemptor-0"), "n1".to_string())],
        "{:?}",
        d.unschedulable
    );
}

#[test]
fn preemption_never_evicts_the_pod_a_required_affinity_needs() {
    // Full node: the db pod the preemptor must join, and a filler.
    let objs = preemption_case(
        &[("db", "db", 1000), ("filler", "filler", 3000)],
        required_affinity(app_term("db", HOSTNAME)),
    );
    let d = run_session_n(&objs, &conf(volcano_testkit::conf::evicting()), 1);
    assert_eq!(d.evictions, [key("ns", "filler-0")]);

    // Only the db pod fills the node: evicting it would leave the preemptor nowhere to go.
    let objs = preemption_case(
        &[("db", "db", 4000)],
        required_affinity(app_term("db", HOSTNAME)),
    );
    let d = run_session_n(&objs, &conf(volcano_testkit::conf::evicting()), 1);
    assert!(d.evictions.is_empty(), "{:?}", d.evictions);
}

#[test]
fn preferred_affinity_draws_the_pod_to_the_zone_of_the_pods_it_names() {
    let mut objs = cluster()
        .with(zoned("n1", "a", 16))
        .with(zoned("n2", "b", 16))
        .with(zoned("n3", "c", 16))
        .with(pod("ns", "cache-0").cpu_milli(500).on("n3").running())
        .with(gang("ns", "web").min(1).pods(1, 1000, GI))
        .objects();
    shape(&mut objs, "cache-", "cache", None);
    shape(
        &mut objs,
        "web-",
        "web",
        Some(preferred_affinity(100, app_term("cache", ZONE))),
    );
    let d = run_session_n(&objs, &default_conf(), 1);
    assert_eq!(bound(&d).get("web-0").map(String::as_str), Some("n3"));
}
