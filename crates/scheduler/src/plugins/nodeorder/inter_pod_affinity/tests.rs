//! The score, case by case, in the spirit of kube-scheduler's `scoring_test.go` table: raw
//! weights by topology domain, min-max normalised over the candidates, times the weight.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::{
    Affinity, PodAffinity, PodAffinityTerm, PodAntiAffinity, WeightedPodAffinityTerm,
};
use volcano_api::{Objects, k8s_openapi};

use super::*;
use crate::plugins::predicates::inter_pod_affinity::{
    affinity, anti_affinity, four_nodes, incoming, labelled, node_id, running, snapshot, task, term,
};

fn weighted(w: i32, t: PodAffinityTerm) -> Vec<WeightedPodAffinityTerm> {
    vec![WeightedPodAffinityTerm {
        weight: w,
        pod_affinity_term: t,
    }]
}

fn preferred(w: i32, t: PodAffinityTerm) -> Affinity {
    Affinity {
        pod_affinity: Some(PodAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(weighted(w, t)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn preferred_anti(w: i32, t: PodAffinityTerm) -> Affinity {
    Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(weighted(w, t)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Scores of n1..n4 (n1, n2 in zone z1, n3 in z2, n4 without zone) for the incoming pod,
/// starting from 7 each, with weight 2.
fn scores(objs: &Objects) -> Vec<f64> {
    let s = snapshot(objs);
    let scorer = PodAffinityScore::new(&s);
    scores_of(&s, &scorer, &["n1", "n2", "n3", "n4"])
}

fn scores_of(s: &Snapshot, scorer: &PodAffinityScore, names: &[&str]) -> Vec<f64> {
    let nodes: Vec<NodeId> = names.iter().map(|n| node_id(s, n)).collect();
    let mut out = vec![7.0; nodes.len()];
    scorer.score(s, task(s, "incoming"), &nodes, &mut out, 2.0);
    out
}

#[test]
fn a_pod_without_preferences_among_pods_without_terms_adds_nothing() {
    let mut objs = four_nodes();
    running(&mut objs, "ns", "db", "n1", &[("app", "db")], None);
    running(
        &mut objs,
        "ns",
        "other",
        "n2",
        &[("app", "x")],
        // Required anti-affinity is the filter's, not the score's.
        Some(anti_affinity(vec![term("app", "In", &["web"], "zone")])),
    );
    incoming(&mut objs, "ns", &[("app", "web")], None);
    assert_eq!(scores(&objs), [7.0, 7.0, 7.0, 7.0]);
}

#[test]
fn preferred_affinity_counts_matching_pods_per_domain() {
    let mut objs = four_nodes();
    running(&mut objs, "ns", "db-0", "n1", &[("app", "db")], None);
    running(&mut objs, "ns", "db-1", "n2", &[("app", "db")], None);
    running(&mut objs, "ns", "db-2", "n3", &[("app", "db")], None);
    running(&mut objs, "ns", "web", "n3", &[("app", "web")], None);
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(preferred(5, term("app", "In", &["db"], "zone"))),
    );
    // Raw 10, 10, 5, 0: normalised 100, 100, 50, 0; times 2 on top of 7.
    assert_eq!(scores(&objs), [207.0, 207.0, 107.0, 7.0]);
}

#[test]
fn preferred_anti_affinity_pushes_away_and_normalises_from_the_lowest() {
    let mut objs = four_nodes();
    running(&mut objs, "ns", "db-0", "n1", &[("app", "db")], None);
    running(&mut objs, "ns", "db-1", "n3", &[("app", "db")], None);
    running(&mut objs, "ns", "db-2", "n3", &[("app", "db")], None);
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(preferred_anti(3, term("app", "In", &["db"], "zone"))),
    );
    // Raw -3, -3, -6, 0: normalised 50, 50, 0, 100.
    assert_eq!(scores(&objs), [107.0, 107.0, 7.0, 207.0]);
}

#[test]
fn existing_pods_terms_that_select_the_pod_score_where_they_run() {
    let mut objs = four_nodes();
    // Prefers pods like the incoming one in its zone (+4 in z2).
    running(
        &mut objs,
        "ns",
        "friend",
        "n3",
        &[("app", "friend")],
        Some(preferred(4, term("app", "In", &["web"], "zone"))),
    );
    // Requires pods like it on its host: nothing, as Volcano's hard weight is 0.
    running(
        &mut objs,
        "ns",
        "needy",
        "n1",
        &[("app", "needy")],
        Some(affinity(vec![term(
            "app",
            "In",
            &["web"],
            "kubernetes.io/hostname",
        )])),
    );
    // Would rather not have it in z1 (-2 on n1 and n2).
    running(
        &mut objs,
        "ns",
        "shy",
        "n2",
        &[("app", "shy")],
        Some(preferred_anti(2, term("app", "In", &["web"], "zone"))),
    );
    incoming(&mut objs, "ns", &[("app", "web")], None);
    // Raw -2, -2, 4, 0 over a spread of 6: 0, 0, 100, 33.
    assert_eq!(scores(&objs), [7.0, 7.0, 207.0, 73.0]);
}

#[test]
fn normalisation_is_over_the_candidates_only() {
    let mut objs = four_nodes();
    running(&mut objs, "ns", "db-0", "n1", &[("app", "db")], None);
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(preferred(5, term("app", "In", &["db"], "zone"))),
    );
    let s = snapshot(&objs);
    let scorer = PodAffinityScore::new(&s);
    // n1 and n2 alike: nothing to tell them apart.
    assert_eq!(scores_of(&s, &scorer, &["n1", "n2"]), [7.0, 7.0]);
    assert_eq!(scores_of(&s, &scorer, &["n2", "n3"]), [207.0, 7.0]);
}

#[test]
fn placements_and_undos_in_the_session_move_the_score() {
    let mut objs = four_nodes();
    incoming(
        &mut objs,
        "ns",
        &[("app", "web")],
        Some(preferred(5, term("app", "In", &["db"], "zone"))),
    );
    let (pg, _) = volcano_testkit::build::gang("ns", "db").min(1).build();
    objs.pod_groups.push(pg);
    let p = volcano_testkit::build::pod("ns", "db-0")
        .cpu_milli(100)
        .group("db")
        .build();
    objs.pods.push(labelled(p, &[("app", "db")], None).into());
    let mut s = snapshot(&objs);
    let mut scorer = PodAffinityScore::new(&s);
    let all = ["n1", "n2", "n3", "n4"];
    assert_eq!(scores_of(&s, &scorer, &all), [7.0; 4]);
    let db = task(&s, "db-0");
    let n3 = node_id(&s, "n3");
    s.place(db, n3, TaskStatus::Allocated);
    scorer.on_allocate(&s, db);
    assert_eq!(scores_of(&s, &scorer, &all), [7.0, 7.0, 207.0, 7.0]);
    s.unplace(db, TaskStatus::Pending);
    scorer.on_deallocate(&s, db);
    assert_eq!(scores_of(&s, &scorer, &all), [7.0; 4]);
}
