//! Pod topology spread through whole sessions: pods placed in one session (one gang even)
//! count for the next ones; `minDomains` holds pods back until enough domains exist, with
//! kube-scheduler's reason; and, whatever the cluster, no `DoNotSchedule` constraint ends up
//! broken.

#[allow(dead_code)] // The session helpers are shared; this file needs only some of them.
mod support;

use std::collections::BTreeMap;

use proptest::prelude::*;
use support::*;
use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{Pod, TopologySpreadConstraint};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use volcano_scheduler::conf::SchedulerConf;
use volcano_testkit::build::*;

const ZONE: &str = "topology.kubernetes.io/zone";
const NOT_MATCH: &str = "node(s) didn't match pod topology spread constraints";

fn spread(max_skew: i32, app: &str, min_domains: Option<i32>) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew,
        topology_key: ZONE.into(),
        when_unsatisfiable: "DoNotSchedule".into(),
        label_selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([("app".to_string(), app.to_string())])),
            ..Default::default()
        }),
        min_domains,
        ..Default::default()
    }
}

/// Adds a gang of `pods` pods labelled `app=<app>` spreading by `c`, whose minimum is `min`.
fn add_spread_gang(
    objs: &mut Objects,
    name: &str,
    app: &str,
    pods: usize,
    min: i32,
    c: TopologySpreadConstraint,
) {
    let (pg, group_pods) = gang("ns", name)
        .queue("q")
        .min(min)
        .pods(pods, 500, GI)
        .build();
    objs.pod_groups.push(pg);
    for mut p in group_pods {
        p.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("app".into(), app.into());
        if let Some(spec) = p.spec.as_mut() {
            spec.topology_spread_constraints = Some(vec![c.clone()]);
        }
        objs.pods.push(p.into());
    }
}

/// Nodes `(name, zone)` with room for many pods; a zone of "" leaves the label off.
fn cluster_of(nodes: &[(&str, &str)]) -> Objects {
    cluster()
        .with(queue("q"))
        .with_all(nodes.iter().map(|(name, zone)| {
            let n = node(name).cpu(32).mem_gi(64);
            if zone.is_empty() {
                n
            } else {
                n.label(ZONE, zone)
            }
        }))
        .objects()
}

/// Bound pods per zone, from a session's binds.
fn per_zone(
    objs: &Objects,
    binds: &[(volcano_api::NamespacedName, String)],
) -> BTreeMap<String, usize> {
    let zone_of: BTreeMap<String, String> = objs
        .nodes
        .iter()
        .map(|n| {
            let zone = n
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(ZONE))
                .cloned()
                .unwrap_or_default();
            (n.metadata.name.clone().unwrap_or_default(), zone)
        })
        .collect();
    let mut out = BTreeMap::new();
    for (_, n) in binds {
        *out.entry(zone_of.get(n).cloned().unwrap_or_default())
            .or_insert(0) += 1;
    }
    out
}

#[test]
fn a_gang_of_four_with_max_skew_one_lands_two_and_two_over_two_zones() {
    // Zone a has more room than zone b, so without the constraint the scorer's choice would
    // not have to be even.
    let mut objs = cluster_of(&[("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b")]);
    add_spread_gang(&mut objs, "web", "web", 4, 4, spread(1, "web", None));
    let d = run_session_n(&objs, &SchedulerConf::default_conf(), 0);
    assert_eq!(d.binds.len(), 4);
    assert_eq!(
        per_zone(&objs, &d.binds),
        BTreeMap::from([("a".to_string(), 2), ("b".to_string(), 2)])
    );
}

#[test]
fn pods_placed_in_an_earlier_session_count_like_running_ones() {
    let mut objs = cluster_of(&[("a1", "a"), ("b1", "b")]);
    add_spread_gang(&mut objs, "first", "web", 3, 3, spread(1, "web", None));
    let d = run_session_n(&objs, &SchedulerConf::default_conf(), 0);
    apply(&mut objs, &d);
    add_spread_gang(&mut objs, "second", "web", 1, 1, spread(1, "web", None));
    let d2 = run_session_n(&objs, &SchedulerConf::default_conf(), 1);
    let mut all = d.binds.clone();
    all.extend(d2.binds.clone());
    assert_eq!(
        per_zone(&objs, &all),
        BTreeMap::from([("a".to_string(), 2), ("b".to_string(), 2)])
    );
}

#[test]
fn min_domains_holds_pods_back_until_enough_zones_exist() {
    let mut objs = cluster_of(&[("a1", "a"), ("b1", "b"), ("nozone", "")]);
    add_spread_gang(&mut objs, "web", "web", 4, 1, spread(1, "web", Some(3)));
    let d = run_session_n(&objs, &SchedulerConf::default_conf(), 0);
    // Only two zones while three are required: the minimum counts as 0, so each zone takes
    // one pod; the node without a zone takes none.
    assert_eq!(
        per_zone(&objs, &d.binds),
        BTreeMap::from([("a".to_string(), 1), ("b".to_string(), 1)])
    );
    let why = &d.unschedulable[&key("ns", "web")].message;
    assert!(why.contains(&format!("2 {NOT_MATCH}")), "{why}");
    assert!(
        why.contains(&format!("1 {NOT_MATCH} (missing required label)")),
        "{why}"
    );
}

#[test]
fn a_gang_that_cannot_spread_whole_is_not_placed_at_all() {
    let mut objs = cluster_of(&[("a1", "a"), ("b1", "b")]);
    // Five pods, maxSkew 1, two zones: 3 + 2 works. Five with minDomains 3 cannot: at most
    // one per zone.
    add_spread_gang(&mut objs, "web", "web", 5, 5, spread(1, "web", Some(3)));
    let d = run_session_n(&objs, &SchedulerConf::default_conf(), 0);
    assert!(d.binds.is_empty(), "bound {:?}", d.binds);
}

fn app_of(p: &Pod) -> Option<String> {
    p.metadata.labels.as_ref()?.get("app").cloned()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Random zones (some nodes without one), and gangs of several apps, each app spreading
    /// with its own maxSkew: after two sessions, in every app the fullest zone holds at most
    /// maxSkew more of its pods than the emptiest, and no pod sits on a node without a zone.
    #[test]
    fn no_bound_pod_breaks_a_do_not_schedule_constraint(
        nodes in prop::collection::vec(0usize..4, 1..8),
        gangs in prop::collection::vec((0usize..3, 1usize..=5, 1i32..=5), 1..6),
        skews in prop::collection::vec(1i32..=3, 3),
    ) {
        let names: Vec<(String, String)> = nodes
            .iter()
            .enumerate()
            .map(|(i, z)| (format!("n{i}"), if *z == 3 { String::new() } else { format!("z{z}") }))
            .collect();
        let refs: Vec<(&str, &str)> = names.iter().map(|(n, z)| (n.as_str(), z.as_str())).collect();
        let mut objs = cluster_of(&refs);
        for (i, (app, size, min)) in gangs.iter().enumerate() {
            let skew = skews[*app];
            let app = format!("app{app}");
            let c = spread(skew, &app, None);
            add_spread_gang(&mut objs, &format!("g{i}"), &app, *size, (*min).min(*size as i32), c);
        }
        let conf = SchedulerConf::default_conf();
        for session in 0..2 {
            let d = run_session_n(&objs, &conf, session);
            apply(&mut objs, &d);
        }
        let zone_of: BTreeMap<&str, &str> = refs.iter().copied().collect();
        let zones: Vec<&str> = {
            let mut z: Vec<&str> = refs.iter().map(|(_, z)| *z).filter(|z| !z.is_empty()).collect();
            z.sort();
            z.dedup();
            z
        };
        let mut counts: BTreeMap<String, BTreeMap<&str, i32>> = BTreeMap::new();
        for p in &objs.pods {
            let Some(n) = p.spec.as_ref().and_then(|s| s.node_name.as_deref()) else { continue };
            let zone = zone_of.get(n).copied().unwrap_or("");
            prop_assert!(!zone.is_empty(), "{:?} on {n}, which has no zone", p.metadata.name);
            let app = app_of(p).unwrap_or_default();
            *counts.entry(app).or_default().entry(zone).or_insert(0) += 1;
        }
        for (app, per) in counts {
            let index: usize = app.trim_start_matches("app").parse().unwrap_or(0);
            let skew = skews[index];
            let max = zones.iter().map(|z| per.get(z).copied().unwrap_or(0)).max().unwrap_or(0);
            let min = zones.iter().map(|z| per.get(z).copied().unwrap_or(0)).min().unwrap_or(0);
            prop_assert!(max - min <= skew, "{app}: {per:?} over {zones:?}, maxSkew {skew}");
        }
    }
}
