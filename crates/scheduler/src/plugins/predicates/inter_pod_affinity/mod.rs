//! InterPodAffinity: required pod affinity and anti-affinity, and the symmetry rule (an existing
//! pod's required anti-affinity keeps matching pods out of its topology domain), with
//! kube-scheduler's meaning and messages.
//!
//! Where the selected pods are is counted once per session by topology domain and kept
//! current by every placement and eviction; a task's view of those counts (which existing
//! terms it falls under, whether it may be the first of its group) is worked out on its
//! first node check and kept until the next placement, so a node check is a few lookups.

pub(in crate::plugins) mod index;
pub(in crate::plugins) mod terms;
#[cfg(test)]
mod tests;
/// The clusters the filter's tests build, for the score's.
#[cfg(test)]
pub(in crate::plugins) use tests::{
    affinity, anti_affinity, four_nodes, incoming, labelled, node_id, running, snapshot, task, term,
};

use std::cell::RefCell;

use super::Filter;
use crate::fit::FitReason;
use crate::model::{NodeId, NodeSet, Snapshot, TaskId, TaskStatus};
use index::{DomainCounts, Owners, Placed, QueryId, Selected, pair};
use smallvec::SmallVec;
use terms::{KeyId, TermId, Terms};

/// kube-scheduler's reason when a node fails the pod's required affinity.
pub const AFFINITY_MISMATCH: &str = "node(s) didn't match pod affinity rules";
/// kube-scheduler's reason when a node fails the pod's required anti-affinity.
pub const ANTI_AFFINITY_MISMATCH: &str = "node(s) didn't match pod anti-affinity rules";
/// kube-scheduler's reason when an existing pod's required anti-affinity keeps the pod off.
pub const EXISTING_ANTI_AFFINITY_MISMATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// Pods by topology domain, as the required terms in play ask for them.
pub(super) struct InterPodAffinity {
    terms: Terms,
    placed: Placed,
    /// Required anti-affinity terms of the pods on nodes, one weight per owner.
    owners: Owners,
    /// Bumped by every placement and eviction: a task's view older than it is stale.
    generation: u64,
    lazy: RefCell<Lazy>,
}

/// What node checks compute on first need.
#[derive(Default)]
struct Lazy {
    /// Pods on nodes matching each task's terms.
    selected: Selected,
    /// The last task checked, as seen at one generation.
    view: Option<TaskView>,
}

/// One task's required terms against the pods on nodes (kube-scheduler's PreFilter state).
struct TaskView {
    task: TaskId,
    generation: u64,
    /// Where pods matching all its affinity terms are, for each term's topology key.
    affinity: Option<Vec<(KeyId, Domains)>>,
    /// No pod on a node matches all its affinity terms and it matches them itself: the first
    /// pod of a group with affinity to itself may go to any node with the keys.
    first_of_group: bool,
    /// Where the pods its anti-affinity terms select are.
    anti_affinity: Vec<(KeyId, Domains)>,
    /// Where the existing pods whose anti-affinity terms select it are.
    existing: Vec<(KeyId, Domains)>,
}

/// Up to this many domains are copied into a task's view; beyond, the view looks them up in
/// the index.
const LISTED_DOMAINS: usize = 16;

/// The domains of one topology key where a count is positive.
enum Domains {
    /// Listed, when few.
    Listed(SmallVec<[u32; 8]>),
    /// Those of a query's counts.
    Selected(QueryId),
    /// Those of an existing term's owners.
    Owned(TermId),
}

impl Domains {
    fn of(counts: &DomainCounts, key: KeyId, or: Domains) -> Domains {
        if counts.len() > LISTED_DOMAINS {
            return or;
        }
        Domains::Listed(
            counts
                .iter()
                .filter(|&(&at, &c)| (at >> 32) as KeyId == key && c > 0)
                .map(|(&at, _)| at as u32)
                .collect(),
        )
    }

    fn is_none(&self) -> bool {
        matches!(self, Domains::Listed(l) if l.is_empty())
    }

    #[inline]
    fn contains(&self, selected: &Selected, owners: &Owners, key: KeyId, d: u32) -> bool {
        match self {
            Domains::Listed(l) => l.contains(&d),
            Domains::Selected(q) => selected
                .counts(*q)
                .get(&pair(key, d))
                .is_some_and(|&c| c > 0),
            Domains::Owned(id) => owners.at(*id, pair(key, d)) > 0,
        }
    }
}

impl InterPodAffinity {
    /// Indexes the snapshot's pods that carry required anti-affinity.
    pub(super) fn new(s: &Snapshot) -> Self {
        let terms = Terms::of(s);
        let mut owners = Owners::default();
        if !terms.is_empty() {
            for t in s.tasks.iter().enumerate().map(|(i, _)| TaskId(i as u32)) {
                let task = s.task(t);
                let (Some(n), Some(pt)) = (task.node, terms.of_task(t)) else {
                    continue;
                };
                if matches!(task.status, TaskStatus::Succeeded | TaskStatus::Failed) {
                    continue;
                }
                for &id in &pt.anti_affinity {
                    owners.add(&terms, id, n, 1);
                }
            }
        }
        InterPodAffinity {
            terms,
            placed: Placed::default(),
            owners,
            generation: 0,
            lazy: RefCell::default(),
        }
    }

    /// Counts (`delta` 1) or uncounts (-1) pod `t` on node `n`.
    fn account(&mut self, s: &Snapshot, t: TaskId, n: NodeId, delta: i64) {
        if let Some(pt) = self.terms.of_task(t) {
            for &id in &pt.anti_affinity {
                self.owners.add(&self.terms, id, n, delta);
            }
        }
        self.lazy
            .get_mut()
            .selected
            .add(s, &self.terms, t, n, delta);
    }

    /// Task `t`'s view at the current generation.
    fn view(&self, lazy: &mut Lazy, s: &Snapshot, t: TaskId) {
        if lazy
            .view
            .as_ref()
            .is_some_and(|v| v.task == t && v.generation == self.generation)
        {
            return;
        }
        let selected = &mut lazy.selected;
        if !selected.is_built() {
            // Every waiting task's queries are counted in the one scan.
            for (i, task) in s.tasks.iter().enumerate() {
                if task.node.is_none() {
                    self.register(selected, s, TaskId(i as u32));
                }
            }
            selected.build(s, &self.placed, &self.terms);
        }
        let (affinity, anti_affinity) = self.register(selected, s, t);
        let task = s.task(t);
        let first_of_group = affinity.as_ref().is_some_and(|(_, q)| {
            selected.counts(*q).is_empty()
                && self
                    .terms
                    .of_task(t)
                    .is_some_and(|pt| pt.affinity.iter().all(|&id| self.terms.selects(s, id, t)))
        });
        let affinity = affinity.map(|(keys, q)| {
            let counts = selected.counts(q);
            keys.into_iter()
                .map(|key| (key, Domains::of(counts, key, Domains::Selected(q))))
                .collect()
        });
        let anti_affinity = anti_affinity
            .into_iter()
            .map(|(key, q)| {
                let counts = selected.counts(q);
                (key, Domains::of(counts, key, Domains::Selected(q)))
            })
            .filter(|(_, d)| !d.is_none())
            .collect();
        let mut existing = Vec::new();
        self.owners.selecting(
            &self.terms,
            &task.namespace,
            task.pod.metadata.labels.as_ref(),
            &s.cluster,
            |id| {
                let key = self.terms.key_of(id);
                let d = Domains::of(self.owners.counts(id), key, Domains::Owned(id));
                if !d.is_none() {
                    existing.push((key, d));
                }
            },
        );
        lazy.view = Some(TaskView {
            task: t,
            generation: self.generation,
            affinity,
            first_of_group,
            anti_affinity,
            existing,
        });
    }

    /// The queries of task `t`'s required terms.
    #[allow(clippy::type_complexity)]
    fn register(
        &self,
        selected: &mut Selected,
        s: &Snapshot,
        t: TaskId,
    ) -> (Option<(Vec<KeyId>, QueryId)>, Vec<(KeyId, QueryId)>) {
        let Some(pt) = self.terms.of_task(t) else {
            return (None, Vec::new());
        };
        let affinity = (!pt.affinity.is_empty()).then(|| {
            let mut all = pt.affinity.clone();
            all.sort_unstable();
            all.dedup();
            let keys = pt
                .affinity
                .iter()
                .map(|&id| self.terms.key_of(id))
                .collect();
            (keys, selected.query(s, &self.placed, &self.terms, &all))
        });
        let anti = pt
            .anti_affinity
            .iter()
            .map(|&id| {
                let q = selected.query(s, &self.placed, &self.terms, &[id]);
                (self.terms.key_of(id), q)
            })
            .collect();
        (affinity, anti)
    }

    /// The nodes of the domains of `key` that `domains` holds, when kept as a set.
    fn occupied<'a>(
        &'a self,
        domains: &Domains,
        selected: &'a Selected,
        key: KeyId,
    ) -> Option<&'a NodeSet> {
        match domains {
            Domains::Listed(_) => None,
            Domains::Selected(q) => selected.occupied(*q).of(key),
            Domains::Owned(id) => self.owners.occupied(*id).and_then(|o| o.of(key)),
        }
    }

    /// kube-scheduler's three checks, in its order, on one node.
    fn check(&self, view: &TaskView, selected: &Selected, n: NodeId) -> Result<(), FitReason> {
        let owners = &self.owners;
        if let Some(keys) = &view.affinity {
            let mut pods_exist = true;
            for (key, domains) in keys {
                let Some(d) = self.terms.domain(*key, n) else {
                    // Every topology key of the terms must be on the node.
                    return Err(FitReason::unresolvable(AFFINITY_MISMATCH).depending_on_pods());
                };
                if !domains.contains(selected, owners, *key, d) {
                    pods_exist = false;
                }
            }
            if !pods_exist && !view.first_of_group {
                return Err(FitReason::unresolvable(AFFINITY_MISMATCH).depending_on_pods());
            }
        }
        for (key, domains) in &view.anti_affinity {
            if let Some(d) = self.terms.domain(*key, n)
                && domains.contains(selected, owners, *key, d)
            {
                return Err(FitReason::resolvable(ANTI_AFFINITY_MISMATCH).depending_on_pods());
            }
        }
        for (key, domains) in &view.existing {
            if let Some(d) = self.terms.domain(*key, n)
                && domains.contains(selected, owners, *key, d)
            {
                return Err(
                    FitReason::resolvable(EXISTING_ANTI_AFFINITY_MISMATCH).depending_on_pods()
                );
            }
        }
        Ok(())
    }
}

impl Filter for InterPodAffinity {
    fn concerns(&self, _s: &Snapshot, t: TaskId) -> bool {
        !self.owners.is_empty() || self.terms.of_task(t).is_some_and(|pt| pt.has_required())
    }

    fn filter(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Result<(), FitReason> {
        let required = self.terms.of_task(t).is_some_and(|pt| pt.has_required());
        if !required && self.owners.is_empty() {
            return Ok(());
        }
        let mut lazy = self.lazy.borrow_mut();
        self.view(&mut lazy, s, t);
        let Lazy { selected, view } = &*lazy;
        match view {
            Some(v) => self.check(v, selected, n),
            None => Ok(()),
        }
    }

    fn narrow(&self, s: &Snapshot, t: TaskId, nodes: &mut NodeSet) {
        let required = self.terms.of_task(t).is_some_and(|pt| pt.has_required());
        if !required && self.owners.is_empty() {
            return;
        }
        let mut lazy = self.lazy.borrow_mut();
        self.view(&mut lazy, s, t);
        let Lazy { selected, view } = &*lazy;
        let Some(view) = view else { return };
        let terms = &self.terms;
        if let Some(keys) = &view.affinity {
            for (key, domains) in keys {
                let key = *key;
                if view.first_of_group {
                    nodes.retain(|n| terms.domain(key, n).is_some());
                } else if let Domains::Listed(listed) = domains {
                    // Only the domains holding the pods it needs stay open.
                    let mut open = NodeSet::empty(s.nodes.len());
                    for &d in listed {
                        terms.nodes_in(key, d).iter().for_each(|&n| open.insert(n));
                    }
                    nodes.intersect_with(&open);
                } else {
                    match self.occupied(domains, selected, key) {
                        Some(open) => nodes.intersect_with(open),
                        None => nodes.retain(|_| false),
                    }
                }
            }
        }
        for (key, domains) in view.anti_affinity.iter().chain(&view.existing) {
            let key = *key;
            if let Domains::Listed(listed) = domains {
                for &d in listed {
                    terms.nodes_in(key, d).iter().for_each(|&n| nodes.remove(n));
                }
            } else if let Some(closed) = self.occupied(domains, selected, key) {
                nodes.difference_with(closed);
            }
        }
    }

    fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        self.generation += 1;
        if self.terms.is_empty() {
            return;
        }
        if let Some(n) = self.placed.on_allocate(s, t) {
            self.account(s, t, n, 1);
        }
    }

    fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        self.generation += 1;
        if self.terms.is_empty() {
            return;
        }
        if let Some(n) = self.placed.on_deallocate(s, t) {
            self.account(s, t, n, -1);
        }
    }
}
