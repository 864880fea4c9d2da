//! `capacity`: elastic quotas by `spec.deserved`. A queue may grow beyond what it deserves up to
//! its capability (less what other queues' guarantees reserve); reclaim brings it back to its
//! deserved share and never below its guarantee. With `enableHierarchy: true` queues form a tree
//! under `root` through `spec.parent`: jobs run only in leaf queues, usage counts for every
//! ancestor, and every limit is checked on the leaf and on all its ancestors.
//!
//! The plugin owns its per-queue accounting ([`QueueAttr`]) for the session and keeps it in step
//! through the allocate/deallocate handlers. A queue tree Volcano cannot build (a missing parent,
//! a cycle, jobs in a non-leaf queue) stops all scheduling through this plugin as Volcano does;
//! here every refusal says why, and [`Capacity::hierarchy_problems`] / [`check_hierarchy`] list
//! the problems, including the warnings Volcano only logs.

mod attrs;
mod reclaim;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;

use volcano_api::keys;

use crate::conf::PluginOption;
use crate::framework::QueueShare;
use crate::framework::{Plugin, Verdict};
use crate::model::{JobId, QueueId, QueueState, Snapshot, TaskId};
use crate::resource::{PODS_DIM, Resource};

pub use attrs::{HierarchyProblem, QueueAttr};
use attrs::{ancestor_at_depth, common_level, within_on_some};

/// The argument that lets reclaim and preemptive look at ancestors up to this many levels up.
const ANCESTOR_RECLAIM_LEVEL: &str = "ancestorReclaimLevel";

/// The capacity plugin.
pub struct Capacity {
    hierarchy: bool,
    ancestor_reclaim_level: usize,
    attrs: Vec<QueueAttr>,
    problems: Vec<HierarchyProblem>,
    /// Why nothing may be scheduled, when the tree could not be built.
    blocked: Option<String>,
}

/// The problems of the queue tree `s` describes, as the capacity plugin with
/// `enableHierarchy: true` would find them (blocking ones first).
pub fn check_hierarchy(s: &Snapshot) -> Vec<HierarchyProblem> {
    let mut problems = attrs::build_hierarchy(s).problems;
    problems.sort_by_key(|p| !p.blocks_scheduling);
    problems
}

impl Capacity {
    /// Builds every queue's attributes at session open.
    pub fn new(opt: &PluginOption, s: &Snapshot) -> Self {
        let hierarchy = opt.flags.hierarchy;
        // Levels beyond the number of queues find no ancestor; bounding keeps loops short.
        let level = opt
            .arguments
            .i64_or(ANCESTOR_RECLAIM_LEVEL, 0)
            .clamp(0, s.queues.len() as i64) as usize;
        let built = if hierarchy {
            attrs::build_hierarchy(s)
        } else {
            attrs::build_flat(s)
        };
        let blocking: Vec<&str> = built
            .problems
            .iter()
            .filter(|p| p.blocks_scheduling)
            .map(|p| p.message.as_str())
            .collect();
        let blocked = (!blocking.is_empty()).then(|| {
            format!(
                "capacity plugin schedules nothing: the queue hierarchy is invalid: {}",
                blocking.join("; ")
            )
        });
        if let Some(why) = &blocked {
            tracing::warn!("{why}");
        }
        Capacity {
            hierarchy,
            ancestor_reclaim_level: level,
            attrs: built.attrs,
            problems: built.problems,
            blocked,
        }
    }

    /// The problems found in the queue tree (empty in flat mode).
    pub fn hierarchy_problems(&self) -> &[HierarchyProblem] {
        &self.problems
    }

    /// The plugin's view of queue `q`.
    pub fn queue_attr(&self, q: QueueId) -> Option<&QueueAttr> {
        self.attrs.get(q.idx())
    }

    fn attr(&self, q: QueueId) -> Option<&QueueAttr> {
        self.attrs.get(q.idx())
    }

    fn is_leaf(&self, q: QueueId) -> bool {
        self.attr(q).is_none_or(|a| a.children.is_empty())
    }

    /// The queue and its ancestors, leaf first: the order in which Volcano checks limits.
    fn chain(&self, q: QueueId) -> impl Iterator<Item = QueueId> + '_ {
        let ancestors = self.attr(q).map(|a| a.ancestors.as_slice()).unwrap_or(&[]);
        std::iter::once(q).chain(ancestors.iter().rev().copied())
    }

    fn not_leaf(&self, s: &Snapshot, q: QueueId) -> String {
        let names: Vec<&str> = self
            .attr(q)
            .map(|a| a.children.as_slice())
            .unwrap_or(&[])
            .iter()
            .map(|&c| s.queue(c).name.as_str())
            .collect();
        format!(
            "queue {} is not a leaf queue (child queues: {}); only leaf queues run jobs",
            s.queue(q).name,
            names.join(", ")
        )
    }

    /// Names `checked` in a reason: the queue itself, or an ancestor of `leaf`.
    fn whose(s: &Snapshot, leaf: QueueId, checked: QueueId) -> String {
        if leaf == checked {
            format!("queue {}", s.queue(leaf).name)
        } else {
            format!(
                "ancestor queue {} of queue {}",
                s.queue(checked).name,
                s.queue(leaf).name
            )
        }
    }

    fn update(&mut self, s: &Snapshot, t: TaskId, add: bool) {
        let Some(j) = s.task(t).job else { return };
        let q = s.job(j).queue;
        let req = &s.task(t).resreq;
        let depth = self.attr(q).map_or(0, |a| a.ancestors.len());
        for i in 0..=depth {
            let target = if i == 0 {
                Some(q)
            } else {
                self.attr(q).and_then(|a| a.ancestors.get(i - 1).copied())
            };
            let Some(a) = target.and_then(|x| self.attrs.get_mut(x.idx())) else {
                continue;
            };
            if add {
                a.allocated.add(req);
            } else {
                a.allocated.sub_saturating(req);
            }
            // Volcano recomputes only the leaf's share during a session; ancestors keep their
            // session-open share, which orders sibling subtrees until the next session.
            if i == 0 {
                a.update_share();
            }
        }
    }
}

/// Shares ascending; at equal shares a queue with a deserved amount goes before a best-effort
/// one (Volcano's `compareShareWithDeserved`).
fn compare_share(l: &QueueAttr, r: &QueueAttr) -> Ordering {
    match l.share.partial_cmp(&r.share) {
        Some(Ordering::Equal) | None => {
            let (ld, rd) = (!l.deserved.is_empty(), !r.deserved.is_empty());
            rd.cmp(&ld)
        }
        Some(o) => o,
    }
}

/// The dimensions `req` uses (pods aside) on which `used + req` goes over `limit`.
fn over_on_requested(used: &Resource, req: &Resource, limit: &Resource) -> Vec<usize> {
    (0..req.len())
        .filter(|&d| d != PODS_DIM && req.get(d) > 0)
        .filter(|&d| used.get(d).saturating_add(req.get(d)) > limit.get(d))
        .collect()
}

impl Plugin for Capacity {
    fn name(&self) -> &'static str {
        "capacity"
    }

    fn queue_share(&self, _s: &Snapshot, q: QueueId) -> Option<QueueShare> {
        let a = self.attr(q)?;
        Some(QueueShare {
            deserved: a.deserved.clone(),
            real_capability: a.real_capability.clone(),
            request: a.request.clone(),
            inqueue: a.inqueue.clone(),
            share: a.share,
        })
    }

    fn queue_order(&self, s: &Snapshot, l: QueueId, r: QueueId) -> Option<Ordering> {
        if self.blocked.is_some() {
            // Volcano registers no queue order when it cannot build the tree.
            return None;
        }
        let (pl, pr) = (s.queue(l).priority, s.queue(r).priority);
        if pl != pr {
            return Some(pr.cmp(&pl));
        }
        let (la, ra) = (self.attr(l)?, self.attr(r)?);
        if !self.hierarchy {
            return Some(compare_share(la, ra));
        }
        Some(match (la.children.is_empty(), ra.children.is_empty()) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => compare_share(la, ra),
            (true, true) => {
                // Two leaves compare as the siblings below their deepest common ancestor.
                let level = common_level(&la.ancestors, &ra.ancestors);
                let lp = la.ancestors.get(level + 1).copied().unwrap_or(l);
                let rp = ra.ancestors.get(level + 1).copied().unwrap_or(r);
                compare_share(self.attr(lp)?, self.attr(rp)?)
            }
        })
    }

    fn victim_queue_order(
        &self,
        _s: &Snapshot,
        l: QueueId,
        r: QueueId,
        preemptor_queue: QueueId,
    ) -> Option<Ordering> {
        if !self.hierarchy || self.blocked.is_some() {
            return None;
        }
        let p = &self.attr(preemptor_queue)?.ancestors;
        let ll = common_level(&self.attr(l)?.ancestors, p);
        let rl = common_level(&self.attr(r)?.ancestors, p);
        // The closer a victim's queue is to the preemptor's in the tree (the deeper the
        // ancestor they share), the earlier its tasks go: reclaim stays within a subtree first.
        Some(rl.cmp(&ll))
    }

    fn allocatable(&self, s: &Snapshot, q: QueueId, t: TaskId) -> Option<Result<(), String>> {
        let queue = s.queue(q);
        if queue.state != QueueState::Open {
            return Some(Err(format!(
                "queue {} is {}",
                queue.name,
                queue.state.as_str()
            )));
        }
        if let Some(why) = &self.blocked {
            return Some(Err(why.clone()));
        }
        if self.hierarchy && !self.is_leaf(q) {
            return Some(Err(self.not_leaf(s, q)));
        }
        let req = &s.task(t).resreq;
        for c in self.chain(q) {
            let a = self.attr(c)?;
            let over = over_on_requested(&a.allocated, req, &a.real_capability);
            if over.is_empty() {
                continue;
            }
            let detail: Vec<String> = over
                .iter()
                .map(|&d| {
                    format!(
                        "{} allocated {} + task {} > limit {}",
                        s.dims.name(d),
                        s.dims.format(d, a.allocated.get(d)),
                        s.dims.format(d, req.get(d)),
                        s.dims.format(d, a.real_capability.get(d))
                    )
                })
                .collect();
            return Some(Err(format!(
                "{} would exceed its capacity: {}",
                Self::whose(s, q, c),
                detail.join(", ")
            )));
        }
        Some(Ok(()))
    }

    fn job_enqueueable(&self, s: &Snapshot, j: JobId) -> Option<Verdict> {
        if let Some(why) = &self.blocked {
            return Some(Verdict::reject(why.clone()));
        }
        let job = s.job(j);
        let q = job.queue;
        if self.hierarchy && !self.is_leaf(q) {
            return Some(Verdict::reject(self.not_leaf(s, q)));
        }
        let queue = s.queue(q);
        if queue.state != QueueState::Open {
            return Some(Verdict::reject(format!(
                "queue {} is {}",
                queue.name,
                queue.state.as_str()
            )));
        }
        let Some(min) = &job.min_resources else {
            return Some(Verdict::permit());
        };
        for c in self.chain(q) {
            let a = self.attr(c)?;
            let mut used = a.allocated.clone();
            used.add(&a.inqueue);
            used.sub_saturating(&a.elastic);
            let over = over_on_requested(&used, min, &a.real_capability);
            if over.is_empty() {
                continue;
            }
            let detail: Vec<String> = over
                .iter()
                .map(|&d| {
                    format!(
                        "{} minResources {} + allocated {} + admitted {} - elastic {} > limit {}",
                        s.dims.name(d),
                        s.dims.format(d, min.get(d)),
                        s.dims.format(d, a.allocated.get(d)),
                        s.dims.format(d, a.inqueue.get(d)),
                        s.dims.format(d, a.elastic.get(d)),
                        s.dims.format(d, a.real_capability.get(d))
                    )
                })
                .collect();
            return Some(Verdict::reject(format!(
                "{} resource quota insufficient: {}",
                Self::whose(s, q, c),
                detail.join(", ")
            )));
        }
        Some(Verdict::permit())
    }

    fn job_enqueued(&mut self, s: &Snapshot, j: JobId) {
        let job = s.job(j);
        let Some(min) = &job.min_resources else {
            return;
        };
        let chain: Vec<QueueId> = self.chain(job.queue).collect();
        for c in chain {
            if let Some(a) = self.attrs.get_mut(c.idx()) {
                a.inqueue.add(min);
            }
        }
    }

    fn keeps_queue_shares(&self) -> bool {
        true
    }

    fn preemptive(&self, s: &Snapshot, q: QueueId, t: TaskId) -> Option<bool> {
        if self.blocked.is_some() || s.queue(q).state != QueueState::Open {
            return Some(false);
        }
        let a = self.attr(q)?;
        let req = &s.task(t).resreq;
        if !over_on_requested(&a.allocated, req, &a.real_capability).is_empty() {
            return Some(false);
        }
        let mut future = a.allocated.clone();
        future.add(req);
        // Reclaim is for a queue still below its deserved share on some resource it asks for.
        if within_on_some(&future, &a.deserved, req) {
            return Some(true);
        }
        if self.hierarchy {
            for level in 1..=self.ancestor_reclaim_level {
                let Some(anc) = ancestor_at_depth(a, level) else {
                    continue;
                };
                if s.queue(anc).name == keys::ROOT_QUEUE {
                    continue;
                }
                let aa = self.attr(anc)?;
                let mut future = aa.allocated.clone();
                future.add(req);
                if within_on_some(&future, &aa.deserved, req) {
                    return Some(true);
                }
            }
        }
        Some(false)
    }

    fn reclaimable(
        &self,
        s: &Snapshot,
        reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> Option<Vec<TaskId>> {
        Some(self.victims(s, reclaimer, candidates))
    }

    fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        self.update(s, t, true);
    }

    fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        self.update(s, t, false);
    }
}
