//! `nodeorder`: Kubernetes' scoring functions, weighted by Volcano's arguments:
//! least/most requested, balanced allocation, preferred node affinity, PreferNoSchedule taint
//! toleration, inter-pod affinity and pod topology spread. Scores follow kube-scheduler's
//! integer arithmetic so rankings match it.

mod inter_pod_affinity;
mod topology_spread;

use k8s_openapi::api::core::v1::Taint;
use volcano_api::k8s_openapi;

use super::predicates::{term_matches, tolerates_all};
use crate::conf::Arguments;
use crate::framework::Plugin;
use crate::model::node_table::ScoreInputs;
use crate::model::{NodeId, Snapshot, TaskId};
use crate::resource::{CPU_DIM, MEMORY_DIM};
use inter_pod_affinity::PodAffinityScore;
use topology_spread::SpreadScore;

const MAX_NODE_SCORE: i64 = 100;
/// kube-scheduler's request assumed for a container that declares no CPU request.
const DEFAULT_MILLI_CPU: i64 = 100;
/// kube-scheduler's request assumed for a container that declares no memory request.
const DEFAULT_MEMORY: i64 = 200 * 1024 * 1024;

/// The nodeorder plugin.
pub struct NodeOrder {
    least_requested: f64,
    most_requested: f64,
    balanced: f64,
    node_affinity: f64,
    taint_toleration: f64,
    /// Preferred pod affinity and anti-affinity (`podaffinity.weight`); `None` when its
    /// weight is 0.
    pod_affinity: Option<(f64, PodAffinityScore)>,
    /// `ScheduleAnyway` topology spread (`podtopologyspread.weight`); `None` when its weight
    /// is 0.
    topology_spread: Option<(f64, SpreadScore)>,
}

impl NodeOrder {
    /// Reads the `<scorer>.weight` arguments (Volcano's defaults otherwise) and indexes the
    /// snapshot's placed pods for the scorers that need them.
    pub fn new(args: &Arguments, s: &Snapshot) -> Self {
        let pod_affinity = args.f64_or("podaffinity.weight", 2.0);
        let topology_spread = args.f64_or("podtopologyspread.weight", 2.0);
        NodeOrder {
            pod_affinity: (pod_affinity != 0.0).then(|| (pod_affinity, PodAffinityScore::new(s))),
            topology_spread: (topology_spread != 0.0)
                .then(|| (topology_spread, SpreadScore::new(args, s))),
            least_requested: args.f64_or("leastrequested.weight", 1.0),
            most_requested: args.f64_or("mostrequested.weight", 0.0),
            balanced: args.f64_or("balancedresource.weight", 1.0),
            node_affinity: args.f64_or("nodeaffinity.weight", 2.0),
            taint_toleration: args.f64_or("tainttoleration.weight", 3.0),
        }
    }
}

/// kube-scheduler's non-zero request: a task that asks no CPU or memory is scored as if it
/// asked the defaults.
pub fn non_zero(cpu: i64, memory: i64) -> (i64, i64) {
    (
        if cpu == 0 { DEFAULT_MILLI_CPU } else { cpu },
        if memory == 0 { DEFAULT_MEMORY } else { memory },
    )
}

fn least(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        0
    } else {
        (capacity - requested) * MAX_NODE_SCORE / capacity
    }
}

fn most(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        0
    } else {
        requested.min(capacity) * MAX_NODE_SCORE / capacity
    }
}

fn normalize(raw: &[i64], reverse: bool) -> Vec<f64> {
    let max = raw.iter().copied().max().unwrap_or(0);
    raw.iter()
        .map(|&v| {
            let score = if max == 0 {
                if reverse { MAX_NODE_SCORE } else { v }
            } else {
                MAX_NODE_SCORE * v / max
            };
            let score = if reverse && max != 0 {
                MAX_NODE_SCORE - score
            } else {
                score
            };
            score as f64
        })
        .collect()
}

/// What the resource scores read of the task.
struct Ask {
    /// kube-scheduler's non-zero (milli-CPU, memory) request.
    non_zero: (i64, i64),
    /// The (milli-CPU, memory) request.
    request: (i64, i64),
}

impl NodeOrder {
    /// Least/most requested and balanced allocation of a node for a task.
    #[inline]
    fn resource_score(&self, ask: &Ask, node: ScoreInputs) -> f64 {
        let (alloc_cpu, alloc_mem) = node.allocatable;
        let mut score = 0.0;
        if self.least_requested != 0.0 || self.most_requested != 0.0 {
            // Pipelined tasks count: Volcano keeps its Kubernetes node view in step through
            // allocate events, which pipelining fires too.
            let (nc, nm) = node.non_zero_requested;
            let (tc, tm) = ask.non_zero;
            let (cpu, mem) = (nc + tc, nm + tm);
            if self.least_requested != 0.0 {
                score += ((least(cpu, alloc_cpu) + least(mem, alloc_mem)) / 2) as f64
                    * self.least_requested;
            }
            if self.most_requested != 0.0 {
                score += ((most(cpu, alloc_cpu) + most(mem, alloc_mem)) / 2) as f64
                    * self.most_requested;
            }
        }
        if self.balanced != 0.0 {
            let fraction = |requested: i64, cap: i64| {
                if cap == 0 {
                    1.0
                } else {
                    (requested as f64 / cap as f64).min(1.0)
                }
            };
            let (rc, rm) = node.requested;
            let std = ((fraction(rc + ask.request.0, alloc_cpu)
                - fraction(rm + ask.request.1, alloc_mem))
                / 2.0)
                .abs();
            score += (((1.0 - std) * MAX_NODE_SCORE as f64) as i64) as f64 * self.balanced;
        }
        score
    }
}

impl Plugin for NodeOrder {
    fn name(&self) -> &'static str {
        "nodeorder"
    }

    fn scores_nodes(&self) -> bool {
        true
    }

    fn batch_node_order(&self, s: &Snapshot, t: TaskId, nodes: &[NodeId], scores: &mut [f64]) {
        let task = s.task(t);
        let ask = Ask {
            non_zero: task.non_zero,
            request: (task.resreq.get(CPU_DIM), task.resreq.get(MEMORY_DIM)),
        };
        // The per-node scores are summed here rather than in `node_order`: the loop then
        // reads the task once and makes no call per node. Each node's sum is added to its
        // score whole, as `node_order`'s answer would be.
        for (score, &n) in scores.iter_mut().zip(nodes) {
            *score += self.resource_score(&ask, s.node_score_inputs(n));
        }
        if let Some((weight, scorer)) = &self.pod_affinity {
            scorer.score(s, t, nodes, scores, *weight);
        }
        if let Some((weight, scorer)) = &self.topology_spread {
            scorer.score(s, t, nodes, scores, *weight);
        }
        let pod = &task.pod;
        let spec = pod.spec.as_ref();
        if self.node_affinity != 0.0 {
            let preferred = spec
                .and_then(|p| p.affinity.as_ref())
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|na| {
                    na.preferred_during_scheduling_ignored_during_execution
                        .as_deref()
                })
                .unwrap_or(&[]);
            if !preferred.is_empty() {
                let raw: Vec<i64> = nodes
                    .iter()
                    .map(|&n| {
                        preferred
                            .iter()
                            .filter(|p| {
                                p.weight != 0 && term_matches(&s.node(n).node, &p.preference)
                            })
                            .map(|p| i64::from(p.weight))
                            .sum()
                    })
                    .collect();
                for (score, v) in scores.iter_mut().zip(normalize(&raw, false)) {
                    *score += v * self.node_affinity;
                }
            }
        }
        if self.taint_toleration != 0.0 {
            if nodes.iter().all(|&n| s.node_plain(n)) {
                // No taint anywhere: every node normalises to the top score.
                for score in scores.iter_mut() {
                    *score += MAX_NODE_SCORE as f64 * self.taint_toleration;
                }
                return;
            }
            let tolerations: Vec<_> = spec
                .and_then(|p| p.tolerations.as_deref())
                .unwrap_or(&[])
                .iter()
                .filter(|t| {
                    t.effect
                        .as_deref()
                        .is_none_or(|e| e.is_empty() || e == "PreferNoSchedule")
                })
                .cloned()
                .collect();
            let raw: Vec<i64> = nodes
                .iter()
                .map(|&n| {
                    if s.node_plain(n) {
                        return 0;
                    }
                    let taints: &[Taint] = s
                        .node(n)
                        .node
                        .spec
                        .as_ref()
                        .and_then(|sp| sp.taints.as_deref())
                        .unwrap_or(&[]);
                    taints
                        .iter()
                        .filter(|taint| taint.effect == "PreferNoSchedule")
                        .filter(|taint| {
                            tolerates_all(
                                &tolerations,
                                std::slice::from_ref(*taint),
                                &["PreferNoSchedule"],
                            )
                            .is_err()
                        })
                        .count() as i64
                })
                .collect();
            for (score, v) in scores.iter_mut().zip(normalize(&raw, true)) {
                *score += v * self.taint_toleration;
            }
        }
    }

    fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        if let Some((_, scorer)) = &mut self.pod_affinity {
            scorer.on_allocate(s, t);
        }
        if let Some((_, scorer)) = &mut self.topology_spread {
            scorer.on_allocate(s, t);
        }
    }

    fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        if let Some((_, scorer)) = &mut self.pod_affinity {
            scorer.on_deallocate(s, t);
        }
        if let Some((_, scorer)) = &mut self.topology_spread {
            scorer.on_deallocate(s, t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_scheduler_integer_scores() {
        assert_eq!(least(1000, 4000), 75);
        assert_eq!(least(5000, 4000), 0);
        assert_eq!(most(1000, 3000), 33);
        assert_eq!(normalize(&[0, 2, 4], false), [0.0, 50.0, 100.0]);
        assert_eq!(normalize(&[0, 1, 2], true), [100.0, 50.0, 0.0]);
        assert_eq!(normalize(&[0, 0], true), [100.0, 100.0]);
    }
}
