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

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use support::*;
use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::resources::canonical_amount;
use volcano_api::scheduling::PodGroupStatus;
use volcano_scheduler::cache::{CacheOptions, build_snapshot};
use volcano_scheduler::framework::Decisions;
use volcano_scheduler::invariants;
use volcano_scheduler::plugins::proportion_deserved;
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

fn key(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or_default(),
        p.metadata.name.as_deref().unwrap_or_default()
    )
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
                objs.pods.push(p);
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
        self.pods.extend(pods);
    }
}

fn check_preempt(objs: &Objects, d: &Decisions) -> Result<(), TestCaseError> {
    let pods: BTreeMap<String, &Pod> = objs.pods.iter().map(|p| (key(p), p)).collect();
    let preemptors: Vec<&str> = pods
        .keys()
        .filter(|k| k.starts_with("t/preemptor-"))
        .map(String::as_str)
        .collect();
    if d.binds
        .iter()
        .any(|(p, _)| preemptors.contains(&p.as_str()))
    {
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
    let placed: BTreeMap<&str, &str> = d
        .pipelined
        .iter()
        .filter(|(p, _)| preemptors.contains(&p.as_str()))
        .map(|(p, n)| (p.as_str(), n.as_str()))
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
        let vp = pods[v.as_str()];
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
        let names: Vec<String> = unit.iter().map(|p| key(p)).collect();
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

// ---------------------------------------------------------------------------------------------
// Reclaim: queues with random weights, some holding more than their share

#[derive(Debug, Clone)]
struct ReclaimCase {
    nodes: usize,
    weights: Vec<i32>,
    /// Per queue, CPUs guaranteed (halves of a CPU).
    guarantees: Vec<Option<i64>>,
    running: Vec<(usize, usize, i64)>,
    waiting: Vec<(usize, usize, i64)>,
}

fn arb_reclaim_case() -> impl Strategy<Value = ReclaimCase> {
    (
        1usize..=3,
        prop::collection::vec(1i32..=4, 2..=3),
        prop::collection::vec(prop::option::weighted(0.4, 1i64..=12), 3),
        prop::collection::vec((0usize..3, 1usize..=4, 1i64..=4), 1..=6),
        prop::collection::vec((0usize..3, 1usize..=3, 1i64..=4), 1..=3),
    )
        .prop_map(
            |(nodes, weights, guarantees, running, waiting)| ReclaimCase {
                nodes,
                weights,
                guarantees,
                running,
                waiting,
            },
        )
}

impl ReclaimCase {
    fn objects(&self) -> Objects {
        let mut c = cluster();
        for i in 0..self.nodes {
            c = c.with(node(&format!("n{i}")).cpu(4).mem_gi(16).max_pods(110));
        }
        for (i, w) in self.weights.iter().enumerate() {
            let mut q = queue(&format!("q{i}")).weight(*w);
            if let Some(Some(g)) = self.guarantees.get(i) {
                q = q.guarantee(g * 500, GUARANTEED_MEMORY);
            }
            c = c.with(q);
        }
        let mut objs = c.objects();
        let mut free = vec![4000i64; self.nodes];
        let qn = self.weights.len();
        for (j, (q, n, cpu)) in self.running.iter().enumerate() {
            let name = format!("r{j}");
            let g = gang("t", &name)
                .queue(&format!("q{}", q % qn))
                .min(1)
                .pods(*n, cpu * 500, GI);
            let (pg, pods) = g.build();
            objs.pod_groups.push(pg);
            for mut p in pods {
                let Some(node) = free.iter().position(|f| *f >= cpu * 500) else {
                    continue;
                };
                free[node] -= cpu * 500;
                if let Some(spec) = p.spec.as_mut() {
                    spec.node_name = Some(format!("n{node}"));
                }
                if let Some(st) = p.status.as_mut() {
                    st.phase = Some("Running".into());
                }
                objs.pods.push(p);
            }
            set_phase(&mut objs, &name, "Running");
        }
        for (j, (q, n, cpu)) in self.waiting.iter().enumerate() {
            let name = format!("w{j}");
            objs.add(gang("t", &name).queue(&format!("q{}", q % qn)).min(1).pods(
                *n,
                cpu * 500,
                GI,
            ));
            set_phase(&mut objs, &name, "Inqueue");
        }
        objs
    }
}

fn check_reclaim(objs: &Objects, d: &Decisions) -> Result<(), TestCaseError> {
    if d.evictions.is_empty() {
        return Ok(());
    }
    let snap = build_snapshot(objs, &CacheOptions::default())
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let deserved = proportion_deserved(&snap);
    let pods: BTreeMap<String, &Pod> = objs.pods.iter().map(|p| (key(p), p)).collect();
    let queue_of = |p: &Pod| -> String {
        let group = p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("scheduling.k8s.io/group-name"))
            .cloned()
            .unwrap_or_default();
        objs.pod_groups
            .iter()
            .find(|g| g.metadata.name.as_deref() == Some(group.as_str()))
            .map(|g| g.spec.queue.clone())
            .unwrap_or_default()
    };
    // What each queue held once allocate and reclaim had placed their pods, before evictions.
    let placed: Vec<&str> = d
        .binds
        .iter()
        .chain(d.pipelined.iter())
        .map(|(p, _)| p.as_str())
        .collect();
    let mut held: BTreeMap<String, Res> = BTreeMap::new();
    for p in &objs.pods {
        let bound = p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some();
        if bound || placed.contains(&key(p).as_str()) {
            let r = request(p);
            let e = held.entry(queue_of(p)).or_insert([0, 0, 0]);
            for i in 0..3 {
                e[i] += r[i];
            }
        }
    }
    for v in &d.evictions {
        let q = queue_of(pods[v.as_str()]);
        let reason = d.eviction_reasons.get(v).cloned().unwrap_or_default();
        prop_assert!(
            !reason.starts_with(&format!("reclaimed by queue {q} ")),
            "{v} was reclaimed by its own queue: {reason}"
        );
        let qid = snap.queue_index[&q];
        let Some(des) = deserved[qid.idx()].as_ref() else {
            return Err(TestCaseError::fail(format!(
                "queue {q} has no deserved share"
            )));
        };
        let h = held.get(&q).copied().unwrap_or([0, 0, 0]);
        let over = h[0] > des.get(0) || h[1] > des.get(1) || h[2] * 1000 > des.get(2);
        prop_assert!(
            over,
            "{v} was reclaimed from queue {q}, which held cpu {}m memory {} within its deserved cpu {}m memory {}",
            h[0],
            h[1],
            des.get(0),
            des.get(1)
        );
    }
    Ok(())
}

/// Memory guaranteed with any CPU guarantee: more than these clusters hold, so that CPU alone
/// decides whether a queue is within its guarantee.
const GUARANTEED_MEMORY: i64 = 1024 * GI;

/// A queue using no more CPU than it is guaranteed when the session opens loses no pod to
/// another queue's reclaim in it.
fn check_guarantees(objs: &Objects, d: &Decisions) -> Result<(), TestCaseError> {
    let queue_of_group: BTreeMap<String, String> = objs
        .pod_groups
        .iter()
        .map(|g| {
            (
                g.metadata.name.clone().unwrap_or_default(),
                g.spec.queue.clone(),
            )
        })
        .collect();
    let queue_of = |p: &Pod| -> Option<String> {
        let group = p
            .metadata
            .annotations
            .as_ref()?
            .get("scheduling.k8s.io/group-name")?;
        queue_of_group.get(group).cloned()
    };
    let mut used: BTreeMap<String, i64> = BTreeMap::new();
    for p in &objs.pods {
        let on_node = p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some();
        if let (true, Some(q)) = (on_node, queue_of(p)) {
            *used.entry(q).or_default() += request(p)[0];
        }
    }
    let pods: BTreeMap<String, &Pod> = objs.pods.iter().map(|p| (key(p), p)).collect();
    for (victim, reason) in &d.eviction_reasons {
        if !reason.starts_with("reclaimed by queue") {
            continue;
        }
        let Some(q) = pods.get(victim).and_then(|p| queue_of(p)) else {
            continue;
        };
        let guarantee = objs
            .queues
            .iter()
            .find(|x| x.metadata.name.as_deref() == Some(q.as_str()))
            .and_then(|x| x.spec.guarantee.as_ref())
            .and_then(|g| g.resource.as_ref())
            .and_then(|r| r.get("cpu"))
            .map(|c| canonical_amount("cpu", &c.0).unwrap_or(0));
        let cpu = used.get(&q).copied().unwrap_or(0);
        if let Some(g) = guarantee {
            prop_assert!(
                cpu > g,
                "{victim} of queue {q} was {reason}, though the queue used {cpu}m CPU, within its guarantee of {g}m"
            );
        }
    }
    Ok(())
}

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
