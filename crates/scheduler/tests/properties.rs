//! Invariants of scheduling sessions that must hold for every cluster, checked with proptest
//! over random clusters, plus plain regressions of behaviour a user notices.
//!
//! The random clusters have 1-12 nodes (some already carrying pods, some carrying more than
//! they now have: out of sync), 1-4 queues (weights, sometimes a capability), 1-8 gangs (random
//! minMember, requests, BestEffort pods, node selectors, tolerations, members already running).
//! Each case runs a few sessions one after the other, applying the binds as a cluster would, and
//! checks after each one:
//!
//! - no node holds more than its allocatable because of this scheduler, and an out-of-sync node
//!   takes no new pods;
//! - a gang is placed whole or not at all;
//! - a queue never exceeds its capability;
//! - the same input gives the same decisions, all of them;
//! - nothing panics, whatever the input.
//!
//! The first three are the scheduler's invariant oracle (`volcano_scheduler::invariants`),
//! which the simulator's fault checker asks too; it counts resources independently of the
//! scheduler's cache, from the Pod and Node objects.

mod support;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use support::*;
use volcano_api::{NamespacedName, Objects};
use volcano_scheduler::conf::{DEFAULT_SCHEDULER_CONF, SchedulerConf};
use volcano_scheduler::framework::Decisions;
use volcano_scheduler::invariants::{self, Violation};
use volcano_testkit::build::*;
use volcano_testkit::conf as kit;

// ---------------------------------------------------------------------------------------------
// Configurations

#[derive(Debug, Clone, Copy)]
enum Conf {
    Default,
    Alt,
    Evicting,
}

impl Conf {
    fn get(self) -> SchedulerConf {
        match self {
            Conf::Default => conf(DEFAULT_SCHEDULER_CONF),
            Conf::Alt => conf(kit::binpack()),
            Conf::Evicting => conf(kit::evicting()),
        }
    }
}

fn arb_conf() -> impl Strategy<Value = Conf> {
    prop_oneof![Just(Conf::Default), Just(Conf::Alt), Just(Conf::Evicting)]
}

// ---------------------------------------------------------------------------------------------
// The invariants: the scheduler's oracle, which counts resources from the Pod and Node objects
// with the API crate's quantity parsing, never from the scheduler's cache

/// Fails with every violation of the oracle that `wanted` selects.
fn oracle(
    before: &Objects,
    d: &Decisions,
    wanted: impl Fn(&Violation) -> bool,
) -> Result<(), TestCaseError> {
    let broken: Vec<String> = invariants::check(before, d)
        .iter()
        .filter(|v| wanted(v))
        .map(Violation::to_string)
        .collect();
    prop_assert!(broken.is_empty(), "{}", broken.join("\n"));
    Ok(())
}

/// No node over its allocatable because of this session, no new pod on an out-of-sync node,
/// out-of-sync nodes reported as the objects show them, no pod bound twice or unknown.
fn check_nodes(before: &Objects, d: &Decisions) -> Result<(), TestCaseError> {
    oracle(before, d, |v| {
        matches!(
            v,
            Violation::UnknownPod { .. }
                | Violation::BoundTwice { .. }
                | Violation::NodeOverAllocatable { .. }
                | Violation::OutOfSyncMisreported { .. }
        )
    })
}

/// A gang that got new binds this session has at least minMember members ready (Volcano's
/// `JobReady`: members on a node plus pending BestEffort ones).
fn check_gangs(before: &Objects, d: &Decisions) -> Result<(), TestCaseError> {
    oracle(before, d, |v| {
        matches!(v, Violation::GangPartlyPlaced { .. })
    })
}

/// A queue within its capability before the session is within it after.
fn check_queues(before: &Objects, d: &Decisions) -> Result<(), TestCaseError> {
    oracle(before, d, |v| {
        matches!(v, Violation::QueueOverCapability { .. })
    })
}

/// Runs `sessions` sessions one after the other, checking each one's decisions against the
/// objects it started from, then applying them.
fn sessions(
    mut objs: Objects,
    conf: &SchedulerConf,
    sessions: u32,
    check: impl Fn(&Objects, &Decisions) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    for i in 1..=sessions {
        let d = run_session_n(&objs, conf, i);
        check(&objs, &d).map_err(|e| TestCaseError::fail(format!("session {i}: {e}")))?;
        apply(&mut objs, &d);
    }
    Ok(())
}

#[path = "properties/clusters.rs"]
mod clusters;

use clusters::{arb_cluster, arb_wild};

/// `cases` per property, unless `PROPTEST_CASES` asks for more (or fewer) for a deeper run.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        // Shrunk failures are reported in the test output; no files are written.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn nodes_never_exceed_allocatable(c in arb_cluster(), conf in arb_conf()) {
        sessions(c.objects(), &conf.get(), 3, check_nodes)?;
    }

    #[test]
    fn gangs_are_placed_whole_or_not_at_all(c in arb_cluster(), conf in arb_conf()) {
        sessions(c.objects(), &conf.get(), 3, check_gangs)?;
    }

    #[test]
    fn queues_never_exceed_capability(c in arb_cluster(), conf in arb_conf()) {
        sessions(c.objects(), &conf.get(), 3, check_queues)?;
    }

    #[test]
    fn same_input_gives_same_decisions(c in arb_cluster(), conf in arb_conf()) {
        let conf = conf.get();
        let mut objs = c.objects();
        for i in 1..=3 {
            let a = run_session_n(&objs, &conf, i);
            let b = run_session_n(&objs.clone(), &conf, i);
            prop_assert_eq!(&a, &b, "session {} decided differently on the same input", i);
            apply(&mut objs, &a);
        }
    }

    #[test]
    fn no_panic_for_any_input(w in arb_wild(), conf in arb_conf()) {
        let conf = conf.get();
        let mut objs = w.objects();
        for i in 1..=3 {
            let d = run_session_n(&objs, &conf, i);
            apply(&mut objs, &d);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Regressions a user would notice

/// Runs one session over `objs` with the built-in configuration.
fn session(objs: &Objects) -> Decisions {
    run_session_n(objs, &SchedulerConf::default_conf(), 1)
}

/// The pods bound to `node` in the decisions, by `ns/name`.
fn bound_to(d: &Decisions, node: &str) -> Vec<NamespacedName> {
    d.binds
        .iter()
        .filter(|(_, n)| n == node)
        .map(|(p, _)| p.clone())
        .collect()
}

/// Volcano #4028: backfill used `break` on a BestEffort pod that fits nowhere, so one pod with a
/// nodeSelector matching no node stopped every BestEffort pod after it for the whole session.
#[test]
fn unplaceable_best_effort_pod_does_not_block_later_ones() {
    let objs = cluster()
        .with(node("n1").cpu(4).mem_gi(8).label("zone", "a"))
        .with(node("n2").cpu(4).mem_gi(8).label("zone", "b"))
        .with(
            // `be-0` sorts first (name index 0) and matches no node.
            gang("ns", "be")
                .min(1)
                .pods_like(1, template().node_selector("zone", "nowhere"))
                .best_effort_pods(3),
        )
        .with(gang("ns", "later").min(1).best_effort_pods(2))
        .objects();
    let d = session(&objs);
    let mut bound: Vec<&NamespacedName> = d.binds.iter().map(|(p, _)| p).collect();
    bound.sort();
    assert_eq!(
        bound,
        [
            &key("ns", "be-1"),
            &key("ns", "be-2"),
            &key("ns", "be-3"),
            &key("ns", "later-0"),
            &key("ns", "later-1")
        ],
        "decisions: {d:#?}"
    );
    let why = d
        .unschedulable
        .get(&key("ns", "be"))
        .map(|u| u.message.clone())
        .unwrap_or_default();
    assert!(why.contains("affinity/selector"), "reason for ns/be: {why}");
}

/// A node whose allocatable shrank below what its running pods request is out of sync: the
/// session does not panic, the node takes no new pods, and the other nodes still do.
#[test]
fn out_of_sync_node_takes_no_new_pods() {
    let objs = cluster()
        .with(node("shrunk").cpu(2).mem_gi(4))
        .with(node("healthy").cpu(8).mem_gi(16))
        .with(
            pod("sys", "big")
                .cpu_milli(3000)
                .mem(2 * GI)
                .on("shrunk")
                .running(),
        )
        .with(gang("ns", "job").min(3).pods(3, 500, GI))
        .with(gang("ns", "be").min(1).best_effort_pods(2))
        .objects();
    let d = session(&objs);
    assert_eq!(d.out_of_sync_nodes, ["shrunk"]);
    assert!(bound_to(&d, "shrunk").is_empty(), "binds: {:?}", d.binds);
    let mut on_healthy = bound_to(&d, "healthy");
    on_healthy.sort();
    assert_eq!(
        on_healthy,
        [
            key("ns", "be-0"),
            key("ns", "be-1"),
            key("ns", "job-0"),
            key("ns", "job-1"),
            key("ns", "job-2")
        ]
    );
}

/// The out-of-sync node of [`out_of_sync_node_takes_no_new_pods`] recovers by itself: once the
/// pod that overfilled it is gone, the next session finds it in sync and places work on it.
#[test]
fn out_of_sync_node_recovers_once_its_pods_fit_again() {
    let mut objs = cluster()
        .with(node("shrunk").cpu(2).mem_gi(4))
        .with(
            pod("sys", "big")
                .cpu_milli(3000)
                .mem(2 * GI)
                .on("shrunk")
                .running(),
        )
        .with(gang("ns", "job").min(1).pods(1, 500, GI))
        .objects();
    let first = session(&objs);
    assert_eq!(first.out_of_sync_nodes, ["shrunk"]);
    assert!(first.binds.is_empty(), "binds: {:?}", first.binds);
    objs.pods
        .retain(|p| p.metadata.name.as_deref() != Some("big"));
    let second = session(&objs);
    assert!(
        second.out_of_sync_nodes.is_empty(),
        "{:?}",
        second.out_of_sync_nodes
    );
    assert_eq!(bound_to(&second, "shrunk"), [key("ns", "job-0")]);
}

/// Two queues of weight 1 and 3 with more work than the cluster holds share it 1:3 under
/// proportion.
#[test]
fn queues_share_a_contended_cluster_by_weight() {
    let objs = cluster()
        .with_all((0..8).map(|i| node(&format!("n{i}")).cpu(4).mem_gi(64)))
        .with(queue("light").weight(1))
        .with(queue("heavy").weight(3))
        .with_all((0..20).map(|i| {
            gang("ns", &format!("light-{i}"))
                .queue("light")
                .min(2)
                .pods(2, 1000, GI)
        }))
        .with_all((0..20).map(|i| {
            gang("ns", &format!("heavy-{i}"))
                .queue("heavy")
                .min(2)
                .pods(2, 1000, GI)
        }))
        .objects();
    let d = session(&objs);
    let count = |prefix: &str| {
        d.binds
            .iter()
            .filter(|(p, _)| p.namespace == "ns" && p.name.starts_with(prefix))
            .count()
    };
    let (light, heavy) = (count("light-"), count("heavy-"));
    // 32 CPUs: 8 deserved by `light`, 24 by `heavy`, one CPU per pod.
    assert!(
        (7..=9).contains(&light) && (23..=25).contains(&heavy),
        "light {light} pods, heavy {heavy} pods; expected about 8 and 24"
    );
    assert_eq!(light + heavy, 32, "the cluster is full: {light} + {heavy}");
}
