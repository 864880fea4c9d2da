//! Properties of `preempt` and `reclaim` over random clusters, checked from outside the
//! scheduler with resources counted from the Pod and Node objects:
//!
//! - minimal eviction: the victims on the preemptor's node are enough for it to fit, and
//!   sparing any one of them would leave it unable to fit (a gang that loses all its running
//!   pods counts as one victim);
//! - a running gang keeps at least `minMember` pods or loses all of them;
//! - nothing is evicted for a preemptor that fits without evictions;
//! - `preempt` never evicts a pod of equal or higher priority than its preemptor;
//! - `reclaim` only takes pods of a queue that holds more than its deserved share (Volcano's
//!   rule: the last pod taken may leave the queue under its share when no smaller pod would
//!   do, as Volcano's own `reclaim_test.go` expects), and never from the reclaiming queue;
//! - and, in every session, the invariants of `volcano_scheduler::invariants`.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use support::*;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::resources::canonical_amount;
use volcano_api::scheduling::PodGroupStatus;
use volcano_api::{NamespacedName, Objects};
use volcano_scheduler::framework::Decisions;
use volcano_scheduler::invariants;
use volcano_testkit::build::*;

/// Priority classes victims and preemptors use; the preemptor is `high`.
const CLASSES: [(&str, i32); 4] = [("low", 10), ("mid", 100), ("high", 1000), ("top", 5000)];
const PREEMPTOR_PRIORITY: i32 = 1000;

/// cpu (milli), memory (bytes), pods.
type Res = [i64; 3];

fn request(p: &Pod) -> Res {
    let mut r = [0, 0, 1];
    for c in p.spec.iter().flat_map(|s| &s.containers) {
        for (name, q) in c.resources.iter().flat_map(|x| x.requests.iter().flatten()) {
            let v = canonical_amount(name, &q.0).unwrap_or(0);
            match name.as_str() {
                "cpu" => r[0] += v,
                "memory" => r[1] += v,
                _ => {}
            }
        }
    }
    r
}

fn key(p: &Pod) -> NamespacedName {
    NamespacedName::of(&p.metadata)
}

fn fits(used: &Res, alloc: &Res) -> bool {
    used.iter().zip(alloc).all(|(u, a)| u <= a)
}

fn set_phase(objs: &mut Objects, pg: &str, phase: &str) {
    if let Some(g) = objs
        .pod_groups
        .iter_mut()
        .find(|g| g.metadata.name.as_deref() == Some(pg))
    {
        g.status = Some(PodGroupStatus {
            phase: phase.to_string(),
            ..Default::default()
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Preempt: one preemptor gang, random victims

#[derive(Debug, Clone)]
struct VictimJob {
    class: usize,
    min: i32,
    pods: Vec<(i64, i64)>,
}

#[derive(Debug, Clone)]
struct PreemptCase {
    nodes: Vec<(i64, i64)>,
    victims: Vec<VictimJob>,
    /// The preemptor gang's pods (all of them its minimum).
    preemptor: Vec<(i64, i64)>,
}

fn arb_preempt_case() -> impl Strategy<Value = PreemptCase> {
    let node = (4i64..=16, 4i64..=16).prop_map(|(c, m)| (c * 500, m * GI / 2));
    let pod = (1i64..=12, 1i64..=16).prop_map(|(c, m)| (c * 250, m * 256 * MI));
    let job = (
        0usize..CLASSES.len(),
        prop::collection::vec(pod, 1..=3),
        0i32..=3,
    )
        .prop_map(|(class, pods, min)| VictimJob {
            class,
            min: min.min(pods.len() as i32),
            pods,
        });
    (
        prop::collection::vec(node, 1..=4),
        prop::collection::vec(job, 1..=6),
        prop::collection::vec(
            (2i64..=24, 1i64..=32).prop_map(|(c, m)| (c * 250, m * 256 * MI)),
            1..=3,
        ),
    )
        .prop_map(|(nodes, victims, preemptor)| PreemptCase {
            nodes,
            victims,
            preemptor,
        })
}

impl PreemptCase {
    /// The cluster, with victims packed onto the nodes first-fit (pods that fit nowhere are
    /// left out, so no node starts overcommitted).
    fn objects(&self) -> Objects {
        let mut c = cluster().with(queue("q1").weight(1));
        for (name, value) in CLASSES {
            c = c.with(priority_class(name, value));
        }
        let mut free: Vec<Res> = Vec::new();
        for (i, (cpu, mem)) in self.nodes.iter().enumerate() {
            c = c.with(
                node(&format!("n{i}"))
                    .cpu_milli(*cpu)
                    .mem(*mem)
                    .max_pods(110),
            );
            free.push([*cpu, *mem, 110]);
        }
        let mut objs = c.objects();
        for (j, v) in self.victims.iter().enumerate() {
            let name = format!("v{j}");
            let mut g = gang("t", &name)
                .queue("q1")
                .min(v.min)
                .priority_class(CLASSES[v.class].0);
            for (cpu, mem) in &v.pods {
                g = g.pods_like(1, template().cpu_milli(*cpu).mem(*mem));
            }
            let (pg, pods) = g.build();
            objs.pod_groups.push(pg);
            for mut p in pods {
                let req = request(&p);
                let Some(n) = free
                    .iter()
                    .position(|f| f.iter().zip(&req).all(|(f, r)| r <= f))
                else {
                    continue;
                };
                for (f, r) in free[n].iter_mut().zip(&req) {
                    *f -= r;
                }
                if let Some(spec) = p.spec.as_mut() {
                    spec.node_name = Some(format!("n{n}"));
                }
                if let Some(st) = p.status.as_mut() {
                    st.phase = Some("Running".into());
                }
                objs.pods.push(p.into());
            }
            set_phase(&mut objs, &name, "Running");
        }
        let mut g = gang("t", "preemptor")
            .queue("q1")
            .min(self.preemptor.len() as i32)
            .priority_class("high");
        for (cpu, mem) in &self.preemptor {
            g = g.pods_like(1, template().cpu_milli(*cpu).mem(*mem));
        }
        objs.add(g);
        set_phase(&mut objs, "preemptor", "Inqueue");
        objs
    }
}

/// Adds a builder's objects to already-built ones.
trait AddBuilt {
    fn add(&mut self, g: GangBuilder);
}

impl AddBuilt for Objects {
    fn add(&mut self, g: GangBuilder) {
        let (pg, pods) = g.build();
        self.pod_groups.push(pg);
        self.pods.extend(pods.into_iter().map(Arc::new));
    }
}

fn check_preempt(objs: &Objects, d: &Decisions) -> Result<(), TestCaseError> {
    let pods: BTreeMap<NamespacedName, &Pod> = objs.pods.iter().map(|p| (key(p), &**p)).collect();
    let preemptors: Vec<&NamespacedName> = pods
        .keys()
        .filter(|k| k.namespace == "t" && k.name.starts_with("preemptor-"))
        .collect();
    if d.binds.iter().any(|(p, _)| preemptors.contains(&p)) {
        prop_assert!(
            d.evictions.is_empty(),
            "evicted {:?} for a gang that fitted without",
            d.evictions
        );
        return Ok(());
    }
    if d.evictions.is_empty() {
        return Ok(());
    }
    let placed: BTreeMap<&NamespacedName, &str> = d
        .pipelined
        .iter()
        .filter(|(p, _)| preemptors.contains(&p))
        .map(|(p, n)| (p, n.as_str()))
        .collect();
    prop_assert_eq!(
        placed.len(),
        preemptors.len(),
        "evicted {:?} but the gang is not pipelined whole: {:?}",
        &d.evictions,
        &placed
    );
    let group_of = |p: &Pod| -> String {
        p.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("scheduling.k8s.io/group-name"))
            .cloned()
            .unwrap_or_default()
    };
    let class_of = |p: &Pod| -> i32 {
        let group = group_of(p);
        let class = objs
            .pod_groups
            .iter()
            .find(|g| g.metadata.name.as_deref() == Some(group.as_str()))
            .map(|g| g.spec.priority_class_name.as_str())
            .unwrap_or("");
        CLASSES
            .iter()
            .find(|(n, _)| *n == class)
            .map_or(0, |(_, v)| *v)
    };
    let node_of = |p: &Pod| -> String {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default()
    };
    // Victims by job: a gang keeps at least its minMember running pods or loses all of them,
    // and a gang that loses all of them is one unit for minimality.
    let mut by_job: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    for v in &d.evictions {
        let vp = pods[v];
        prop_assert!(
            placed.values().any(|n| *n == node_of(vp)),
            "victim {} is on {}, where no preemptor goes",
            v,
            node_of(vp)
        );
        prop_assert!(
            class_of(vp) < PREEMPTOR_PRIORITY,
            "victim {} has priority {} >= the preemptor's {}",
            v,
            class_of(vp),
            PREEMPTOR_PRIORITY
        );
        by_job.entry(group_of(vp)).or_default().push(vp);
    }
    let mut units: Vec<Vec<&Pod>> = Vec::new();
    for (group, victims) in by_job {
        let running = objs
            .pods
            .iter()
            .filter(|p| group_of(p) == group && !node_of(p).is_empty())
            .count();
        let left = running - victims.len();
        let min = objs
            .pod_groups
            .iter()
            .find(|g| g.metadata.name.as_deref() == Some(group.as_str()))
            .map_or(0, |g| g.spec.min_member.max(0) as usize);
        prop_assert!(
            left == 0 || left >= min,
            "gang {} was left with {} running pods, below its minMember {}",
            group,
            left,
            min
        );
        if left == 0 && running > 0 {
            // A gang taken whole: a smaller valid set spares at least minMember of its pods.
            units.extend(combinations(&victims, min.max(1)));
        } else {
            units.extend(victims.into_iter().map(|v| vec![v]));
        }
    }
    // Per node: what stays plus what is pipelined there fits, and sparing any unit does not.
    let used_on = |node: &str, spared: &[&Pod]| -> Res {
        let mut used: Res = [0, 0, 0];
        for p in objs.pods.iter().filter(|p| node_of(p) == node) {
            if !d.evictions.contains(&key(p)) || spared.iter().any(|s| key(s) == key(p)) {
                let r = request(p);
                for i in 0..3 {
                    used[i] += r[i];
                }
            }
        }
        for (p, _) in placed.iter().filter(|(_, n)| **n == node) {
            let r = request(pods[*p]);
            for i in 0..3 {
                used[i] += r[i];
            }
        }
        used
    };
    let cap_of = |node: &str| -> Res {
        let n = objs
            .nodes
            .iter()
            .position(|n| n.metadata.name.as_deref() == Some(node))
            .unwrap_or(0);
        [n_cpu(objs, n), n_mem(objs, n), 110]
    };
    for node in placed.values() {
        let used = used_on(node, &[]);
        prop_assert!(
            fits(&used, &cap_of(node)),
            "the gang does not fit {} after the evictions: {:?} > {:?}",
            node,
            used,
            cap_of(node)
        );
    }
    for unit in units {
        let names: Vec<String> = unit.iter().map(|p| key(p).to_string()).collect();
        let mut nodes: Vec<String> = unit.iter().map(|p| node_of(p)).collect();
        nodes.dedup();
        let node = nodes.join(",");
        prop_assert!(
            nodes.iter().any(|n| !fits(&used_on(n, &unit), &cap_of(n))),
            "victims {:?} were not needed: the gang fits {} with them spared (pipelined {:?}, evictions {:?})",
            names,
            node,
            &d.pipelined,
            &d.eviction_reasons
        );
    }
    Ok(())
}

/// Every choice of `k` of `items`.
fn combinations<'a>(items: &[&'a Pod], k: usize) -> Vec<Vec<&'a Pod>> {
    if k == 0 {
        return vec![Vec::new()];
    }
    if items.len() < k {
        return Vec::new();
    }
    let mut with: Vec<Vec<&Pod>> = combinations(&items[1..], k - 1)
        .into_iter()
        .map(|mut c| {
            c.insert(0, items[0]);
            c
        })
        .collect();
    with.extend(combinations(&items[1..], k));
    with
}

fn n_cpu(objs: &Objects, n: usize) -> i64 {
    allocatable(objs, n, "cpu")
}

fn n_mem(objs: &Objects, n: usize) -> i64 {
    allocatable(objs, n, "memory")
}

fn allocatable(objs: &Objects, n: usize, name: &str) -> i64 {
    objs.nodes[n]
        .status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| a.get(name))
        .and_then(|q| canonical_amount(name, &q.0).ok())
        .unwrap_or(0)
}

#[path = "evictions/reclaim.rs"]
mod reclaim;

use reclaim::{arb_reclaim_case, check_guarantees, check_reclaim};

/// The invariants every session keeps (nodes, gangs, queues), evictions or not.
fn check_invariants(objs: &Objects, d: &Decisions) -> Result<(), TestCaseError> {
    let broken: Vec<String> = invariants::check(objs, d)
        .iter()
        .map(ToString::to_string)
        .collect();
    prop_assert!(broken.is_empty(), "{}", broken.join("\n"));
    Ok(())
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn preempt_evicts_a_minimal_set_of_lower_priority_pods(c in arb_preempt_case()) {
        let conf = conf(volcano_testkit::conf::evicting());
        let objs = c.objects();
        let d = run_session_n(&objs, &conf, 1);
        check_preempt(&objs, &d)?;
        check_invariants(&objs, &d)?;
    }

    #[test]
    fn reclaim_takes_only_from_queues_over_their_share(c in arb_reclaim_case()) {
        let conf = conf(volcano_testkit::conf::evicting());
        let mut objs = c.objects();
        for i in 1..=3 {
            let d = run_session_n(&objs, &conf, i);
            check_reclaim(&objs, &d)
                .and_then(|()| check_guarantees(&objs, &d))
                .and_then(|()| check_invariants(&objs, &d))
                .map_err(|e| TestCaseError::fail(format!("session {i}: {e}")))?;
            apply(&mut objs, &d);
        }
    }
}
