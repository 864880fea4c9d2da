//! Inter-pod affinity and anti-affinity as a user of the cluster sees them: where replicas go,
//! what a gang that cannot be spread waits with, which pods preemption takes out of the way,
//! and that no bound pod ever breaks a required rule (a property over random clusters).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use support::*;
use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{
    Affinity, Namespace, Pod, PodAffinity, PodAffinityTerm, PodAntiAffinity,
    WeightedPodAffinityTerm,
};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use volcano_api::scheduling::PodGroupStatus;
use volcano_scheduler::conf::{DEFAULT_SCHEDULER_CONF, SchedulerConf};
use volcano_testkit::build::*;

const HOSTNAME: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";

fn default_conf() -> SchedulerConf {
    conf(DEFAULT_SCHEDULER_CONF)
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A term selecting pods labelled `app=<app>` over `topology`.
fn app_term(app: &str, topology: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_labels: Some(labels(&[("app", app)])),
            ..Default::default()
        }),
        topology_key: topology.into(),
        ..Default::default()
    }
}

fn required_affinity(t: PodAffinityTerm) -> Affinity {
    Affinity {
        pod_affinity: Some(PodAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![t]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn required_anti_affinity(t: PodAffinityTerm) -> Affinity {
    Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![t]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn preferred_affinity(weight: i32, t: PodAffinityTerm) -> Affinity {
    Affinity {
        pod_affinity: Some(PodAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight,
                    pod_affinity_term: t,
                },
            ]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Gives the pods whose name starts with `prefix` the label `app=<app>` and `affinity`.
fn shape(objs: &mut Objects, prefix: &str, app: &str, affinity: Option<Affinity>) {
    for p in objs.pods.iter_mut().filter(|p| {
        p.metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with(prefix))
    }) {
        p.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("app".into(), app.into());
        if let Some(spec) = p.spec.as_mut() {
            spec.affinity = affinity.clone();
        }
    }
}

fn zoned(name: &str, zone: &str, cpu: i64) -> NodeBuilder {
    node(name)
        .cpu(cpu)
        .mem_gi(16)
        .label(HOSTNAME, name)
        .label(ZONE, zone)
}

fn bound(d: &volcano_scheduler::framework::Decisions) -> HashMap<String, String> {
    d.binds
        .iter()
        .map(|(k, n)| (k.name.clone(), n.clone()))
        .collect()
}

fn set_phase(objs: &mut Objects, pg: &str, phase: &str) {
    for g in objs
        .pod_groups
        .iter_mut()
        .filter(|g| g.metadata.name.as_deref() == Some(pg))
    {
        g.status = Some(PodGroupStatus {
            phase: phase.to_string(),
            ..Default::default()
        });
    }
}

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
        for p in objs.pods.iter_mut().filter(|p| {
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

// ---------------------------------------------------------------------------------------------
// Property: whatever the cluster, no bound pod breaks a required rule.

/// One random pod: its app, its rule kind (0 none, 1 affinity, 2 anti-affinity) towards an
/// app, over hostname or zone, and whether it already runs (on which node).
#[derive(Debug, Clone)]
struct RandomPod {
    app: usize,
    rule: usize,
    target: usize,
    zone_key: bool,
    runs_on: Option<usize>,
    gang: usize,
}

const APPS: [&str; 3] = ["a", "b", "c"];

fn arb_case() -> impl Strategy<Value = (usize, Vec<RandomPod>)> {
    let pod = (
        0..3usize,
        0..3usize,
        0..3usize,
        any::<bool>(),
        prop::option::of(0..6usize),
        0..4usize,
    )
        .prop_map(|(app, rule, target, zone_key, runs_on, gang)| RandomPod {
            app,
            rule,
            target,
            zone_key,
            runs_on,
            gang,
        });
    (2..6usize, prop::collection::vec(pod, 1..14))
}

fn rule_of(p: &RandomPod) -> Option<Affinity> {
    let key = if p.zone_key { ZONE } else { HOSTNAME };
    let t = app_term(APPS[p.target], key);
    match p.rule {
        1 => Some(required_affinity(t)),
        2 => Some(required_anti_affinity(t)),
        _ => None,
    }
}

fn build_case(nodes: usize, pods: &[RandomPod]) -> Objects {
    let mut c = cluster();
    for n in 0..nodes {
        c = c.with(zoned(&format!("n{n}"), &format!("z{}", n % 2), 8));
    }
    let mut objs = c.objects();
    let mut gangs: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, p) in pods.iter().enumerate() {
        let mut pod_obj = match p.runs_on {
            // Running pods keep to what a correct scheduler could have done: checked below.
            Some(n) if n < nodes => pod("ns", &format!("run-{i}"))
                .cpu_milli(100)
                .on(&format!("n{n}"))
                .running()
                .build(),
            _ => {
                *gangs.entry(p.gang).or_default() += 1;
                pod("ns", &format!("g{}-{i}", p.gang))
                    .cpu_milli(100)
                    .group(&format!("g{}", p.gang))
                    .build()
            }
        };
        pod_obj.metadata.labels = Some(labels(&[("app", APPS[p.app])]));
        if let Some(spec) = pod_obj.spec.as_mut() {
            spec.affinity = rule_of(p);
        }
        objs.pods.push(pod_obj);
    }
    for (g, n) in gangs {
        let (pg, _) = gang("ns", &format!("g{g}")).min((n as i32).min(2)).build();
        objs.pod_groups.push(pg);
    }
    objs
}

/// Where each pod is: `(pod, node)` for every pod with a node.
fn placements(objs: &Objects) -> Vec<(&Pod, String)> {
    objs.pods
        .iter()
        .filter_map(|p| {
            let n = p.spec.as_ref()?.node_name.clone()?;
            Some((p, n))
        })
        .collect()
}

fn app(p: &Pod) -> &str {
    p.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("app"))
        .map_or("", String::as_str)
}

/// The required rule `p` on `node` breaks among `all` placed pods, if any.
fn broken(
    p: &Pod,
    node: &str,
    all: &[(&Pod, String)],
    ran_before: &[String],
    objs: &Objects,
) -> Option<String> {
    // Affinity binds the pod that carries it when it is placed, not afterwards: kube-scheduler
    // has no symmetric affinity rule, so a pod that ran before is held to its anti-affinity
    // only.
    let placed_now = !ran_before.contains(&p.metadata.name.clone().unwrap_or_default());
    let label = |n: &str, k: &str| -> Option<String> {
        objs.nodes
            .iter()
            .find(|x| x.metadata.name.as_deref() == Some(n))?
            .metadata
            .labels
            .as_ref()?
            .get(k)
            .cloned()
    };
    let same_domain = |a: &str, b: &str, key: &str| {
        let (x, y) = (label(a, key), label(b, key));
        x.is_some() && x == y
    };
    let others = || {
        all.iter()
            .filter(|(q, _)| q.metadata.name != p.metadata.name)
    };
    let affinity = p.spec.as_ref()?.affinity.as_ref();
    let target = |t: &PodAffinityTerm| {
        t.label_selector
            .as_ref()
            .and_then(|s| s.match_labels.as_ref())
            .and_then(|m| m.get("app"))
            .cloned()
            .unwrap_or_default()
    };
    for t in affinity
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .into_iter()
        .flatten()
    {
        if let Some((q, _)) =
            others().find(|(q, n)| app(q) == target(t) && same_domain(node, n, &t.topology_key))
        {
            return Some(format!(
                "anti-affinity of {:?} to {:?}",
                p.metadata.name, q.metadata.name
            ));
        }
    }
    for t in affinity
        .filter(|_| placed_now)
        .and_then(|a| a.pod_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .into_iter()
        .flatten()
    {
        let served =
            others().any(|(q, n)| app(q) == target(t) && same_domain(node, n, &t.topology_key));
        // kube-scheduler's exception: the first of a group whose term selects itself, when
        // no pod the term selects ran before and no other pod of the group (carrying the
        // same rule) was placed: whichever came second would have had to join it.
        let same_rule = |q: &Pod| {
            q.spec
                .as_ref()
                .and_then(|s| s.affinity.as_ref())
                .and_then(|a| a.pod_affinity.as_ref())
                .and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .as_ref()
                })
                .is_some_and(|ts| {
                    ts.iter()
                        .any(|u| target(u) == target(t) && u.topology_key == t.topology_key)
                })
        };
        let first = app(p) == target(t)
            && label(node, &t.topology_key).is_some()
            && !others().any(|(q, n)| {
                app(q) == target(t)
                    && label(n, &t.topology_key).is_some()
                    && (ran_before.contains(&q.metadata.name.clone().unwrap_or_default())
                        || same_rule(q))
            });
        if !served && !first {
            return Some(format!("affinity of {:?}", p.metadata.name));
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn no_bound_pod_breaks_a_required_rule((nodes, pods) in arb_case()) {
        let mut objs = build_case(nodes, &pods);
        // Only clusters that start valid: a running pod breaking a rule is not the
        // scheduler's doing (and the symmetric check would blame the newcomer).
        let before = placements(&objs);
        let ran_before: Vec<String> = before
            .iter()
            .filter_map(|(p, _)| p.metadata.name.clone())
            .collect();
        prop_assume!(before.iter().all(|(p, n)| broken(p, n, &before, &ran_before, &objs).is_none()));
        let d = run_session_n(&objs, &default_conf(), 1);
        apply(&mut objs, &d);
        // Pods are only added: a broken rule is one a placement of the session broke, the
        // pod's own or, by symmetry, a running pod's anti-affinity.
        let after = placements(&objs);
        for (p, n) in &after {
            let why = broken(p, n, &after, &ran_before, &objs);
            prop_assert!(why.is_none(), "{:?} on {n}: {:?}; binds {:?}", p.metadata.name, why, d.binds);
        }
    }
}
