//! Per-session indexes of where the pods that affinity terms select are, by topology domain,
//! kept current by every placement and eviction so a node check is a few hash lookups.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use super::terms::{KeyId, Labels, TermId, Terms};
use crate::model::{ClusterObjects, NodeId, NodeSet, Snapshot, TaskId};
use smallvec::SmallVec;

/// Hashes the integer keys of the domain maps with one multiplication: they are small
/// distinct integers, and SipHash would be most of a node check's cost.
#[derive(Default, Clone, Copy)]
pub(in crate::plugins) struct IntHasher(u64);

impl Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// `(topology key, domain)` packed in one integer.
#[inline]
pub(in crate::plugins) fn pair(key: KeyId, domain: u32) -> u64 {
    (u64::from(key) << 32) | u64::from(domain)
}

/// A number per `(topology key, domain)`; entries at zero are removed, so an empty map means
/// nothing anywhere.
pub(in crate::plugins) type DomainCounts = HashMap<u64, i64, BuildHasherDefault<IntHasher>>;

/// Adds `delta` at `at`, dropping the entry when it comes back to zero; returns the change
/// in the number of entries.
pub(in crate::plugins) fn bump(counts: &mut DomainCounts, at: u64, delta: i64) -> isize {
    let v = counts.entry(at).or_insert(0);
    let was = *v != 0;
    *v += delta;
    if *v == 0 {
        counts.remove(&at);
        return -isize::from(was);
    }
    isize::from(!was)
}

/// The nodes of every domain where a count is positive, per topology key: what a scan for a
/// pod the counts keep out (or in) may skip without asking node by node.
#[derive(Debug, Default)]
pub(in crate::plugins) struct Occupied {
    by_key: SmallVec<[(KeyId, NodeSet); 1]>,
}

impl Occupied {
    /// Adds `delta` at `(key, d)` of `counts`, keeping the occupied nodes in step.
    fn bump(
        &mut self,
        terms: &Terms,
        counts: &mut DomainCounts,
        key: KeyId,
        d: u32,
        delta: i64,
    ) -> isize {
        let at = pair(key, d);
        let before = counts.get(&at).is_some_and(|&c| c > 0);
        let change = bump(counts, at, delta);
        let after = counts.get(&at).is_some_and(|&c| c > 0);
        if before != after {
            let i = match self.by_key.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    self.by_key.push((key, NodeSet::empty(terms.node_count())));
                    self.by_key.len() - 1
                }
            };
            let set = &mut self.by_key[i].1;
            for &n in terms.nodes_in(key, d) {
                if after {
                    set.insert(n);
                } else {
                    set.remove(n);
                }
            }
        }
        change
    }

    /// The nodes of `key`'s domains where the count is positive (`None`: none ever was).
    pub(in crate::plugins) fn of(&self, key: KeyId) -> Option<&NodeSet> {
        self.by_key.iter().find(|(k, _)| *k == key).map(|(_, s)| s)
    }
}

/// Which pods count as on a node: those on a node in the snapshot or placed in the session,
/// minus those evicted in the session. Remembers where each counted pod is, since an undone
/// placement is reported after the task left its node.
#[derive(Debug, Default)]
pub(in crate::plugins) struct Placed {
    /// Deallocated but still on their node (evicted in the session, still releasing).
    evicted: HashSet<TaskId>,
    /// Where each task placed in the session went.
    session_node: HashMap<TaskId, NodeId>,
}

impl Placed {
    /// `t` was placed (or its eviction undone): the node it now counts on.
    pub(in crate::plugins) fn on_allocate(&mut self, s: &Snapshot, t: TaskId) -> Option<NodeId> {
        self.evicted.remove(&t);
        let n = s.task(t).node?;
        self.session_node.insert(t, n);
        Some(n)
    }

    /// `t`'s placement was undone or `t` was evicted: the node it counted on.
    pub(in crate::plugins) fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) -> Option<NodeId> {
        match s.task(t).node {
            Some(n) => {
                self.evicted.insert(t);
                Some(n)
            }
            None => self.session_node.get(&t).copied(),
        }
    }

    /// Every pod on a node now, with its node.
    pub(in crate::plugins) fn each<'a>(
        &'a self,
        s: &'a Snapshot,
    ) -> impl Iterator<Item = (TaskId, NodeId)> + 'a {
        s.node_ids().flat_map(move |n| {
            s.node(n)
                .tasks
                .iter()
                .filter(|t| !self.evicted.contains(t))
                .map(move |&t| (t, n))
        })
    }
}

/// Ids filed by a label every matching pod must carry, plus those that name none; a pod's
/// candidates are the ids filed under its labels and the unfiled ones.
#[derive(Debug, Default)]
pub(in crate::plugins) struct LabelIndex<Id> {
    filed: HashMap<String, HashMap<String, Vec<Id>>>,
    unfiled: Vec<Id>,
}

impl<Id: Copy> LabelIndex<Id> {
    /// Files `id` under `label` (or as unfiled).
    pub(in crate::plugins) fn insert(&mut self, id: Id, label: Option<(&str, &str)>) {
        match label {
            Some((k, v)) => self
                .filed
                .entry(k.to_string())
                .or_default()
                .entry(v.to_string())
                .or_default()
                .push(id),
            None => self.unfiled.push(id),
        }
    }

    /// Calls `f` with every id that may select a pod with `labels` (each once: a label key
    /// appears once among a pod's labels, and an id is filed once).
    pub(in crate::plugins) fn candidates(&self, labels: Option<&Labels>, mut f: impl FnMut(Id)) {
        for &id in &self.unfiled {
            f(id);
        }
        if self.filed.is_empty() {
            return;
        }
        for (k, v) in labels.into_iter().flatten() {
            if let Some(ids) = self.filed.get(k).and_then(|by_value| by_value.get(v)) {
                for &id in ids {
                    f(id);
                }
            }
        }
    }
}

/// Index of a query in [`Selected`].
pub(in crate::plugins) type QueryId = u32;

/// For each query (a set of terms, a pod must match all), the pods on nodes that match it,
/// counted at each term's `(topology key, domain)` of their node: kube-scheduler's
/// `affinityCounts` and `antiAffinityCounts`, kept for every query of the session at once.
#[derive(Debug, Default)]
pub(in crate::plugins) struct Selected {
    queries: Vec<(Vec<TermId>, DomainCounts, Occupied)>,
    ids: HashMap<Vec<TermId>, QueryId>,
    index: LabelIndex<QueryId>,
    /// Whether the counts were filled from the pods on nodes; until then nothing is counted
    /// and placements need no bookkeeping.
    built: bool,
}

impl Selected {
    /// The id of the query "matches all of `terms`", counting its pods now if the others
    /// are already counted.
    pub(in crate::plugins) fn query(
        &mut self,
        s: &Snapshot,
        placed: &Placed,
        terms: &Terms,
        of: &[TermId],
    ) -> QueryId {
        if let Some(&id) = self.ids.get(of) {
            return id;
        }
        let id = self.queries.len() as QueryId;
        let label = of.first().and_then(|&t| terms.term(t).required_label());
        self.index.insert(id, label);
        self.queries
            .push((of.to_vec(), DomainCounts::default(), Occupied::default()));
        self.ids.insert(of.to_vec(), id);
        if self.built {
            for (t, n) in placed.each(s) {
                self.count(s, terms, id, t, n, 1);
            }
        }
        id
    }

    /// Counts the pods on nodes for every query, once.
    pub(in crate::plugins) fn build(&mut self, s: &Snapshot, placed: &Placed, terms: &Terms) {
        if self.built {
            return;
        }
        self.built = true;
        for (t, n) in placed.each(s) {
            self.add(s, terms, t, n, 1);
        }
    }

    /// Whether the counts are kept.
    pub(in crate::plugins) fn is_built(&self) -> bool {
        self.built
    }

    /// Counts (`delta` 1) or uncounts (-1) pod `t` on node `n` in every query it matches.
    pub(in crate::plugins) fn add(
        &mut self,
        s: &Snapshot,
        terms: &Terms,
        t: TaskId,
        n: NodeId,
        delta: i64,
    ) {
        if !self.built || self.queries.is_empty() {
            return;
        }
        let labels = s.task(t).pod.metadata.labels.as_ref();
        let mut hits: smallvec::SmallVec<[QueryId; 8]> = smallvec::SmallVec::new();
        self.index.candidates(labels, |q| hits.push(q));
        for q in hits {
            self.count(s, terms, q, t, n, delta);
        }
    }

    fn count(&mut self, s: &Snapshot, terms: &Terms, q: QueryId, t: TaskId, n: NodeId, delta: i64) {
        let (of, counts, occupied) = &mut self.queries[q as usize];
        if of.is_empty() || !of.iter().all(|&id| terms.selects(s, id, t)) {
            return;
        }
        for &id in of.iter() {
            let key = terms.key_of(id);
            if let Some(d) = terms.domain(key, n) {
                occupied.bump(terms, counts, key, d, delta);
            }
        }
    }

    /// The counts of query `q`.
    #[inline]
    pub(in crate::plugins) fn counts(&self, q: QueryId) -> &DomainCounts {
        &self.queries[q as usize].1
    }

    /// The nodes of `key`'s domains holding pods that match query `q`.
    pub(in crate::plugins) fn occupied(&self, q: QueryId) -> &Occupied {
        &self.queries[q as usize].2
    }
}

/// Terms that pods on nodes carry, with the sum of their owners' weights at each
/// `(topology key, domain)` of the owners' nodes: which existing pods' terms an incoming pod
/// falls under, and where (kube-scheduler's `existingAntiAffinityCounts`, and the symmetric
/// part of its score).
#[derive(Debug, Default)]
pub(in crate::plugins) struct Owners {
    /// By term id: the owners' weights by domain.
    by_term: Vec<DomainCounts>,
    /// By term id: the nodes of the domains with owners.
    occupied: Vec<Occupied>,
    /// By term id: whether the term is in `index`.
    filed: Vec<bool>,
    index: LabelIndex<TermId>,
    /// Entries over all terms: zero when no owner is counted anywhere.
    entries: usize,
}

impl Owners {
    /// Adds `weight` for an owner of term `id` on node `n` (removes it with a negative one).
    pub(in crate::plugins) fn add(&mut self, terms: &Terms, id: TermId, n: NodeId, weight: i64) {
        let key = terms.key_of(id);
        let Some(d) = terms.domain(key, n) else {
            return;
        };
        let i = id as usize;
        if self.by_term.len() <= i {
            self.by_term.resize_with(i + 1, DomainCounts::default);
            self.occupied.resize_with(i + 1, Occupied::default);
            self.filed.resize(i + 1, false);
        }
        if !self.filed[i] {
            self.filed[i] = true;
            self.index.insert(id, terms.term(id).required_label());
        }
        let change = self.occupied[i].bump(terms, &mut self.by_term[i], key, d, weight);
        self.entries = self.entries.saturating_add_signed(change);
    }

    /// Whether no owner is counted anywhere.
    #[inline]
    pub(in crate::plugins) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Calls `f` with each term that has owners and selects a pod in `ns` with `labels`.
    pub(in crate::plugins) fn selecting(
        &self,
        terms: &Terms,
        ns: &str,
        labels: Option<&Labels>,
        cluster: &ClusterObjects,
        mut f: impl FnMut(TermId),
    ) {
        self.index.candidates(labels, |id| {
            if !self.counts(id).is_empty() && terms.term(id).matches(ns, labels, cluster) {
                f(id);
            }
        });
    }

    /// The owners' weights of term `id` by domain.
    #[inline]
    pub(in crate::plugins) fn counts(&self, id: TermId) -> &DomainCounts {
        static EMPTY: std::sync::LazyLock<DomainCounts> =
            std::sync::LazyLock::new(DomainCounts::default);
        self.by_term.get(id as usize).unwrap_or(&EMPTY)
    }

    /// The nodes of the domains where term `id` has owners.
    pub(in crate::plugins) fn occupied(&self, id: TermId) -> Option<&Occupied> {
        self.occupied.get(id as usize)
    }

    /// The owners' weight of term `id` at `at`.
    #[inline]
    pub(in crate::plugins) fn at(&self, id: TermId, at: u64) -> i64 {
        self.counts(id).get(&at).copied().unwrap_or(0)
    }
}
