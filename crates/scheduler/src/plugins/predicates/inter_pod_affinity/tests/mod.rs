//! The filter's rule, case by case, in the spirit of kube-scheduler's `filtering_test.go`
//! table: clusters built as a user would write them, run through the cache into a snapshot,
//! and every node's verdict for one pod checked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::{Affinity, Namespace, PodAffinityTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use volcano_api::{Objects, k8s_openapi};
use volcano_testkit::build::{cluster, gang, pod};

pub(in crate::plugins) mod fixtures;

use super::*;
pub(in crate::plugins) use fixtures::*;

fn both(a: Affinity, b: Affinity) -> Affinity {
    Affinity {
        pod_affinity: a.pod_affinity,
        pod_anti_affinity: b.pod_anti_affinity,
        ..Default::default()
    }
}

/// Each node's verdict for `name`: `None` when it fits, else the reason and whether it is
/// unresolvable.
fn verdicts(
    s: &Snapshot,
    f: &InterPodAffinity,
    name: &str,
) -> Vec<(String, Option<(String, bool)>)> {
    let t = task(s, name);
    let mut out: Vec<_> = s
        .node_ids()
        .map(|n| {
            let v = f.filter(s, t, n).err().map(|e| {
                assert!(e.depends_on_pods, "{} must not be cached", e.reason);
                (e.reason.into_owned(), e.unresolvable)
            });
            (s.node(n).name.clone(), v)
        })
        .collect();
    out.sort();
    out
}

fn check(objs: &Objects, expect: &[(&str, Option<&str>)]) {
    let s = snapshot(objs);
    let f = InterPodAffinity::new(&s);
    let got = verdicts(&s, &f, "incoming");
    let want: Vec<(String, Option<(String, bool)>)> = expect
        .iter()
        .map(|(n, r)| {
            let v = r.map(|r| (r.to_string(), r == AFFINITY_MISMATCH));
            (n.to_string(), v)
        })
        .collect();
    assert_eq!(got, want);
}

const AFF: Option<&str> = Some(AFFINITY_MISMATCH);
const ANTI: Option<&str> = Some(ANTI_AFFINITY_MISMATCH);
const EXISTING: Option<&str> = Some(EXISTING_ANTI_AFFINITY_MISMATCH);

#[test]
fn a_pod_without_terms_fits_everywhere() {
    let mut objs = four_nodes();
    running(&mut objs, "ns", "web", "n1", &[("app", "web")], None);
    incoming(&mut objs, "ns", &[("app", "web")], None);
    check(
        &objs,
        &[("n1", None), ("n2", None), ("n3", None), ("n4", None)],
    );
}

#[test]
fn affinity_needs_a_matching_pod_in_the_node_zone_and_the_zone_label() {
    let mut objs = four_nodes();
    running(&mut objs, "ns", "db", "n1", &[("app", "db")], None);
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(affinity(vec![term("app", "In", &["db"], "zone")])),
    );
    check(
        &objs,
        &[("n1", None), ("n2", None), ("n3", AFF), ("n4", AFF)],
    );
}

#[test]
fn affinity_with_not_in_selects_the_other_pods() {
    let mut objs = four_nodes();
    running(&mut objs, "ns", "db", "n3", &[("app", "db")], None);
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(affinity(vec![term(
            "app",
            "NotIn",
            &["web", "cache"],
            "zone",
        )])),
    );
    check(
        &objs,
        &[("n1", AFF), ("n2", AFF), ("n3", None), ("n4", AFF)],
    );
}

#[test]
fn affinity_looks_only_in_the_pods_namespace_by_default() {
    let mut objs = four_nodes();
    running(&mut objs, "other", "db", "n1", &[("app", "db")], None);
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(affinity(vec![term("app", "In", &["db"], "zone")])),
    );
    check(&objs, &[("n1", AFF), ("n2", AFF), ("n3", AFF), ("n4", AFF)]);
}

#[test]
fn all_affinity_terms_must_be_met_by_one_and_the_same_pod() {
    let mut objs = four_nodes();
    running(&mut objs, "ns", "a", "n1", &[("app", "a")], None);
    running(&mut objs, "ns", "b", "n2", &[("tier", "b")], None);
    let terms = vec![
        term("app", "In", &["a"], "zone"),
        term("tier", "In", &["b"], "zone"),
    ];
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(affinity(terms.clone())),
    );
    check(&objs, &[("n1", AFF), ("n2", AFF), ("n3", AFF), ("n4", AFF)]);

    // One pod with both labels in z2 satisfies both terms there.
    running(
        &mut objs,
        "ns",
        "ab",
        "n3",
        &[("app", "a"), ("tier", "b")],
        None,
    );
    check(
        &objs,
        &[("n1", AFF), ("n2", AFF), ("n3", None), ("n4", AFF)],
    );
}

#[test]
fn the_first_pod_of_a_self_affine_group_goes_to_any_node_with_the_key() {
    let mut objs = four_nodes();
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(affinity(vec![term("app", "In", &["web"], "zone")])),
    );
    check(
        &objs,
        &[("n1", None), ("n2", None), ("n3", None), ("n4", AFF)],
    );

    // Once one of the group runs, the others must join its zone.
    running(&mut objs, "ns", "web-0", "n3", &[("app", "web")], None);
    check(
        &objs,
        &[("n1", AFF), ("n2", AFF), ("n3", None), ("n4", AFF)],
    );
}

#[test]
fn a_pod_that_does_not_match_its_own_affinity_is_no_first_of_group() {
    let mut objs = four_nodes();
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(affinity(vec![term("app", "In", &["db"], "zone")])),
    );
    check(&objs, &[("n1", AFF), ("n2", AFF), ("n3", AFF), ("n4", AFF)]);
}

#[test]
fn anti_affinity_keeps_the_pod_out_of_the_zone_of_a_matching_pod() {
    let mut objs = four_nodes();
    running(&mut objs, "ns", "db", "n1", &[("app", "db")], None);
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(anti_affinity(vec![term("app", "In", &["db"], "zone")])),
    );
    // A node without the key is no domain of the term: it is allowed.
    check(
        &objs,
        &[("n1", ANTI), ("n2", ANTI), ("n3", None), ("n4", None)],
    );
}

#[test]
fn any_anti_affinity_term_that_matches_forbids() {
    let mut objs = four_nodes();
    running(&mut objs, "ns", "db", "n1", &[("app", "db")], None);
    running(&mut objs, "ns", "cache", "n3", &[("app", "cache")], None);
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(anti_affinity(vec![
            term("app", "In", &["db"], "kubernetes.io/hostname"),
            term("app", "In", &["cache"], "zone"),
        ])),
    );
    check(
        &objs,
        &[("n1", ANTI), ("n2", None), ("n3", ANTI), ("n4", None)],
    );
}

#[test]
fn an_existing_pods_anti_affinity_keeps_matching_pods_out_of_its_domain() {
    let mut objs = four_nodes();
    running(
        &mut objs,
        "ns",
        "lonely",
        "n1",
        &[("app", "lonely")],
        Some(anti_affinity(vec![term("app", "In", &["web"], "zone")])),
    );
    incoming(&mut objs, "ns", &[("app", "web")], None);
    check(
        &objs,
        &[
            ("n1", EXISTING),
            ("n2", EXISTING),
            ("n3", None),
            ("n4", None),
        ],
    );

    // A pod the term does not select is not concerned.
    let mut objs = four_nodes();
    running(
        &mut objs,
        "ns",
        "lonely",
        "n1",
        &[("app", "lonely")],
        Some(anti_affinity(vec![term("app", "In", &["db"], "zone")])),
    );
    incoming(&mut objs, "ns", &[("app", "web")], None);
    check(
        &objs,
        &[("n1", None), ("n2", None), ("n3", None), ("n4", None)],
    );
}

#[test]
fn checks_run_in_kube_order_affinity_then_anti_affinity_then_existing() {
    let mut objs = four_nodes();
    running(&mut objs, "ns", "db", "n1", &[("app", "db")], None);
    running(
        &mut objs,
        "ns",
        "guard",
        "n2",
        &[("app", "guard")],
        Some(anti_affinity(vec![term(
            "app",
            "In",
            &["web"],
            "kubernetes.io/hostname",
        )])),
    );
    running(&mut objs, "ns", "cache", "n3", &[("app", "cache")], None);
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(both(
            affinity(vec![term("app", "In", &["db", "cache"], "zone")]),
            anti_affinity(vec![term(
                "app",
                "In",
                &["cache"],
                "kubernetes.io/hostname",
            )]),
        )),
    );
    check(
        &objs,
        &[("n1", None), ("n2", EXISTING), ("n3", ANTI), ("n4", AFF)],
    );
}

fn namespace(name: &str, l: &[(&str, &str)]) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels(l)),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn with_namespaces(
    mut t: PodAffinityTerm,
    selector: Option<&[(&str, &str)]>,
    names: &[&str],
) -> PodAffinityTerm {
    t.namespace_selector = selector.map(|l| LabelSelector {
        match_labels: Some(labels(l)),
        ..Default::default()
    });
    if !names.is_empty() {
        t.namespaces = Some(names.iter().map(|n| n.to_string()).collect());
    }
    t
}

#[test]
fn namespace_selector_and_namespace_list_choose_where_pods_are_looked_for() {
    let base = || {
        let mut objs = four_nodes();
        objs.namespaces = vec![namespace("team-a", &[("team", "a")]), namespace("ns", &[])];
        running(&mut objs, "team-a", "db", "n1", &[("app", "db")], None);
        objs
    };
    let db = || term("app", "In", &["db"], "zone");

    let mut objs = base();
    let t = with_namespaces(db(), Some(&[("team", "a")]), &[]);
    incoming(&mut objs, "ns", &[("app", "web")], Some(affinity(vec![t])));
    check(
        &objs,
        &[("n1", None), ("n2", None), ("n3", AFF), ("n4", AFF)],
    );

    let mut objs = base();
    let t = with_namespaces(db(), Some(&[("team", "b")]), &[]);
    incoming(&mut objs, "ns", &[("app", "web")], Some(affinity(vec![t])));
    check(&objs, &[("n1", AFF), ("n2", AFF), ("n3", AFF), ("n4", AFF)]);

    // An empty selector selects every namespace.
    let mut objs = base();
    let t = with_namespaces(db(), Some(&[]), &[]);
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(anti_affinity(vec![t])),
    );
    check(
        &objs,
        &[("n1", ANTI), ("n2", ANTI), ("n3", None), ("n4", None)],
    );

    // A listed namespace, and the name label every namespace carries.
    let mut objs = base();
    let t = with_namespaces(db(), None, &["team-a"]);
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(anti_affinity(vec![t])),
    );
    check(
        &objs,
        &[("n1", ANTI), ("n2", ANTI), ("n3", None), ("n4", None)],
    );
    let mut objs = base();
    let t = with_namespaces(
        db(),
        Some(&[("kubernetes.io/metadata.name", "team-a")]),
        &[],
    );
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(anti_affinity(vec![t])),
    );
    check(
        &objs,
        &[("n1", ANTI), ("n2", ANTI), ("n3", None), ("n4", None)],
    );
}

#[test]
fn an_existing_pods_namespace_selector_reads_the_incoming_pods_namespace_labels() {
    let mut objs = four_nodes();
    objs.namespaces = vec![namespace("team-a", &[("team", "a")])];
    let t = with_namespaces(
        term("app", "In", &["web"], "zone"),
        Some(&[("team", "a")]),
        &[],
    );
    running(
        &mut objs,
        "guards",
        "guard",
        "n3",
        &[("app", "guard")],
        Some(anti_affinity(vec![t])),
    );
    incoming(&mut objs, "team-a", &[("app", "web")], None);
    check(
        &objs,
        &[("n1", None), ("n2", None), ("n3", EXISTING), ("n4", None)],
    );
}

#[test]
fn match_label_keys_take_their_values_from_the_terms_owner() {
    let with_keys = || {
        let mut t = term("app", "In", &["web"], "kubernetes.io/hostname");
        t.match_label_keys = Some(vec!["version".into()]);
        t
    };
    // The running pod is of another version: it does not count.
    let mut objs = four_nodes();
    running(
        &mut objs,
        "ns",
        "web-v1",
        "n1",
        &[("app", "web"), ("version", "v1")],
        None,
    );
    incoming(
        &mut objs,
        "ns",
        &[("app", "web"), ("version", "v2")],
        Some(anti_affinity(vec![with_keys()])),
    );
    check(
        &objs,
        &[("n1", None), ("n2", None), ("n3", None), ("n4", None)],
    );

    let mut objs = four_nodes();
    running(
        &mut objs,
        "ns",
        "web-v1",
        "n1",
        &[("app", "web"), ("version", "v1")],
        None,
    );
    incoming(
        &mut objs,
        "ns",
        &[("app", "web"), ("version", "v1")],
        Some(anti_affinity(vec![with_keys()])),
    );
    check(
        &objs,
        &[("n1", ANTI), ("n2", None), ("n3", None), ("n4", None)],
    );

    // mismatchLabelKeys: only pods of other tenants count.
    let mut t = term("app", "Exists", &[], "kubernetes.io/hostname");
    t.mismatch_label_keys = Some(vec!["tenant".into()]);
    let mut objs = four_nodes();
    running(
        &mut objs,
        "ns",
        "mine",
        "n1",
        &[("app", "x"), ("tenant", "me")],
        None,
    );
    running(
        &mut objs,
        "ns",
        "theirs",
        "n2",
        &[("app", "y"), ("tenant", "you")],
        None,
    );
    incoming(
        &mut objs,
        "ns",
        &[("app", "z"), ("tenant", "me")],
        Some(anti_affinity(vec![t])),
    );
    check(
        &objs,
        &[("n1", None), ("n2", ANTI), ("n3", None), ("n4", None)],
    );
}

#[test]
fn a_term_without_label_selector_selects_no_pod() {
    let mut objs = four_nodes();
    running(&mut objs, "ns", "db", "n1", &[("app", "db")], None);
    let mut t = term("app", "In", &["db"], "zone");
    t.label_selector = None;
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(anti_affinity(vec![t])),
    );
    check(
        &objs,
        &[("n1", None), ("n2", None), ("n3", None), ("n4", None)],
    );
}

/// Placements, undos and evictions in the session move the counts as they go.
#[test]
fn placements_undos_and_evictions_in_the_session_count() {
    let mut objs = four_nodes();
    let anti = || Some(anti_affinity(vec![term("app", "In", &["web"], "zone")]));
    running(&mut objs, "ns", "old", "n3", &[("app", "web")], anti());
    incoming(&mut objs, "ns", &[("app", "web")], anti());
    let (pg, _) = gang("ns", "peer-group").min(1).build();
    objs.pod_groups.push(pg);
    let p = pod("ns", "peer").cpu_milli(100).group("peer-group").build();
    objs.pods
        .push(labelled(p, &[("app", "web")], anti()).into());
    let mut s = snapshot(&objs);
    let mut f = InterPodAffinity::new(&s);
    let verdict = |s: &Snapshot, f: &InterPodAffinity| verdicts(s, f, "incoming");
    let reason = |r: &str| Some((r.to_string(), false));
    let n = |s: &Snapshot, name: &str| node_id(s, name);

    assert_eq!(
        verdict(&s, &f),
        [
            ("n1".into(), None),
            ("n2".into(), None),
            ("n3".into(), reason(ANTI_AFFINITY_MISMATCH)),
            ("n4".into(), None)
        ]
    );
    // The peer is placed on n1: zone z1 is now taken too.
    let peer = task(&s, "peer");
    let n1 = n(&s, "n1");
    s.place(peer, n1, TaskStatus::Allocated);
    f.on_allocate(&s, peer);
    let got = verdict(&s, &f);
    assert_eq!(got[0].1, reason(ANTI_AFFINITY_MISMATCH));
    assert_eq!(got[1].1, reason(ANTI_AFFINITY_MISMATCH));
    // Undone (a gang discarded): the task leaves its node before the plugin hears of it.
    s.unplace(peer, TaskStatus::Pending);
    f.on_deallocate(&s, peer);
    assert_eq!(verdict(&s, &f)[0].1, None);
    // The old pod is evicted: it stays on n3 as Releasing, but no longer counts.
    let old = task(&s, "old");
    s.update_on_node(old, TaskStatus::Releasing);
    f.on_deallocate(&s, old);
    assert!(verdict(&s, &f).iter().all(|(_, v)| v.is_none()));
    // The eviction is taken back: it counts again.
    s.update_on_node(old, TaskStatus::Running);
    f.on_allocate(&s, old);
    assert_eq!(verdict(&s, &f)[2].1, reason(ANTI_AFFINITY_MISMATCH));
}

/// Many domains taken: the view looks them up in the index instead of listing them.
#[test]
fn many_taken_domains_are_looked_up_rather_than_listed() {
    let mut objs = cluster().objects();
    for i in 0..40 {
        objs.nodes
            .push(host(&format!("n{i:02}"), Some(&format!("z{i:02}"))));
    }
    let guard = || {
        Some(anti_affinity(vec![term(
            "app",
            "In",
            &["web"],
            "kubernetes.io/hostname",
        )]))
    };
    for i in 0..30 {
        let (name, on) = (format!("db-{i}"), format!("n{i:02}"));
        running(&mut objs, "ns", &name, &on, &[("app", "db")], None);
        let (name, on) = (format!("guard-{i}"), format!("n{:02}", 39 - i));
        running(&mut objs, "ns", &name, &on, &[("app", "guard")], guard());
    }
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(anti_affinity(vec![term(
            "app",
            "In",
            &["db"],
            "kubernetes.io/hostname",
        )])),
    );
    let s = snapshot(&objs);
    let f = InterPodAffinity::new(&s);
    let got = verdicts(&s, &f, "incoming");
    for (i, (name, v)) in got.iter().enumerate() {
        let want = if i < 30 {
            Some((ANTI_AFFINITY_MISMATCH.to_string(), false))
        } else {
            Some((EXISTING_ANTI_AFFINITY_MISMATCH.to_string(), false))
        };
        assert_eq!(v, &want, "{name}");
    }
    // Without guard-1 (on n38) and guard-10..guard-19 (on n29..n20, which hold db pods too),
    // only n38 is freed.
    let mut fewer = objs.clone();
    fewer.pods.retain(|p| {
        !p.metadata
            .name
            .as_deref()
            .unwrap_or("")
            .starts_with("guard-1")
    });
    let s = snapshot(&fewer);
    let f = InterPodAffinity::new(&s);
    let free: Vec<String> = verdicts(&s, &f, "incoming")
        .into_iter()
        .filter(|(_, v)| v.is_none())
        .map(|(n, _)| n)
        .collect();
    assert_eq!(free, ["n38"]);
}
