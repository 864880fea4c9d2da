//! Inter-pod affinity over random clusters: whatever the nodes, the pods and their rules, no
//! pod a session binds breaks a required affinity or anti-affinity rule, its own or (by
//! symmetry) a running pod's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Each test file uses some of the shared helpers.
#[path = "inter_pod_affinity/builders.rs"]
mod builders;
#[allow(dead_code)]
mod support;

use std::collections::BTreeMap;

use builders::*;
use proptest::prelude::*;
use support::*;
use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{Affinity, Pod, PodAffinityTerm};
use volcano_testkit::build::*;

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
        objs.pods.push(pod_obj.into());
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
            Some((&**p, n))
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
        // A pod of the group with the same rule that another selected pod serves may have come
        // after that pod, and so after `p` too: the order of the session's placements is not
        // known here, so only one left with nothing else beside it rules out `p` being first.
        let served_without_p = |q: &Pod, qn: &str| {
            others().any(|(r, rn)| {
                r.metadata.name != q.metadata.name
                    && app(r) == target(t)
                    && same_domain(qn, rn, &t.topology_key)
            })
        };
        let first = app(p) == target(t)
            && label(node, &t.topology_key).is_some()
            && !others().any(|(q, n)| {
                app(q) == target(t)
                    && label(n, &t.topology_key).is_some()
                    && (ran_before.contains(&q.metadata.name.clone().unwrap_or_default())
                        || (same_rule(q) && !served_without_p(q, n)))
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
