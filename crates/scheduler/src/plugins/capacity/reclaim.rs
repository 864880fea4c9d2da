//! Victim selection for reclaim: which running tasks of other queues a reclaimer may take back,
//! considered in the order the action gives them, against a running copy of each victim
//! queue's allocation so that every accepted victim counts for the next decision.

use std::collections::HashMap;

use volcano_api::keys;

use super::Capacity;
use super::attrs::{
    QueueAttr, all_within, ancestor_at_depth, exceeds_on_relevant, shares_dimension,
};
use crate::model::{QueueId, Snapshot, TaskId};
use crate::resource::Resource;

impl Capacity {
    /// The candidates `reclaimer` may reclaim, in the order given. Empty (a rejection) when the
    /// queue tree is invalid or the reclaimer has no job.
    pub(super) fn victims(
        &self,
        s: &Snapshot,
        reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> Vec<TaskId> {
        let mut victims = Vec::new();
        if self.blocked.is_some() {
            return victims;
        }
        let Some(rj) = s.task(reclaimer).job else {
            return victims;
        };
        let Some(reclaimer_attr) = self.attr(s.job(rj).queue) else {
            return victims;
        };
        let wanted = &s.task(reclaimer).resreq;
        let ancestor_checks = self.hierarchy && self.ancestor_reclaim_level > 0;
        // What each queue would still hold once the victims chosen so far are gone.
        let mut remaining: HashMap<QueueId, Resource> = HashMap::new();

        for &v in candidates {
            let Some(vj) = s.task(v).job else { continue };
            let vq = s.job(vj).queue;
            let Some(attr) = self.attr(vq) else { continue };
            let req = &s.task(v).resreq;
            // Evicting a task that frees nothing the reclaimer asks for helps nobody.
            if !shares_dimension(req, wanted) {
                continue;
            }
            let held = remaining
                .entry(vq)
                .or_insert_with(|| attr.allocated.clone())
                .clone();
            // Never below the guarantee, on any resource.
            if !all_within(&attr.guarantee, &held.exceeded_part(req)) {
                continue;
            }
            let eligible = if !shares_dimension(req, &attr.deserved) {
                // The queue deserves nothing of what the task uses: it holds it only on loan.
                // Under a shared ancestor, though, when neither leaf deserves what the reclaimer
                // asks for, there is no real contention to settle.
                !(ancestor_checks
                    && self.shares_ancestor_within_level(s, reclaimer_attr, attr)
                    && !shares_dimension(wanted, &reclaimer_attr.deserved))
            } else {
                exceeds_on_relevant(&held, &attr.deserved, req)
            };
            if !eligible {
                continue;
            }
            let mut checked: Vec<QueueId> = Vec::new();
            if ancestor_checks
                && !self.ancestors_allow(s, reclaimer_attr, attr, req, &mut remaining, &mut checked)
            {
                continue;
            }
            for q in std::iter::once(vq).chain(checked) {
                if let Some(r) = remaining.get_mut(&q) {
                    *r = r.exceeded_part(req);
                }
            }
            victims.push(v);
        }
        victims
    }

    /// Volcano's ancestor check: at each level up to `ancestorReclaimLevel` where the victim's
    /// ancestor is not root and differs from the reclaimer's, that ancestor must also be over
    /// its deserved share on a resource the victim uses (or deserve none of it). The ancestors
    /// looked at are added to `checked`.
    fn ancestors_allow(
        &self,
        s: &Snapshot,
        reclaimer: &QueueAttr,
        victim: &QueueAttr,
        req: &Resource,
        remaining: &mut HashMap<QueueId, Resource>,
        checked: &mut Vec<QueueId>,
    ) -> bool {
        for level in 1..=self.ancestor_reclaim_level {
            let Some(anc) = self.reclaimee_ancestor_to_check(s, reclaimer, victim, level) else {
                continue;
            };
            let Some(aa) = self.attr(anc) else {
                return false;
            };
            let held = remaining.entry(anc).or_insert_with(|| aa.allocated.clone());
            checked.push(anc);
            if !shares_dimension(req, &aa.deserved) {
                continue;
            }
            if !exceeds_on_relevant(held, &aa.deserved, req) {
                return false;
            }
        }
        true
    }

    /// The victim's ancestor `level` levels up, when it must be checked: not root, and not the
    /// reclaimer's ancestor at the same level.
    fn reclaimee_ancestor_to_check(
        &self,
        s: &Snapshot,
        reclaimer: &QueueAttr,
        victim: &QueueAttr,
        level: usize,
    ) -> Option<QueueId> {
        let anc = ancestor_at_depth(victim, level)?;
        if s.queue(anc).name == keys::ROOT_QUEUE {
            return None;
        }
        (ancestor_at_depth(reclaimer, level) != Some(anc)).then_some(anc)
    }

    /// Whether the two queues share a non-root ancestor within `ancestorReclaimLevel` levels.
    fn shares_ancestor_within_level(&self, s: &Snapshot, a: &QueueAttr, b: &QueueAttr) -> bool {
        let within = |x: &QueueAttr| -> Vec<QueueId> {
            (1..=self.ancestor_reclaim_level)
                .filter_map(|l| ancestor_at_depth(x, l))
                .filter(|&q| s.queue(q).name != keys::ROOT_QUEUE)
                .collect()
        };
        let theirs = within(b);
        within(a).iter().any(|q| theirs.contains(q))
    }
}
