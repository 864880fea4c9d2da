//! Cases in the spirit of kube-scheduler's `filtering_test.go` table, with our own data.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use volcano_api::{Objects, k8s_openapi};
use volcano_testkit::build::*;

use super::constraints::SCHEDULE_ANYWAY;
use super::*;
use crate::cache::{CacheOptions, build_snapshot};
use crate::model::TaskStatus;

pub(crate) const ZONE: &str = "topology.kubernetes.io/zone";

pub(crate) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A constraint over `key` selecting `app=<app>`.
pub(crate) fn spread(max_skew: i32, key: &str, when: &str, app: &str) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: key.into(),
        when_unsatisfiable: when.into(),
        label_selector: Some(LabelSelector {
            match_labels: Some(labels(&[("app", app)])),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A pod named `name` with labels, constraints, and (when `node` is given) running there.
pub(crate) fn labelled(
    ns: &str,
    name: &str,
    pod_labels: &[(&str, &str)],
    constraints: Vec<TopologySpreadConstraint>,
    node: Option<&str>,
) -> Pod {
    let mut b = pod(ns, name).cpu_milli(100);
    if let Some(n) = node {
        b = b.on(n).running();
    }
    let mut p = b.build();
    p.metadata.labels = Some(labels(pod_labels));
    if !constraints.is_empty()
        && let Some(spec) = p.spec.as_mut()
    {
        spec.topology_spread_constraints = Some(constraints);
    }
    p
}

/// Nodes `(name, zone)`; a zone of "" leaves the label off.
pub(crate) fn zoned(nodes: &[(&str, &str)]) -> Objects {
    cluster()
        .with_all(nodes.iter().map(|(name, zone)| {
            let n = node(name).cpu(8).mem_gi(16);
            let n = n.label("kubernetes.io/hostname", name);
            if zone.is_empty() {
                n
            } else {
                n.label(ZONE, zone)
            }
        }))
        .objects()
}

pub(crate) fn snapshot(objs: &Objects) -> Snapshot {
    match build_snapshot(objs, &CacheOptions::default()) {
        Ok(s) => s,
        Err(e) => panic!("test objects rejected: {e}"),
    }
}

pub(crate) fn task(s: &Snapshot, name: &str) -> TaskId {
    match s.tasks.iter().position(|t| t.name == name) {
        Some(i) => TaskId(i as u32),
        None => panic!("no task {name}"),
    }
}

pub(crate) fn node_id(s: &Snapshot, name: &str) -> NodeId {
    match s.node_index.get(name) {
        Some(&n) => n,
        None => panic!("no node {name}"),
    }
}

/// The filter's answer for task `t` on each named node: `None` when it passes.
fn answers(f: &TopologySpread, s: &Snapshot, t: &str, nodes: &[&str]) -> Vec<Option<String>> {
    let t = task(s, t);
    nodes
        .iter()
        .map(|n| {
            f.filter(s, t, node_id(s, n))
                .err()
                .map(|e| e.reason.into_owned())
        })
        .collect()
}

fn filter_of(s: &Snapshot) -> TopologySpread {
    TopologySpread::new(&Arguments::default(), s)
}

const FAIL: Option<&str> = Some(ERR_CONSTRAINTS_NOT_MATCH);

fn expect(got: Vec<Option<String>>, want: &[Option<&str>]) {
    let got: Vec<Option<&str>> = got.iter().map(|g| g.as_deref()).collect();
    assert_eq!(got, want);
}

/// zone-a: node-a1 (2 matching pods), node-a2 (1); zone-b: node-b1 (0), node-b2 (1).
fn three_to_one(incoming: Vec<TopologySpreadConstraint>) -> Objects {
    let mut objs = zoned(&[
        ("node-a1", "zone-a"),
        ("node-a2", "zone-a"),
        ("node-b1", "zone-b"),
        ("node-b2", "zone-b"),
    ]);
    for (i, n) in ["node-a1", "node-a1", "node-a2", "node-b2"]
        .iter()
        .enumerate()
    {
        let name = format!("running-{i}");
        objs.pods
            .push(labelled("ns", &name, &[("app", "web")], vec![], Some(n)).into());
    }
    objs.pods
        .push(labelled("ns", "p", &[("app", "web")], incoming, None).into());
    objs
}

const NODES: [&str; 4] = ["node-a1", "node-a2", "node-b1", "node-b2"];

#[test]
fn skew_counts_the_domain_plus_the_pod_against_the_emptiest_domain() {
    for skew in [1, 2] {
        let objs = three_to_one(vec![spread(skew, ZONE, DO_NOT_SCHEDULE, "web")]);
        let s = snapshot(&objs);
        // zone-a: 3 + 1 − 1 = 3; zone-b: 1 + 1 − 1 = 1.
        expect(
            answers(&filter_of(&s), &s, "p", &NODES),
            &[FAIL, FAIL, None, None],
        );
    }
    let objs = three_to_one(vec![spread(3, ZONE, DO_NOT_SCHEDULE, "web")]);
    let s = snapshot(&objs);
    expect(
        answers(&filter_of(&s), &s, "p", &NODES),
        &[None, None, None, None],
    );
}

#[test]
fn schedule_anyway_constraints_never_filter() {
    let objs = three_to_one(vec![spread(1, ZONE, SCHEDULE_ANYWAY, "web")]);
    let s = snapshot(&objs);
    expect(
        answers(&filter_of(&s), &s, "p", &NODES),
        &[None, None, None, None],
    );
}

#[test]
fn a_pod_not_matching_its_own_selector_adds_nothing_to_the_skew() {
    let mut objs = three_to_one(vec![]);
    objs.pods.pop();
    objs.pods.push(
        labelled(
            "ns",
            "p",
            &[("app", "other")],
            vec![spread(2, ZONE, DO_NOT_SCHEDULE, "web")],
            None,
        )
        .into(),
    );
    let s = snapshot(&objs);
    // zone-a: 3 + 0 − 1 = 2 ≤ 2.
    expect(
        answers(&filter_of(&s), &s, "p", &NODES),
        &[None, None, None, None],
    );
}

#[test]
fn a_node_without_the_topology_key_fails_without_remedy() {
    let mut objs = three_to_one(vec![spread(1, ZONE, DO_NOT_SCHEDULE, "web")]);
    objs.nodes.extend(zoned(&[("node-c", "")]).nodes);
    let s = snapshot(&objs);
    let f = filter_of(&s);
    let err = f.filter(&s, task(&s, "p"), node_id(&s, "node-c"));
    assert_eq!(err, Err(FitReason::unresolvable(ERR_MISSING_LABEL)));
    // A node missing the key takes no part in the domains either.
    expect(answers(&f, &s, "p", &NODES), &[FAIL, FAIL, None, None]);
}

#[test]
fn pods_of_other_namespaces_and_terminating_pods_do_not_count() {
    let mut objs = zoned(&[("node-a", "zone-a"), ("node-b", "zone-b")]);
    let mut terminating = labelled("ns", "leaving", &[("app", "web")], vec![], Some("node-a"));
    terminating.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    objs.pods.push(terminating.into());
    objs.pods.push(
        labelled(
            "other",
            "elsewhere",
            &[("app", "web")],
            vec![],
            Some("node-a"),
        )
        .into(),
    );
    objs.pods.push(
        labelled(
            "ns",
            "p",
            &[("app", "web")],
            vec![spread(1, ZONE, DO_NOT_SCHEDULE, "web")],
            None,
        )
        .into(),
    );
    let s = snapshot(&objs);
    expect(
        answers(&filter_of(&s), &s, "p", &["node-a", "node-b"]),
        &[None, None],
    );
}

#[test]
fn fewer_domains_than_min_domains_make_the_minimum_zero() {
    let mut objs = zoned(&[("node-a", "zone-a"), ("node-b", "zone-b")]);
    for (i, n) in ["node-a", "node-b"].iter().enumerate() {
        let name = format!("running-{i}");
        objs.pods
            .push(labelled("ns", &name, &[("app", "web")], vec![], Some(n)).into());
    }
    let mut c = spread(1, ZONE, DO_NOT_SCHEDULE, "web");
    c.min_domains = Some(3);
    objs.pods
        .push(labelled("ns", "p", &[("app", "web")], vec![c.clone()], None).into());
    let s = snapshot(&objs);
    // 1 + 1 − 0 > 1 everywhere: a third zone is needed.
    expect(
        answers(&filter_of(&s), &s, "p", &["node-a", "node-b"]),
        &[FAIL, FAIL],
    );
    // With two domains required, the minimum is the real one: 1 + 1 − 1 = 1.
    c.min_domains = Some(2);
    objs.pods.pop();
    objs.pods
        .push(labelled("ns", "p", &[("app", "web")], vec![c], None).into());
    let s = snapshot(&objs);
    expect(
        answers(&filter_of(&s), &s, "p", &["node-a", "node-b"]),
        &[None, None],
    );
}

/// zone-a: node-a (1 matching pod, pool=x); zone-b: node-b (1, pool=x); zone-c: node-c (0,
/// no pool, tainted). The incoming pod selects pool=x.
fn three_zones(c: TopologySpreadConstraint) -> Objects {
    let mut objs = cluster()
        .with(
            node("node-a")
                .cpu(8)
                .mem_gi(16)
                .label(ZONE, "zone-a")
                .label("pool", "x"),
        )
        .with(
            node("node-b")
                .cpu(8)
                .mem_gi(16)
                .label(ZONE, "zone-b")
                .label("pool", "x"),
        )
        .with(
            node("node-c")
                .cpu(8)
                .mem_gi(16)
                .label(ZONE, "zone-c")
                .taint("dedicated", "db", "NoSchedule"),
        )
        .objects();
    for (i, n) in ["node-a", "node-b"].iter().enumerate() {
        let name = format!("running-{i}");
        objs.pods
            .push(labelled("ns", &name, &[("app", "web")], vec![], Some(n)).into());
    }
    let mut p = labelled("ns", "p", &[("app", "web")], vec![c], None);
    if let Some(spec) = p.spec.as_mut() {
        spec.node_selector = Some(labels(&[("pool", "x")]));
    }
    objs.pods.push(p.into());
    objs
}

#[test]
fn node_affinity_policy_decides_whether_excluded_nodes_form_domains() {
    // Honor (default): zone-c is not a domain, the minimum is 1: 1 + 1 − 1 = 1.
    let objs = three_zones(spread(1, ZONE, DO_NOT_SCHEDULE, "web"));
    let s = snapshot(&objs);
    expect(
        answers(&filter_of(&s), &s, "p", &["node-a", "node-b"]),
        &[None, None],
    );
    // Ignore: zone-c counts with 0 pods: 1 + 1 − 0 = 2.
    let mut c = spread(1, ZONE, DO_NOT_SCHEDULE, "web");
    c.node_affinity_policy = Some("Ignore".into());
    let objs = three_zones(c);
    let s = snapshot(&objs);
    expect(
        answers(&filter_of(&s), &s, "p", &["node-a", "node-b"]),
        &[FAIL, FAIL],
    );
}

#[test]
fn node_taints_policy_honor_leaves_untolerated_nodes_out() {
    let mut c = spread(1, ZONE, DO_NOT_SCHEDULE, "web");
    c.node_affinity_policy = Some("Ignore".into());
    c.node_taints_policy = Some("Honor".into());
    let objs = three_zones(c);
    let s = snapshot(&objs);
    expect(
        answers(&filter_of(&s), &s, "p", &["node-a", "node-b"]),
        &[None, None],
    );
}

#[test]
fn match_label_keys_narrow_the_selector_to_the_pods_own_values() {
    let mut objs = zoned(&[("node-a", "zone-a"), ("node-b", "zone-b")]);
    for i in 0..2 {
        let name = format!("old-{i}");
        objs.pods.push(
            labelled(
                "ns",
                &name,
                &[("app", "web"), ("version", "v1")],
                vec![],
                Some("node-a"),
            )
            .into(),
        );
    }
    let mut c = spread(1, ZONE, DO_NOT_SCHEDULE, "web");
    c.match_label_keys = Some(vec!["version".into()]);
    objs.pods.push(
        labelled(
            "ns",
            "p",
            &[("app", "web"), ("version", "v2")],
            vec![c.clone()],
            None,
        )
        .into(),
    );
    let s = snapshot(&objs);
    expect(
        answers(&filter_of(&s), &s, "p", &["node-a", "node-b"]),
        &[None, None],
    );
    // Without the key, the v1 pods count and zone-a is full.
    c.match_label_keys = None;
    objs.pods.pop();
    objs.pods.push(
        labelled(
            "ns",
            "p",
            &[("app", "web"), ("version", "v2")],
            vec![c],
            None,
        )
        .into(),
    );
    let s = snapshot(&objs);
    expect(
        answers(&filter_of(&s), &s, "p", &["node-a", "node-b"]),
        &[FAIL, None],
    );
}

#[test]
fn placements_and_their_undoing_in_the_session_move_the_counts() {
    let mut objs = zoned(&[("node-a", "zone-a"), ("node-b", "zone-b")]);
    for name in ["p1", "p2"] {
        objs.pods.push(
            labelled(
                "ns",
                name,
                &[("app", "web")],
                vec![spread(1, ZONE, DO_NOT_SCHEDULE, "web")],
                None,
            )
            .into(),
        );
    }
    let mut s = snapshot(&objs);
    let mut f = filter_of(&s);
    expect(answers(&f, &s, "p2", &["node-a", "node-b"]), &[None, None]);
    let p1 = task(&s, "p1");
    s.place(p1, node_id(&s, "node-a"), TaskStatus::Allocated);
    f.on_allocate(&s, p1);
    expect(answers(&f, &s, "p2", &["node-a", "node-b"]), &[FAIL, None]);
    // A statement discard takes the task off its node before telling the plugins.
    s.unplace(p1, TaskStatus::Pending);
    f.on_deallocate(&s, p1);
    expect(answers(&f, &s, "p2", &["node-a", "node-b"]), &[None, None]);
}

#[test]
fn an_eviction_in_the_session_stops_the_pod_counting() {
    let mut objs = zoned(&[("node-a", "zone-a"), ("node-b", "zone-b")]);
    objs.pods
        .push(labelled("ns", "victim", &[("app", "web")], vec![], Some("node-a")).into());
    objs.pods.push(
        labelled(
            "ns",
            "p",
            &[("app", "web")],
            vec![spread(1, ZONE, DO_NOT_SCHEDULE, "web")],
            None,
        )
        .into(),
    );
    let mut s = snapshot(&objs);
    let mut f = filter_of(&s);
    expect(answers(&f, &s, "p", &["node-a", "node-b"]), &[FAIL, None]);
    // Evicted: still on its node, releasing, but no longer counted.
    let victim = task(&s, "victim");
    s.update_on_node(victim, TaskStatus::Releasing);
    f.on_deallocate(&s, victim);
    expect(answers(&f, &s, "p", &["node-a", "node-b"]), &[None, None]);
    // The eviction undone: it counts again.
    s.update_on_node(victim, TaskStatus::Running);
    f.on_allocate(&s, victim);
    expect(answers(&f, &s, "p", &["node-a", "node-b"]), &[FAIL, None]);
}

#[test]
fn nodes_missing_another_constraints_key_do_not_count() {
    // node-a2 has a zone but no hostname: with constraints on both keys, its pods count in no
    // zone, so zone-a holds 0 matching pods, as zone-b does.
    let mut objs = zoned(&[("node-a1", "zone-a"), ("node-b1", "zone-b")]);
    objs.nodes.push(
        node("node-a2")
            .cpu(8)
            .mem_gi(16)
            .label(ZONE, "zone-a")
            .build(),
    );
    objs.pods
        .push(labelled("ns", "running", &[("app", "web")], vec![], Some("node-a2")).into());
    let both = vec![
        spread(1, ZONE, DO_NOT_SCHEDULE, "web"),
        spread(1, "kubernetes.io/hostname", DO_NOT_SCHEDULE, "web"),
    ];
    objs.pods
        .push(labelled("ns", "p", &[("app", "web")], both, None).into());
    let s = snapshot(&objs);
    expect(
        answers(&filter_of(&s), &s, "p", &["node-a1", "node-b1"]),
        &[None, None],
    );
    // With the zone constraint alone, node-a2 counts: zone-a is one ahead.
    let mut objs = objs.clone();
    objs.pods.pop();
    objs.pods.push(
        labelled(
            "ns",
            "p",
            &[("app", "web")],
            vec![spread(1, ZONE, DO_NOT_SCHEDULE, "web")],
            None,
        )
        .into(),
    );
    let s = snapshot(&objs);
    expect(
        answers(&filter_of(&s), &s, "p", &["node-a1", "node-b1"]),
        &[FAIL, None],
    );
}

#[test]
fn listed_default_constraints_apply_to_pods_declaring_none() {
    let mut objs = zoned(&[("node-a", "zone-a"), ("node-b", "zone-b")]);
    objs.pods
        .push(labelled("ns", "running", &[("app", "web")], vec![], Some("node-a")).into());
    objs.pods
        .push(labelled("ns", "p", &[("app", "web")], vec![], None).into());
    let s = snapshot(&objs);
    let args: Arguments = match serde_yaml_ng::from_str(
        "podtopologyspread.defaultingType: List\n\
         podtopologyspread.defaultConstraints:\n\
         - maxSkew: 1\n  topologyKey: topology.kubernetes.io/zone\n  \
         whenUnsatisfiable: DoNotSchedule\n  matchLabelKeys: [app]\n",
    ) {
        Ok(map) => Arguments(map),
        Err(e) => panic!("test arguments do not parse: {e}"),
    };
    let f = TopologySpread::new(&args, &s);
    expect(answers(&f, &s, "p", &["node-a", "node-b"]), &[FAIL, None]);
    // Under the System defaulting type nothing selects the pod: no constraint applies.
    expect(
        answers(&filter_of(&s), &s, "p", &["node-a", "node-b"]),
        &[None, None],
    );
}
