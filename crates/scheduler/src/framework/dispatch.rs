//! How the tiers' answers combine, extension point by extension point, exactly as Volcano's
//! `session_plugins.go` combines them; orders fall back to deterministic tie-breaks.

use std::cmp::Ordering;

use super::plugin::{Plugin, PluginSlot, Verdict, Vote};
use super::session::Session;
use crate::conf::PluginFlags;
use crate::fit::FitReason;
use crate::model::{JobId, NodeId, QueueId, TaskId};

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
        for slot in self.enabled(|f| f.predicate) {
            if let Some(Err(e)) = slot.plugin.predicate(&self.snap, t, n) {
                return Err(e);
            }
        }
        Ok(())
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
}
