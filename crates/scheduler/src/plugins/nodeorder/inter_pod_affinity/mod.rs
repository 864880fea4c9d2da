//! InterPodAffinity's score: the pod's preferred affinity and anti-affinity terms, and existing
//! pods' terms that match it (kube-scheduler's symmetric scoring), normalised over the
//! candidate nodes.
//!
//! As in kube-scheduler, a node's raw score is the sum, over the topology domains it is in, of
//! the weights there: `+weight` for each pod on a node that a preferred affinity term of the
//! pod selects, `-weight` for each one a preferred anti-affinity term selects, and the weight
//! of each existing pod's term that selects the pod (preferred affinity `+weight`, preferred
//! anti-affinity `-weight`, required affinity [`HARD_POD_AFFINITY_WEIGHT`]). Raw scores are
//! then spread min-max over 0..100.

#[cfg(test)]
mod tests;

use std::cell::RefCell;

use crate::model::{NodeId, Snapshot, TaskId, TaskStatus};
use crate::plugins::predicates::inter_pod_affinity::index::{
    Owners, Placed, QueryId, Selected, pair,
};
use crate::plugins::predicates::inter_pod_affinity::terms::{KeyId, Terms};

/// kube-scheduler's `hardPodAffinityWeight` default: what an existing pod's required affinity
/// term adds where it runs, for a pod it selects.
pub const HARD_POD_AFFINITY_WEIGHT: i64 = 1;

const MAX_NODE_SCORE: i64 = 100;

/// Placed pods' preferred terms and labels by topology domain.
pub(super) struct PodAffinityScore {
    terms: Terms,
    placed: Placed,
    /// The terms of pods on nodes that score the pods they select, with their owners'
    /// weights by domain.
    owners: Owners,
    /// Pods on nodes that waiting pods' preferred terms select.
    selected: RefCell<Selected>,
}

impl PodAffinityScore {
    /// Indexes the snapshot's placed pods.
    pub(super) fn new(s: &Snapshot) -> Self {
        let terms = Terms::of(s);
        let mut me = PodAffinityScore {
            terms,
            placed: Placed::default(),
            owners: Owners::default(),
            selected: RefCell::default(),
        };
        if !me.terms.is_empty() {
            for (i, task) in s.tasks.iter().enumerate() {
                if matches!(task.status, TaskStatus::Succeeded | TaskStatus::Failed) {
                    continue;
                }
                if let Some(n) = task.node {
                    me.account_owner(TaskId(i as u32), n, 1);
                }
            }
        }
        me
    }

    /// Counts (`sign` 1) or uncounts (-1) the terms `t` owns on node `n`.
    fn account_owner(&mut self, t: TaskId, n: NodeId, sign: i64) {
        let Some(pt) = self.terms.of_task(t) else {
            return;
        };
        for &id in &pt.affinity {
            self.owners
                .add(&self.terms, id, n, sign * HARD_POD_AFFINITY_WEIGHT);
        }
        for &(id, w) in &pt.preferred_affinity {
            self.owners.add(&self.terms, id, n, sign * w);
        }
        for &(id, w) in &pt.preferred_anti_affinity {
            self.owners.add(&self.terms, id, n, -sign * w);
        }
    }

    /// The preferred terms of `t` as (topology key, query, signed weight).
    fn preferred(
        &self,
        selected: &mut Selected,
        s: &Snapshot,
        t: TaskId,
    ) -> Vec<(KeyId, QueryId, i64)> {
        let Some(pt) = self.terms.of_task(t) else {
            return Vec::new();
        };
        let terms = &self.terms;
        let affine = pt.preferred_affinity.iter().map(|&(id, w)| (id, w));
        let averse = pt.preferred_anti_affinity.iter().map(|&(id, w)| (id, -w));
        affine
            .chain(averse)
            .map(|(id, w)| {
                let q = selected.query(s, &self.placed, terms, &[id]);
                (terms.key_of(id), q, w)
            })
            .collect()
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
        let has_preferred = self.terms.of_task(t).is_some_and(|pt| pt.has_preferred());
        if !has_preferred && self.owners.is_empty() {
            return;
        }
        let task = s.task(t);
        let mut existing = Vec::new();
        self.owners.selecting(
            &self.terms,
            &task.namespace,
            task.pod.metadata.labels.as_ref(),
            &s.cluster,
            |id| existing.push(id),
        );
        if !has_preferred && existing.is_empty() {
            // Every node scores alike: normalised, that is nothing.
            return;
        }
        let mut selected = self.selected.borrow_mut();
        if !selected.is_built() {
            // Every waiting task's queries are counted in the one scan.
            for (i, other) in s.tasks.iter().enumerate() {
                if other.node.is_none() {
                    self.preferred(&mut selected, s, TaskId(i as u32));
                }
            }
            selected.build(s, &self.placed, &self.terms);
        }
        let preferred = self.preferred(&mut selected, s, t);
        let raw: Vec<i64> = nodes
            .iter()
            .map(|&n| {
                let mut sum = 0;
                for &(key, q, w) in &preferred {
                    if let Some(d) = self.terms.domain(key, n) {
                        sum += w * selected.counts(q).get(&pair(key, d)).copied().unwrap_or(0);
                    }
                }
                for &id in &existing {
                    let key = self.terms.key_of(id);
                    if let Some(d) = self.terms.domain(key, n) {
                        sum += self.owners.at(id, pair(key, d));
                    }
                }
                sum
            })
            .collect();
        for (score, v) in scores.iter_mut().zip(normalize(&raw)) {
            *score += v as f64 * weight;
        }
    }

    /// `t` was placed on its node in the session.
    pub(super) fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        if self.terms.is_empty() {
            return;
        }
        if let Some(n) = self.placed.on_allocate(s, t) {
            self.account_owner(t, n, 1);
            self.selected.get_mut().add(s, &self.terms, t, n, 1);
        }
    }

    /// `t`'s placement was undone, or `t` is being evicted.
    pub(super) fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        if self.terms.is_empty() {
            return;
        }
        if let Some(n) = self.placed.on_deallocate(s, t) {
            self.account_owner(t, n, -1);
            self.selected.get_mut().add(s, &self.terms, t, n, -1);
        }
    }
}

/// kube-scheduler's normalisation: min-max over the candidates to 0..100, truncated; all
/// nodes alike score 0.
fn normalize(raw: &[i64]) -> Vec<i64> {
    let (Some(&min), Some(&max)) = (raw.iter().min(), raw.iter().max()) else {
        return Vec::new();
    };
    let spread = max - min;
    raw.iter()
        .map(|&v| {
            if spread > 0 {
                (MAX_NODE_SCORE as f64 * ((v - min) as f64 / spread as f64)) as i64
            } else {
                0
            }
        })
        .collect()
}
