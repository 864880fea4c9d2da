//! The per-session index both halves of PodTopologySpread read: for each (namespace, selector,
//! topology key, set of counted nodes) in play, the matching pods in each topology domain.
//!
//! Nothing is built for a session without spread constraints. The first constraint checked
//! lists the pods on nodes by label; each distinct tally is then counted once from the pods
//! carrying its selector's first label (or its namespace's pods when it names none) and kept
//! current by every placement and eviction, which reach only the tallies whose anchor label the
//! pod carries. A check then costs a few array reads per node.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use volcano_api::k8s_openapi;

use crate::model::{NodeId, Snapshot, TaskId, TaskStatus};
use crate::plugins::label_selector::selector_matches;

/// No node, no domain.
const NONE: u32 = u32::MAX;

/// The topology key under which every node is its own domain (kube-scheduler scores hostname
/// spread node by node). Not a valid label key, so no constraint can name it.
pub(crate) const PER_NODE: &str = "\0per-node";

/// Index of a topology key's domains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TopologyId(usize);

/// Index of a set of nodes whose pods count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct EligibleId(usize);

/// Index of a tally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TallyId(usize);

/// The domain of each node for one topology key.
struct Topology {
    /// Domain by node id; [`NONE`] where the node lacks the label.
    of_node: Vec<u32>,
    /// Number of distinct domains.
    domains: usize,
}

/// Matching pods per domain, for one (namespace, selector, topology, eligible nodes).
struct Tally {
    namespace: String,
    selector: LabelSelector,
    topology: TopologyId,
    eligible: EligibleId,
    /// Matching pods on eligible nodes, by domain.
    counts: Vec<u32>,
    /// Domains with at least one eligible node: kube-scheduler's domains of the constraint.
    present: Vec<bool>,
    present_count: u32,
    /// The smallest count over present domains, when `min_current`.
    min: u32,
    min_current: bool,
}

impl Tally {
    fn add(&mut self, domain: u32, delta: i32) {
        let c = &mut self.counts[domain as usize];
        *c = c.saturating_add_signed(delta);
        self.min_current = false;
    }
}

/// Pods on nodes by label, and the tallies built from them.
#[derive(Default)]
pub(crate) struct SpreadCounts {
    built: bool,
    /// The node each counted pod is on, by task index ([`NONE`] when not counted).
    counted_on: Vec<u32>,
    /// Whether the task is in the label lists (a pod's labels do not change, so once listed
    /// it stays; `counted_on` says whether it counts now).
    listed: Vec<bool>,
    /// Pods by hash of (namespace, label key, value); a collision only adds candidates that
    /// the full match then drops.
    by_label: HashMap<u64, Vec<TaskId>>,
    /// Pods by hash of namespace.
    by_namespace: HashMap<u64, Vec<TaskId>>,
    topologies: Vec<Topology>,
    topology_ids: HashMap<String, TopologyId>,
    eligibles: Vec<Vec<bool>>,
    eligible_ids: HashMap<String, EligibleId>,
    tallies: Vec<Tally>,
    tally_ids: HashMap<(String, String, TopologyId, EligibleId), TallyId>,
    /// Tallies by the hash of their anchor label, which every pod they count carries.
    anchored: HashMap<u64, Vec<TallyId>>,
    /// Tallies whose selector names no single label value.
    unanchored: Vec<TallyId>,
    /// Bumped by every change to the counts, so per-task answers can be reused until then.
    generation: u64,
}

fn hash_of(parts: &[&str]) -> u64 {
    let mut h = DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// The label every pod a selector matches must carry with one value, if the selector names
/// one.
fn anchor(selector: &LabelSelector) -> Option<(&str, &str)> {
    if let Some((k, v)) = selector.match_labels.iter().flatten().next() {
        return Some((k, v));
    }
    selector.match_expressions.iter().flatten().find_map(|r| {
        match (r.operator.as_str(), r.values.as_deref()) {
            ("In", Some([v])) => Some((r.key.as_str(), v.as_str())),
            _ => None,
        }
    })
}

/// Whether a pod in this status counts where it is: kube-scheduler passes over terminating
/// pods, and finished ones hold no place.
fn counts_in(status: TaskStatus) -> bool {
    !matches!(
        status,
        TaskStatus::Releasing | TaskStatus::Succeeded | TaskStatus::Failed
    )
}

impl SpreadCounts {
    /// The number of changes to the counts so far.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    fn build(&mut self, s: &Snapshot) {
        if self.built {
            return;
        }
        self.built = true;
        self.counted_on = vec![NONE; s.tasks.len()];
        self.listed = vec![false; s.tasks.len()];
        for (i, task) in s.tasks.iter().enumerate() {
            if let Some(n) = task.node
                && counts_in(task.status)
            {
                self.counted_on[i] = n.0;
                self.list(s, TaskId(i as u32));
            }
        }
    }

    fn list(&mut self, s: &Snapshot, t: TaskId) {
        if self.listed[t.idx()] {
            return;
        }
        self.listed[t.idx()] = true;
        let task = s.task(t);
        let ns = task.namespace.as_str();
        for (k, v) in task.pod.metadata.labels.iter().flatten() {
            self.by_label
                .entry(hash_of(&[ns, k, v]))
                .or_default()
                .push(t);
        }
        self.by_namespace.entry(hash_of(&[ns])).or_default().push(t);
    }

    /// The domains of topology key `key` (or [`PER_NODE`]).
    pub(crate) fn topology(&mut self, s: &Snapshot, key: &str) -> TopologyId {
        if let Some(&id) = self.topology_ids.get(key) {
            return id;
        }
        let topology = if key == PER_NODE {
            Topology {
                of_node: (0..s.nodes.len() as u32).collect(),
                domains: s.nodes.len(),
            }
        } else {
            let mut values: HashMap<&str, u32> = HashMap::new();
            let of_node = s
                .nodes
                .iter()
                .map(|n| {
                    let labels = n.node.metadata.labels.as_ref();
                    match labels.and_then(|l| l.get(key)) {
                        Some(v) => {
                            let next = values.len() as u32;
                            *values.entry(v.as_str()).or_insert(next)
                        }
                        None => NONE,
                    }
                })
                .collect();
            Topology {
                of_node,
                domains: values.len(),
            }
        };
        let id = TopologyId(self.topologies.len());
        self.topologies.push(topology);
        self.topology_ids.insert(key.to_string(), id);
        id
    }

    /// The domain of node `n` under `topology`, `None` when the node lacks the label.
    #[inline]
    pub(crate) fn domain_of(&self, topology: TopologyId, n: NodeId) -> Option<u32> {
        let d = *self.topologies[topology.0].of_node.get(n.idx())?;
        (d != NONE).then_some(d)
    }

    /// The number of domains of `topology`.
    pub(crate) fn domains(&self, topology: TopologyId) -> usize {
        self.topologies[topology.0].domains
    }

    /// The set of nodes named `key` (the caller's description of what `counts` decides),
    /// computed with `counts` the first time.
    pub(crate) fn eligible(
        &mut self,
        s: &Snapshot,
        key: String,
        counts: impl Fn(NodeId) -> bool,
    ) -> EligibleId {
        if let Some(&id) = self.eligible_ids.get(&key) {
            return id;
        }
        let mask = s.node_ids().map(counts).collect();
        let id = EligibleId(self.eligibles.len());
        self.eligibles.push(mask);
        self.eligible_ids.insert(key, id);
        id
    }

    /// The tally of pods in `namespace` matching `selector` on the `eligible` nodes, by domain
    /// of `topology`; counted now if it is new.
    pub(crate) fn tally(
        &mut self,
        s: &Snapshot,
        namespace: &str,
        selector: &LabelSelector,
        topology: TopologyId,
        eligible: EligibleId,
    ) -> TallyId {
        self.build(s);
        let canonical = serde_json::to_string(selector).unwrap_or_default();
        let key = (namespace.to_string(), canonical, topology, eligible);
        if let Some(&id) = self.tally_ids.get(&key) {
            return id;
        }
        let topo = &self.topologies[topology.0];
        let mask = &self.eligibles[eligible.0];
        let mut present = vec![false; topo.domains];
        for (d, &ok) in topo.of_node.iter().zip(mask) {
            if ok && *d != NONE {
                present[*d as usize] = true;
            }
        }
        let mut tally = Tally {
            namespace: namespace.to_string(),
            selector: selector.clone(),
            topology,
            eligible,
            counts: vec![0; topo.domains],
            present_count: present.iter().filter(|p| **p).count() as u32,
            present,
            min: 0,
            min_current: false,
        };
        let anchor = anchor(selector).map(|(k, v)| hash_of(&[namespace, k, v]));
        let candidates = match anchor {
            Some(h) => self.by_label.get(&h),
            None => self.by_namespace.get(&hash_of(&[namespace])),
        };
        for &c in candidates.into_iter().flatten() {
            let n = self.counted_on[c.idx()];
            if n == NONE || !mask[n as usize] || topo.of_node[n as usize] == NONE {
                continue;
            }
            let task = s.task(c);
            if task.namespace == namespace
                && selector_matches(selector, task.pod.metadata.labels.as_ref())
            {
                tally.counts[topo.of_node[n as usize] as usize] += 1;
            }
        }
        let id = TallyId(self.tallies.len());
        self.tallies.push(tally);
        self.tally_ids.insert(key, id);
        match anchor {
            Some(h) => self.anchored.entry(h).or_default().push(id),
            None => self.unanchored.push(id),
        }
        id
    }

    /// Matching pods in domain `domain` of the tally's topology.
    #[inline]
    pub(crate) fn count(&self, tally: TallyId, domain: u32) -> u32 {
        self.tallies[tally.0]
            .counts
            .get(domain as usize)
            .copied()
            .unwrap_or(0)
    }

    /// The tally's domains (those with an eligible node) and the smallest count among them
    /// (0 when there is none).
    pub(crate) fn min(&mut self, tally: TallyId) -> (u32, u32) {
        let t = &mut self.tallies[tally.0];
        if !t.min_current {
            t.min = t
                .counts
                .iter()
                .zip(&t.present)
                .filter(|(_, p)| **p)
                .map(|(c, _)| *c)
                .min()
                .unwrap_or(0);
            t.min_current = true;
        }
        (t.present_count, t.min)
    }

    /// `t` was placed on its node.
    pub(crate) fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        if !self.built {
            return;
        }
        let task = s.task(t);
        let Some(n) = task.node else { return };
        if !counts_in(task.status) || self.counted_on[t.idx()] != NONE {
            return;
        }
        self.counted_on[t.idx()] = n.0;
        self.list(s, t);
        self.apply(s, t, n, 1);
    }

    /// `t`'s placement was undone or `t` is being evicted: it no longer counts.
    pub(crate) fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        if !self.built {
            return;
        }
        let n = std::mem::replace(&mut self.counted_on[t.idx()], NONE);
        if n != NONE {
            self.apply(s, t, NodeId(n), -1);
        }
    }

    fn apply(&mut self, s: &Snapshot, t: TaskId, n: NodeId, delta: i32) {
        self.generation += 1;
        if self.tallies.is_empty() {
            return;
        }
        let task = s.task(t);
        let ns = task.namespace.as_str();
        let labels = task.pod.metadata.labels.as_ref();
        let mut reached: Vec<TallyId> = self.unanchored.clone();
        for (k, v) in labels.into_iter().flatten() {
            if let Some(ids) = self.anchored.get(&hash_of(&[ns, k, v])) {
                reached.extend_from_slice(ids);
            }
        }
        reached.sort_unstable_by_key(|id| id.0);
        reached.dedup();
        for id in reached {
            let tally = &self.tallies[id.0];
            if !self.eligibles[tally.eligible.0][n.idx()] || tally.namespace != ns {
                continue;
            }
            let Some(d) = self.domain_of(tally.topology, n) else {
                continue;
            };
            if selector_matches(&tally.selector, labels) {
                self.tallies[id.0].add(d, delta);
            }
        }
    }
}
