//! How the tiers' answers combine, extension point by extension point, exactly as Volcano's
//! `session_plugins.go` combines them; orders fall back to deterministic tie-breaks.

use std::cmp::Ordering;

use super::plugin::{EvictionUnit, Plugin, PluginSlot, Verdict, Vote};
use super::session::Session;
use crate::conf::PluginFlags;
use crate::fit::FitReason;
use crate::model::{DomainId, DomainTotals, JobId, NodeId, NodeSet, QueueId, TaskId};
use crate::resource::Resource;

impl Session {
    fn enabled(&self, gate: fn(&PluginFlags) -> bool) -> impl Iterator<Item = &PluginSlot> {
        self.tiers.iter().flatten().filter(move |s| gate(&s.flags))
    }

    /// The first enabled plugin with an opinion (a non-`Equal` answer) decides: `Some(true)`
    /// when the left item goes first.
    fn first_opinion(
        &self,
        gate: fn(&PluginFlags) -> bool,
        order: impl Fn(&dyn Plugin) -> Option<Ordering>,
    ) -> Option<bool> {
        self.enabled(gate)
            .filter_map(|slot| order(slot.plugin.as_ref()))
            .find(|o| *o != Ordering::Equal)
            .map(|o| o == Ordering::Less)
    }

    /// Whether job `l` goes before job `r`: the first plugin with an opinion decides, then
    /// creation time, then UID.
    pub fn job_order_less(&self, l: JobId, r: JobId) -> bool {
        self.first_opinion(|f| f.job_order, |p| p.job_order(&self.snap, l, r))
            .unwrap_or_else(|| {
                let (a, b) = (self.snap.job(l), self.snap.job(r));
                (a.creation, &a.uid) < (b.creation, &b.uid)
            })
    }

    /// Whether queue `l` goes before queue `r`.
    pub fn queue_order_less(&self, l: QueueId, r: QueueId) -> bool {
        self.first_opinion(|f| f.queue_order, |p| p.queue_order(&self.snap, l, r))
            .unwrap_or_else(|| {
                let (a, b) = (self.snap.queue(l), self.snap.queue(r));
                (a.creation, &a.name) < (b.creation, &b.name)
            })
    }

    /// Whether task `l` goes before task `r`: plugins, then the pod-name index, creation time
    /// and UID.
    pub fn task_order_less(&self, l: TaskId, r: TaskId) -> bool {
        self.first_opinion(|f| f.task_order, |p| p.task_order(&self.snap, l, r))
            .unwrap_or_else(|| {
                let (a, b) = (self.snap.task(l), self.snap.task(r));
                match (a.name_index, b.name_index) {
                    (Some(x), Some(y)) if x != y => x < y,
                    _ => (a.creation, &a.uid) < (b.creation, &b.uid),
                }
            })
    }

    /// All enabled pre-predicates must pass; the first failure is returned.
    pub fn pre_predicate(&self, t: TaskId) -> Result<(), FitReason> {
        for slot in self.enabled(|f| f.predicate) {
            if let Some(Err(e)) = slot.plugin.pre_predicate(&self.snap, t) {
                return Err(e);
            }
        }
        Ok(())
    }

    /// All enabled predicates must pass; the first failure is returned.
    pub fn predicate(&self, t: TaskId, n: NodeId) -> Result<(), FitReason> {
        for &(ti, si) in &self.node_checks {
            if let Some(Err(e)) = self.tiers[ti][si].plugin.predicate(&self.snap, t, n) {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Refills `nodes` with every node, then lets the node-checking plugins take out those
    /// they know `t` fails on; returns whether any did.
    pub fn narrow_nodes(&self, t: TaskId, nodes: &mut NodeSet) -> bool {
        let all = self.snap.nodes.len();
        nodes.fill(all);
        for &(ti, si) in &self.node_checks {
            self.tiers[ti][si].plugin.narrow_nodes(&self.snap, t, nodes);
        }
        nodes.len() < all
    }

    /// Scores every candidate node for `t` (Σ node-order and batch scores), into `scores`.
    pub fn score_nodes(&self, t: TaskId, nodes: &[NodeId], scores: &mut Vec<f64>) {
        scores.clear();
        scores.resize(nodes.len(), 0.0);
        for slot in self.enabled(|f| f.node_order) {
            if !slot.plugin.scores_nodes() {
                continue;
            }
            for (i, &n) in nodes.iter().enumerate() {
                if let Some(v) = slot.plugin.node_order(&self.snap, t, n) {
                    scores[i] += v;
                }
            }
            slot.plugin.batch_node_order(&self.snap, t, nodes, scores);
        }
    }

    /// Σ of the enabled hypernode scores of domain `d` for job `j`, whose tasks ask `request`.
    pub fn score_hyper_node(
        &self,
        j: JobId,
        request: &Resource,
        d: DomainId,
        totals: &DomainTotals,
    ) -> f64 {
        self.enabled(|f| f.hyper_node_order)
            .filter_map(|slot| {
                slot.plugin
                    .hyper_node_order(&self.snap, j, request, d, totals)
            })
            .sum()
    }

    /// Whether a gang with a hard network topology is held to the domains its tier allows.
    /// Volcano asks the network-topology-aware plugin, and without it places such a gang
    /// anywhere; volcano-rs holds the limit unless the plugin is configured with
    /// `enabledHyperNodeGradient: false`, so a hard limit a user wrote is never silently ignored.
    pub fn hyper_node_gradient(&self) -> bool {
        !self
            .tiers
            .iter()
            .flatten()
            .any(|s| s.plugin.hyper_node_gradient() && !s.flags.hyper_node_gradient)
    }

    /// Whether any enabled plugin scores nodes.
    pub fn has_node_order(&self) -> bool {
        self.enabled(|f| f.node_order)
            .any(|s| s.plugin.scores_nodes())
    }

    /// AND over the enabled plugins; true when none answers.
    pub fn job_ready(&self, j: JobId) -> bool {
        self.enabled(|f| f.job_ready)
            .all(|s| s.plugin.job_ready(&self.snap, j).unwrap_or(true))
    }

    fn tier_vote(
        &self,
        gate: fn(&PluginFlags) -> bool,
        vote: impl Fn(&PluginSlot) -> Option<Vote>,
    ) -> bool {
        for tier in &self.tiers {
            let mut permitted = false;
            for slot in tier.iter().filter(|s| gate(&s.flags)) {
                match vote(slot) {
                    Some(Vote::Reject) => return false,
                    Some(Vote::Permit) => permitted = true,
                    _ => {}
                }
            }
            if permitted {
                return true;
            }
        }
        true
    }

    /// Per tier: any reject → false; a permit → true; all abstain → next tier; none → true.
    pub fn job_pipelined(&self, j: JobId) -> bool {
        self.tier_vote(
            |f| f.job_pipelined,
            |s| s.plugin.job_pipelined(&self.snap, j),
        )
    }

    /// Same vote rule as [`Session::job_pipelined`], gated by `enableJobEnqueued`; a rejection
    /// carries the rejecting plugin's reason.
    pub fn job_enqueueable(&self, j: JobId) -> Result<(), String> {
        for tier in &self.tiers {
            let mut permitted = false;
            for slot in tier.iter().filter(|s| s.flags.job_enqueued) {
                match slot.plugin.job_enqueueable(&self.snap, j) {
                    Some(Verdict {
                        vote: Vote::Reject,
                        reason,
                    }) => {
                        return Err(reason.unwrap_or_else(|| {
                            format!("rejected by plugin {}", slot.plugin.name())
                        }));
                    }
                    Some(Verdict {
                        vote: Vote::Permit, ..
                    }) => permitted = true,
                    _ => {}
                }
            }
            if permitted {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Tells the enabled plugins a job was admitted.
    pub fn job_enqueued(&mut self, j: JobId) {
        for slot in self
            .tiers
            .iter_mut()
            .flatten()
            .filter(|s| s.flags.job_enqueued)
        {
            slot.plugin.job_enqueued(&self.snap, j);
        }
    }

    /// The first tier with any answer decides (all must be true); no answer anywhere → false.
    pub fn job_starving(&self, j: JobId) -> bool {
        for tier in &self.tiers {
            let answers: Vec<bool> = tier
                .iter()
                .filter(|s| s.flags.job_starving)
                .filter_map(|s| s.plugin.job_starving(&self.snap, j))
                .collect();
            if !answers.is_empty() {
                return answers.into_iter().all(|b| b);
            }
        }
        false
    }

    /// The first plugin that finds the job invalid says why.
    pub fn job_valid(&self, j: JobId) -> Result<(), (String, String)> {
        for slot in self.tiers.iter().flatten() {
            if let Some(Err(e)) = slot.plugin.job_valid(&self.snap, j) {
                return Err(e);
            }
        }
        Ok(())
    }

    /// OR over the enabled plugins.
    pub fn overused(&self, q: QueueId) -> bool {
        self.enabled(|f| f.overused)
            .any(|s| s.plugin.overused(&self.snap, q) == Some(true))
    }

    /// AND over the enabled plugins; the first refusal's reason.
    pub fn allocatable(&self, q: QueueId, t: TaskId) -> Result<(), String> {
        for slot in self.enabled(|f| f.allocatable) {
            if let Some(Err(e)) = slot.plugin.allocatable(&self.snap, q, t) {
                return Err(e);
            }
        }
        Ok(())
    }

    /// The tiers' `victims` (in eviction order) as the eviction units the guards allow,
    /// asked of every plugin with the eviction's extension point `gate` on, whatever tier
    /// chose the victims: first every protected victim is left out, then the first plugin
    /// that groups victims decides the units (one per victim when none does).
    pub fn guard_victims(
        &self,
        gate: fn(&PluginFlags) -> bool,
        mut victims: Vec<TaskId>,
    ) -> Vec<EvictionUnit> {
        victims.retain(|&v| {
            !self
                .enabled(gate)
                .any(|s| s.plugin.protects_victim(&self.snap, v))
        });
        self.enabled(gate)
            .find_map(|s| s.plugin.victim_units(&self.snap, &victims))
            .unwrap_or_else(|| victims.into_iter().map(|v| vec![v]).collect())
    }

    /// Victims `preemptor` may take among `candidates`, combined as Volcano's `Preemptable`.
    pub fn preemptable(&self, preemptor: TaskId, candidates: &[TaskId]) -> Vec<TaskId> {
        self.victims(
            |f| f.preemptable,
            |p| p.preemptable(&self.snap, preemptor, candidates),
        )
    }

    /// Victims `reclaimer` may take among `candidates`, combined as Volcano's `Reclaimable`,
    /// then bounded by every enabled plugin that keeps queue shares.
    ///
    /// With Volcano's default tiers `gang` and `conformance` decide reclaim victims in the
    /// first tier and `proportion`'s answer is never asked for, so a queue under its deserved
    /// share can lose pods to reclaim and take them back in the next session. volcano-rs asks
    /// the share-keeping plugins about the tiers' victims whatever tier decided.
    pub fn reclaimable(&self, reclaimer: TaskId, candidates: &[TaskId]) -> Vec<TaskId> {
        let mut victims = self.victims(
            |f| f.reclaimable,
            |p| p.reclaimable(&self.snap, reclaimer, candidates),
        );
        for slot in self.enabled(|f| f.reclaimable) {
            if victims.is_empty() {
                break;
            }
            if !slot.plugin.keeps_queue_shares() {
                continue;
            }
            if let Some(allowed) = slot.plugin.reclaimable(&self.snap, reclaimer, &victims) {
                victims.retain(|v| allowed.contains(v));
            }
        }
        victims
    }

    /// Within a tier, abstaining plugins are skipped; the first answer starts the victim set,
    /// later ones intersect it; an empty answer (or an empty intersection, as in Volcano where
    /// it becomes nil) clears the set. The first tier that ends with a set decides; when none
    /// does, there are no victims.
    fn victims(
        &self,
        gate: fn(&PluginFlags) -> bool,
        answer: impl Fn(&dyn Plugin) -> Option<Vec<TaskId>>,
    ) -> Vec<TaskId> {
        for tier in &self.tiers {
            let mut victims: Option<Vec<TaskId>> = None;
            for slot in tier.iter().filter(|s| gate(&s.flags)) {
                let Some(candidates) = answer(slot.plugin.as_ref()) else {
                    continue;
                };
                if candidates.is_empty() {
                    victims = None;
                    break;
                }
                victims = match victims {
                    None => Some(candidates),
                    Some(v) => {
                        let both: Vec<TaskId> =
                            v.into_iter().filter(|t| candidates.contains(t)).collect();
                        (!both.is_empty()).then_some(both)
                    }
                };
            }
            if let Some(v) = victims {
                return v;
            }
        }
        Vec::new()
    }

    /// AND over the enabled plugins: whether queue `q` may reclaim for task `t`.
    pub fn preemptive(&self, q: QueueId, t: TaskId) -> bool {
        self.enabled(|f| f.preemptive)
            .all(|s| s.plugin.preemptive(&self.snap, q, t).unwrap_or(true))
    }

    /// Whether victims of queue `l` are evicted before those of `r` for a preemptor in
    /// `preemptor_queue`: the first plugin with an opinion, else the reverse of queue order.
    pub fn victim_queue_order_less(
        &self,
        l: QueueId,
        r: QueueId,
        preemptor_queue: QueueId,
    ) -> bool {
        self.tiers
            .iter()
            .flatten()
            .filter_map(|slot| {
                slot.plugin
                    .victim_queue_order(&self.snap, l, r, preemptor_queue)
            })
            .find(|o| *o != Ordering::Equal)
            .map(|o| o == Ordering::Less)
            .unwrap_or_else(|| !self.queue_order_less(l, r))
    }

    /// Volcano's job order as a comparison: the first plugin with an opinion, `None` when
    /// none has one (no creation-time fallback, as `JobOrderCompareFn`).
    pub fn job_order_opinion(&self, l: JobId, r: JobId) -> Option<bool> {
        self.first_opinion(|f| f.job_order, |p| p.job_order(&self.snap, l, r))
    }
}
