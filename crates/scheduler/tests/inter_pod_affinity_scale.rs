//! Inter-pod affinity at scale: one session over 5,000 nodes placing 5,000 pending pods in 500
//! gangs of 10, each pod anti-affine on `kubernetes.io/hostname` to the pods of its own app
//! (required, then preferred) or affine to them on a zone, against the same workload without
//! the rule. Timed, so ignored by default; run with
//!
//! `cargo test --release -p volcano-scheduler --test inter_pod_affinity_scale -- --ignored --nocapture`

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Each test file uses some of the shared helpers.
#[allow(dead_code)]
mod support;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use support::*;
use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{
    Affinity, PodAffinity, PodAffinityTerm, PodAntiAffinity, WeightedPodAffinityTerm,
};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use volcano_scheduler::cache::{CacheOptions, build_snapshot};
use volcano_scheduler::conf::SchedulerConf;
use volcano_testkit::build::*;

const NODES: usize = 5_000;
const GANGS: usize = 500;
const GANG_SIZE: usize = 10;
const HOSTNAME: &str = "kubernetes.io/hostname";

#[derive(Clone, Copy, PartialEq)]
enum Rule {
    None,
    AntiAffinity,
    Affinity,
    PreferredAntiAffinity,
}

fn objects(rule: Rule) -> Objects {
    let mut objs = cluster()
        .with_all((0..NODES).map(|i| {
            let name = format!("node-{i:04}");
            node(&name)
                .cpu(32)
                .mem_gi(128)
                .label(HOSTNAME, &name)
                .label("zone", &format!("z{}", i % 10))
        }))
        .with_all((0..GANGS).map(|g| {
            gang("bench", &format!("job-{g:04}"))
                .min(GANG_SIZE as i32)
                .pods(GANG_SIZE, 1000, 2 * GI)
        }))
        .objects();
    for p in objs.pods.iter_mut().map(Arc::make_mut) {
        let name = p.metadata.name.clone().unwrap_or_default();
        let app = name
            .rsplit_once('-')
            .map_or(name.as_str(), |(a, _)| a)
            .to_string();
        p.metadata.labels = Some(BTreeMap::from([("app".to_string(), app.clone())]));
        let term = |key: &str| PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("app".to_string(), app.clone())])),
                ..Default::default()
            }),
            topology_key: key.into(),
            ..Default::default()
        };
        let affinity = match rule {
            Rule::None => None,
            Rule::AntiAffinity => Some(Affinity {
                pod_anti_affinity: Some(PodAntiAffinity {
                    required_during_scheduling_ignored_during_execution: Some(vec![term(HOSTNAME)]),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            Rule::PreferredAntiAffinity => Some(Affinity {
                pod_anti_affinity: Some(PodAntiAffinity {
                    preferred_during_scheduling_ignored_during_execution: Some(vec![
                        WeightedPodAffinityTerm {
                            weight: 100,
                            pod_affinity_term: term(HOSTNAME),
                        },
                    ]),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            Rule::Affinity => Some(Affinity {
                pod_affinity: Some(PodAffinity {
                    required_during_scheduling_ignored_during_execution: Some(vec![term("zone")]),
                    ..Default::default()
                }),
                ..Default::default()
            }),
        };
        if let Some(spec) = p.spec.as_mut() {
            spec.affinity = affinity;
        }
    }
    objs
}

/// Runs one session, prints its time and pods per second, and returns the binds.
fn timed(label: &str, rule: Rule) -> Vec<(String, String)> {
    let objs = objects(rule);
    let conf = SchedulerConf::default_conf();
    let snap = build_snapshot(&objs, &CacheOptions::default()).unwrap();
    let t0 = Instant::now();
    let d = volcano_scheduler::run_session(snap, &conf, session_options(1));
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "{label}: {} pods bound on {NODES} nodes in {:.3}s: {:.0} pods/s",
        d.binds.len(),
        secs,
        d.binds.len() as f64 / secs
    );
    d.binds.into_iter().map(|(k, n)| (k.name, n)).collect()
}

#[test]
#[ignore = "timed at scale: run with --release --ignored"]
fn five_thousand_anti_affine_pods_on_five_thousand_nodes() {
    let plain = timed("no rule", Rule::None);
    assert_eq!(plain.len(), GANGS * GANG_SIZE);
    let binds = timed("anti-affinity on hostname", Rule::AntiAffinity);
    assert_eq!(binds.len(), GANGS * GANG_SIZE);
    let mut seen = HashSet::new();
    for (pod, node) in &binds {
        let app = pod.rsplit_once('-').map_or(pod.as_str(), |(a, _)| a);
        assert!(
            seen.insert((app.to_string(), node.clone())),
            "{pod} shares {node}"
        );
    }
    let binds = timed(
        "preferred anti-affinity on hostname",
        Rule::PreferredAntiAffinity,
    );
    assert_eq!(binds.len(), GANGS * GANG_SIZE);
    let binds = timed("affinity on zone", Rule::Affinity);
    assert_eq!(binds.len(), GANGS * GANG_SIZE);
}
