//! PodTopologySpread's score: `ScheduleAnyway` constraints (and the cluster's default
//! constraints for pods without any), fewer matching pods in a node's domains scoring higher.
//!
//! As kube-scheduler's `scoring.go`: among the nodes being scored, those missing a topology key
//! of the pod's constraints are ignored (they score 0). Each constraint weighs its count by
//! `ln(domains + 2)`, the domains being the distinct values among the scored nodes (for
//! `kubernetes.io/hostname`, the number of scored nodes); a node's raw score is
//! `Σ count × weight + (maxSkew − 1)`, rounded, where the count is the matching pods of the
//! node's domain over all nodes the constraint counts (for hostname: on the node itself).
//! Raw scores are then turned around so the fewest pods score 100. A pod without such
//! constraints gets nothing added, so every other pod's scores are untouched.
//!
//! Arguments (of the `nodeorder` plugin): `podtopologyspread.weight` (default 2), and the
//! default constraints' `podtopologyspread.defaultingType` / `podtopologyspread.defaultConstraints`
//! as the predicates plugin reads them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use crate::conf::Arguments;
use crate::model::{NodeId, Snapshot, TaskId};
use crate::plugins::predicates::topology_spread::constraints::{
    Defaults, HOSTNAME, SCHEDULE_ANYWAY, Selector, constraints_of,
};
use crate::plugins::predicates::topology_spread::counts::{
    PER_NODE, SpreadCounts, TallyId, TopologyId,
};
use crate::plugins::predicates::topology_spread::eligible_nodes;

const MAX_NODE_SCORE: i64 = 100;

/// One soft constraint of a task, resolved to the index's ids.
#[derive(Debug, Clone, Copy)]
struct Soft {
    /// The domains of the constraint's key (to tell nodes missing it, and count domains).
    topology: TopologyId,
    hostname: bool,
    /// Where counts are read: the key's tally, or the per-node one for hostname; `None` when
    /// the selector counts no pod.
    tally: Option<TallyId>,
    /// The tally's topology (per node for hostname).
    counted_by: TopologyId,
    max_skew: i64,
}

#[derive(Default)]
struct State {
    counts: SpreadCounts,
    softs: HashMap<TaskId, Arc<[Soft]>>,
    /// Per domain, the last scoring pass that saw it (to count distinct domains).
    seen: HashMap<TopologyId, Vec<u64>>,
    pass: u64,
    raw: Vec<i64>,
}

impl State {
    fn softs_of(&mut self, s: &Snapshot, t: TaskId, defaults: &Defaults) -> Arc<[Soft]> {
        if let Some(c) = self.softs.get(&t) {
            return c.clone();
        }
        let task = s.task(t);
        let pod = &task.pod;
        let constraints = constraints_of(pod, SCHEDULE_ANYWAY, defaults);
        let keys: Vec<&str> = constraints
            .iter()
            .map(|c| c.topology_key.as_str())
            .collect();
        let softs: Arc<[Soft]> = constraints
            .iter()
            .map(|c| {
                let topology = self.counts.topology(s, &c.topology_key);
                let hostname = c.topology_key == HOSTNAME;
                let counted_by = if hostname {
                    self.counts.topology(s, PER_NODE)
                } else {
                    topology
                };
                let tally = match &c.selector {
                    Selector::Match(sel) => {
                        // kube-scheduler counts a hostname domain on the node alone, whatever
                        // the inclusion policies.
                        let eligible = if hostname {
                            self.counts.eligible(s, "all".into(), |_| true)
                        } else {
                            eligible_nodes(&mut self.counts, s, pod, &keys, c)
                        };
                        Some(
                            self.counts
                                .tally(s, &task.namespace, sel, counted_by, eligible),
                        )
                    }
                    Selector::Nothing | Selector::Everything => None,
                };
                Soft {
                    topology,
                    hostname,
                    tally,
                    counted_by,
                    max_skew: i64::from(c.max_skew),
                }
            })
            .collect();
        self.softs.insert(t, softs.clone());
        softs
    }

    /// The number of distinct domains of `topology` among `nodes` not ignored.
    fn distinct_domains(
        &mut self,
        topology: TopologyId,
        nodes: &[NodeId],
        ignored: &[bool],
    ) -> usize {
        self.pass += 1;
        let pass = self.pass;
        let domains = self.counts.domains(topology);
        let seen = self.seen.entry(topology).or_default();
        if seen.len() < domains {
            *seen = vec![0; domains];
        }
        let mut distinct = 0;
        for (&n, &skip) in nodes.iter().zip(ignored) {
            if skip {
                continue;
            }
            if let Some(d) = self.counts.domain_of(topology, n)
                && seen[d as usize] != pass
            {
                seen[d as usize] = pass;
                distinct += 1;
            }
        }
        distinct
    }
}

/// Matching pods counted by topology domain, for the constraints in play.
pub(super) struct SpreadScore {
    defaults: Defaults,
    state: RefCell<State>,
}

impl SpreadScore {
    /// Reads the plugin's arguments; the snapshot's pods are counted when a constraint first
    /// needs them.
    pub(super) fn new(args: &Arguments, _s: &Snapshot) -> Self {
        SpreadScore {
            defaults: Defaults::from_args(args),
            state: RefCell::new(State::default()),
        }
    }

    /// Adds `weight` × the normalised score of each of `nodes` for `t` to `scores`.
    pub(super) fn score(
        &self,
        s: &Snapshot,
        t: TaskId,
        nodes: &[NodeId],
        scores: &mut [f64],
        weight: f64,
    ) {
        let pod = &s.task(t).pod;
        if self.defaults.is_empty()
            && !crate::plugins::predicates::topology_spread::constraints::declares_constraints(pod)
        {
            return;
        }
        let mut state = self.state.borrow_mut();
        let softs = state.softs_of(s, t, &self.defaults);
        if softs.is_empty() {
            return;
        }
        let ignored: Vec<bool> = nodes
            .iter()
            .map(|&n| {
                softs
                    .iter()
                    .any(|c| state.counts.domain_of(c.topology, n).is_none())
            })
            .collect();
        let scored = ignored.iter().filter(|i| !**i).count();
        let weights: Vec<f64> = softs
            .iter()
            .map(|c| {
                let size = if c.hostname {
                    scored
                } else {
                    state.distinct_domains(c.topology, nodes, &ignored)
                };
                ((size + 2) as f64).ln()
            })
            .collect();
        let mut raw = std::mem::take(&mut state.raw);
        raw.clear();
        raw.extend(nodes.iter().zip(&ignored).map(|(&n, &skip)| {
            if skip {
                return -1;
            }
            let total: f64 = softs
                .iter()
                .zip(&weights)
                .map(|(c, w)| {
                    let count = match (c.tally, state.counts.domain_of(c.counted_by, n)) {
                        (Some(id), Some(d)) => state.counts.count(id, d),
                        _ => 0,
                    };
                    f64::from(count) * w + (c.max_skew - 1) as f64
                })
                .sum();
            total.round() as i64
        }));
        for (score, v) in scores.iter_mut().zip(normalize(&raw)) {
            *score += v as f64 * weight;
        }
        state.raw = raw;
    }

    /// `t` was placed on its node in the session.
    pub(super) fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        self.state.get_mut().counts.on_allocate(s, t);
    }

    /// `t`'s placement was undone, or `t` is being evicted.
    pub(super) fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        self.state.get_mut().counts.on_deallocate(s, t);
    }
}

/// kube-scheduler's NormalizeScore: ignored nodes (raw −1) score 0; the others
/// `100 × (max + min − raw) / max`, or 100 when every raw score is 0.
fn normalize(raw: &[i64]) -> impl Iterator<Item = i64> + '_ {
    let valid = || raw.iter().copied().filter(|&r| r >= 0);
    let min = valid().min().unwrap_or(0);
    let max = valid().max().unwrap_or(0);
    raw.iter().map(move |&r| {
        if r < 0 {
            0
        } else if max == 0 {
            MAX_NODE_SCORE
        } else {
            MAX_NODE_SCORE * (max + min - r) / max
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::predicates::topology_spread::{
        ZONE, labelled, node_id, snapshot, spread, task, zoned,
    };

    fn scores_of(objs: &volcano_api::Objects, nodes: &[&str]) -> Vec<f64> {
        let s = snapshot(objs);
        let scorer = SpreadScore::new(&Arguments::default(), &s);
        let ids: Vec<NodeId> = nodes.iter().map(|n| node_id(&s, n)).collect();
        let mut scores = vec![0.0; ids.len()];
        scorer.score(&s, task(&s, "p"), &ids, &mut scores, 1.0);
        scores
    }

    #[test]
    fn normalising_turns_fewest_pods_into_the_top_score() {
        assert_eq!(normalize(&[0, 0]).collect::<Vec<_>>(), [100, 100]);
        assert_eq!(normalize(&[2, 4, -1]).collect::<Vec<_>>(), [100, 50, 0]);
    }

    #[test]
    fn fewer_matching_pods_in_the_zone_score_higher() {
        let mut objs = zoned(&[("node-a", "zone-a"), ("node-b", "zone-b"), ("node-c", "")]);
        for (i, n) in ["node-a", "node-a", "node-a", "node-b"].iter().enumerate() {
            let name = format!("running-{i}");
            objs.pods
                .push(labelled("ns", &name, &[("app", "web")], vec![], Some(n)).into());
        }
        objs.pods.push(
            labelled(
                "ns",
                "p",
                &[("app", "web")],
                vec![spread(1, ZONE, SCHEDULE_ANYWAY, "web")],
                None,
            )
            .into(),
        );
        // Two zones: weight ln 4; raw a = round(3 × 1.386) = 4, b = round(1.386) = 1;
        // a: 100 × (4 + 1 − 4) / 4 = 25, b: 100, c misses the key: 0.
        assert_eq!(
            scores_of(&objs, &["node-a", "node-b", "node-c"]),
            [25.0, 100.0, 0.0]
        );
    }

    #[test]
    fn hostname_spread_counts_each_node_alone() {
        let mut objs = zoned(&[("node-a", "zone-a"), ("node-b", "zone-a")]);
        for (i, n) in ["node-a", "node-a"].iter().enumerate() {
            let name = format!("running-{i}");
            objs.pods
                .push(labelled("ns", &name, &[("app", "web")], vec![], Some(n)).into());
        }
        objs.pods.push(
            labelled(
                "ns",
                "p",
                &[("app", "web")],
                vec![spread(2, HOSTNAME, SCHEDULE_ANYWAY, "web")],
                None,
            )
            .into(),
        );
        // Two nodes: weight ln 4; raw a = round(2 × 1.386 + 1) = 4, b = 1.
        assert_eq!(scores_of(&objs, &["node-a", "node-b"]), [25.0, 100.0]);
    }

    #[test]
    fn pods_without_soft_constraints_get_nothing_added() {
        let mut objs = zoned(&[("node-a", "zone-a"), ("node-b", "zone-b")]);
        objs.pods.push(
            labelled(
                "ns",
                "p",
                &[("app", "web")],
                vec![spread(1, ZONE, "DoNotSchedule", "web")],
                None,
            )
            .into(),
        );
        assert_eq!(scores_of(&objs, &["node-a", "node-b"]), [0.0, 0.0]);
        objs.pods.pop();
        objs.pods
            .push(labelled("ns", "p", &[("app", "web")], vec![], None).into());
        assert_eq!(scores_of(&objs, &["node-a", "node-b"]), [0.0, 0.0]);
    }
}
