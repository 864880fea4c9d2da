//! Reclaim over random queues with random weights, some holding more than their share: it
//! takes only from queues over their share, and never from a queue within its guarantee.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::resources::canonical_amount;
use volcano_api::{NamespacedName, Objects};
use volcano_scheduler::cache::{CacheOptions, build_snapshot};
use volcano_scheduler::framework::Decisions;
use volcano_scheduler::plugins::proportion_deserved;
use volcano_testkit::build::*;

use super::{AddBuilt, Res, key, request, set_phase};

#[derive(Debug, Clone)]
pub struct ReclaimCase {
    nodes: usize,
    weights: Vec<i32>,
    /// Per queue, CPUs guaranteed (halves of a CPU).
    guarantees: Vec<Option<i64>>,
    running: Vec<(usize, usize, i64)>,
    waiting: Vec<(usize, usize, i64)>,
}

pub fn arb_reclaim_case() -> impl Strategy<Value = ReclaimCase> {
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
    pub fn objects(&self) -> Objects {
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
                objs.pods.push(p.into());
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

pub fn check_reclaim(objs: &Objects, d: &Decisions) -> Result<(), TestCaseError> {
    if d.evictions.is_empty() {
        return Ok(());
    }
    let snap = build_snapshot(objs, &CacheOptions::default())
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let deserved = proportion_deserved(&snap);
    let pods: BTreeMap<NamespacedName, &Pod> = objs.pods.iter().map(|p| (key(p), &**p)).collect();
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
    let placed: Vec<&NamespacedName> = d
        .binds
        .iter()
        .chain(d.pipelined.iter())
        .map(|(p, _)| p)
        .collect();
    let mut held: BTreeMap<String, Res> = BTreeMap::new();
    for p in &objs.pods {
        let bound = p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some();
        if bound || placed.contains(&&key(p)) {
            let r = request(p);
            let e = held.entry(queue_of(p)).or_insert([0, 0, 0]);
            for i in 0..3 {
                e[i] += r[i];
            }
        }
    }
    for v in &d.evictions {
        let q = queue_of(pods[v]);
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
pub fn check_guarantees(objs: &Objects, d: &Decisions) -> Result<(), TestCaseError> {
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
    let pods: BTreeMap<NamespacedName, &Pod> = objs.pods.iter().map(|p| (key(p), &**p)).collect();
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
