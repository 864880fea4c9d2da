//! Pod affinity terms as kube-scheduler reads them, compiled once per session: selectors
//! that can be hashed and indexed, the namespaces a term covers, and every pod's terms by
//! task, with each term's topology key resolved to a domain per node.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm, WeightedPodAffinityTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use volcano_api::k8s_openapi;

use crate::model::{ClusterObjects, NodeId, Snapshot, TaskId};

/// A pod's or a namespace's labels.
pub(in crate::plugins) type Labels = BTreeMap<String, String>;

/// Index of a distinct term in [`Terms`].
pub(in crate::plugins) type TermId = u32;
/// Index of a distinct topology key in [`Terms`].
pub(in crate::plugins) type KeyId = u32;

/// A `matchExpressions` operator; one the API server would have refused matches nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Invalid,
}

/// One requirement on one label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

impl Requirement {
    fn matches(&self, labels: Option<&Labels>) -> bool {
        let value = labels.and_then(|l| l.get(&self.key));
        match self.op {
            Op::In => value.is_some_and(|v| self.values.contains(v)),
            Op::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
            Op::Invalid => false,
        }
    }
}

/// A label selector in a canonical form (`matchLabels` become `In` requirements, all sorted),
/// so two terms that select alike share one index entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(in crate::plugins) struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    fn compile(ls: &LabelSelector) -> Self {
        let mut requirements: Vec<Requirement> = ls
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| Requirement {
                key: k.clone(),
                op: Op::In,
                values: vec![v.clone()],
            })
            .collect();
        for e in ls.match_expressions.iter().flatten() {
            let op = match e.operator.as_str() {
                "In" => Op::In,
                "NotIn" => Op::NotIn,
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                _ => Op::Invalid,
            };
            let mut values = e.values.clone().unwrap_or_default();
            values.sort();
            values.dedup();
            requirements.push(Requirement {
                key: e.key.clone(),
                op,
                values,
            });
        }
        Selector { requirements }.canonical()
    }

    fn canonical(mut self) -> Self {
        self.requirements.sort();
        self.requirements.dedup();
        self
    }

    /// Whether `labels` satisfy every requirement (an empty selector matches everything).
    pub(in crate::plugins) fn matches(&self, labels: Option<&Labels>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// A label every matching pod carries, when the selector names one exactly: the key
    /// under which indexes file it.
    fn required_label(&self) -> Option<(&str, &str)> {
        self.requirements
            .iter()
            .find_map(|r| match (r.op, &r.values[..]) {
                (Op::In, [v]) => Some((r.key.as_str(), v.as_str())),
                _ => None,
            })
    }
}

/// One pod affinity term with the namespaces it covers resolved for its owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(in crate::plugins) struct Term {
    /// `None`: the term has no label selector, and matches no pod.
    selector: Option<Selector>,
    /// Listed namespaces, or the owner's when neither these nor a selector are given.
    namespaces: Vec<String>,
    /// `None`: no namespace is selected by labels.
    namespace_selector: Option<Selector>,
    /// The node label that defines the term's domains.
    pub topology_key: String,
}

impl Term {
    /// The term of a pod in `owner_ns` with `owner_labels`: `matchLabelKeys` and
    /// `mismatchLabelKeys` are merged into the selector from the owner's labels, as the API
    /// server does when the pod is created.
    pub(in crate::plugins) fn new(
        owner_ns: &str,
        owner_labels: Option<&Labels>,
        t: &PodAffinityTerm,
    ) -> Self {
        let selector = t.label_selector.as_ref().map(|ls| {
            let mut sel = Selector::compile(ls);
            let from_owner = |keys: &Option<Vec<String>>, op: Op| {
                keys.iter()
                    .flatten()
                    .filter_map(|k| {
                        let v = owner_labels?.get(k)?;
                        Some(Requirement {
                            key: k.clone(),
                            op,
                            values: vec![v.clone()],
                        })
                    })
                    .collect::<Vec<_>>()
            };
            sel.requirements
                .extend(from_owner(&t.match_label_keys, Op::In));
            sel.requirements
                .extend(from_owner(&t.mismatch_label_keys, Op::NotIn));
            sel.canonical()
        });
        let listed = t.namespaces.as_deref().unwrap_or(&[]);
        let mut namespaces: Vec<String> = if listed.is_empty() && t.namespace_selector.is_none() {
            vec![owner_ns.to_string()]
        } else {
            listed.to_vec()
        };
        namespaces.sort();
        namespaces.dedup();
        Term {
            selector,
            namespaces,
            namespace_selector: t.namespace_selector.as_ref().map(Selector::compile),
            topology_key: t.topology_key.clone(),
        }
    }

    /// Whether a pod in namespace `ns` with `labels` is one of the pods the term selects.
    pub(in crate::plugins) fn matches(
        &self,
        ns: &str,
        labels: Option<&Labels>,
        cluster: &ClusterObjects,
    ) -> bool {
        let Some(sel) = &self.selector else {
            return false;
        };
        sel.matches(labels)
            && (self
                .namespaces
                .binary_search_by(|n| n.as_str().cmp(ns))
                .is_ok()
                || self
                    .namespace_selector
                    .as_ref()
                    .is_some_and(|nsel| nsel.matches(Some(&cluster.namespace_labels(ns)))))
    }

    /// A label every pod the term selects carries, if the selector names one.
    pub(in crate::plugins) fn required_label(&self) -> Option<(&str, &str)> {
        self.selector.as_ref()?.required_label()
    }
}

/// One pod's affinity terms, by id.
#[derive(Debug, Default, Clone)]
pub(in crate::plugins) struct PodTerms {
    /// Required pod affinity.
    pub affinity: Vec<TermId>,
    /// Required pod anti-affinity.
    pub anti_affinity: Vec<TermId>,
    /// Preferred pod affinity with its weight.
    pub preferred_affinity: Vec<(TermId, i64)>,
    /// Preferred pod anti-affinity with its weight.
    pub preferred_anti_affinity: Vec<(TermId, i64)>,
}

impl PodTerms {
    fn is_empty(&self) -> bool {
        self.affinity.is_empty()
            && self.anti_affinity.is_empty()
            && self.preferred_affinity.is_empty()
            && self.preferred_anti_affinity.is_empty()
    }

    /// Whether the pod has required terms (the filter's concern).
    pub(in crate::plugins) fn has_required(&self) -> bool {
        !self.affinity.is_empty() || !self.anti_affinity.is_empty()
    }

    /// Whether the pod has preferred terms (the score's concern).
    pub(in crate::plugins) fn has_preferred(&self) -> bool {
        !self.preferred_affinity.is_empty() || !self.preferred_anti_affinity.is_empty()
    }
}

const NO_TERMS: u32 = u32::MAX;
const NO_DOMAIN: u32 = u32::MAX;

/// Every distinct term of the session's pods, each task's terms, and each topology key's
/// domain of every node (node labels do not change within a session).
#[derive(Debug, Default)]
pub(in crate::plugins) struct Terms {
    terms: Vec<Term>,
    term_keys: Vec<KeyId>,
    ids: HashMap<Term, TermId>,
    keys: HashMap<String, KeyId>,
    /// By topology key, by node: the node's domain (an id of the label's value), or
    /// `NO_DOMAIN` when the node lacks the label.
    domains: Vec<Vec<u32>>,
    /// By topology key: the nodes of each domain.
    members: Vec<Members>,
    /// How many nodes the snapshot has.
    nodes: usize,
    /// By task: index in `pods`, or `NO_TERMS`.
    of_task: Vec<u32>,
    pods: Vec<PodTerms>,
}

/// The nodes of each domain of one topology key, laid out in one array (domain `d`'s are
/// `nodes[starts[d]..starts[d + 1]]`): narrowing a scan reads many small domains in a row.
#[derive(Debug, Default)]
struct Members {
    starts: Vec<u32>,
    nodes: Vec<NodeId>,
}

impl Members {
    /// Groups the nodes by domain, given each node's domain (or `NO_DOMAIN`).
    fn group(domain_of_node: &[u32]) -> Self {
        let domains = domain_of_node
            .iter()
            .filter(|&&d| d != NO_DOMAIN)
            .map(|&d| d as usize + 1)
            .max()
            .unwrap_or(0);
        let mut starts = vec![0u32; domains + 1];
        for &d in domain_of_node.iter().filter(|&&d| d != NO_DOMAIN) {
            starts[d as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut nodes = vec![NodeId(0); starts[domains] as usize];
        for (n, &d) in domain_of_node.iter().enumerate() {
            if d != NO_DOMAIN {
                nodes[next[d as usize] as usize] = NodeId(n as u32);
                next[d as usize] += 1;
            }
        }
        Members { starts, nodes }
    }

    /// The nodes of domain `d`.
    fn in_domain(&self, d: u32) -> &[NodeId] {
        let (Some(&a), Some(&b)) = (self.starts.get(d as usize), self.starts.get(d as usize + 1))
        else {
            return &[];
        };
        self.nodes.get(a as usize..b as usize).unwrap_or(&[])
    }
}

fn required(terms: Option<&Vec<PodAffinityTerm>>) -> &[PodAffinityTerm] {
    terms.map_or(&[], Vec::as_slice)
}

fn preferred(terms: Option<&Vec<WeightedPodAffinityTerm>>) -> &[WeightedPodAffinityTerm] {
    terms.map_or(&[], Vec::as_slice)
}

impl Terms {
    /// Reads the terms of every task of the snapshot and the domains of the keys they name.
    pub(in crate::plugins) fn of(s: &Snapshot) -> Self {
        let mut me = Terms {
            of_task: vec![NO_TERMS; s.tasks.len()],
            nodes: s.nodes.len(),
            ..Default::default()
        };
        for (i, task) in s.tasks.iter().enumerate() {
            let pt = me.parse(&task.namespace, &task.pod);
            if !pt.is_empty() {
                me.of_task[i] = me.pods.len() as u32;
                me.pods.push(pt);
            }
        }
        if !me.keys.is_empty() {
            let mut keys: Vec<(&String, &KeyId)> = me.keys.iter().collect();
            keys.sort_by_key(|(_, id)| **id);
            me.domains = keys
                .into_iter()
                .map(|(key, _)| {
                    let mut values: HashMap<&str, u32> = HashMap::new();
                    s.nodes
                        .iter()
                        .map(|n| {
                            let labels = n.node.metadata.labels.as_ref();
                            match labels.and_then(|l| l.get(key)) {
                                Some(v) => {
                                    let next = values.len() as u32;
                                    *values.entry(v.as_str()).or_insert(next)
                                }
                                None => NO_DOMAIN,
                            }
                        })
                        .collect()
                })
                .collect();
            me.members = me.domains.iter().map(|of| Members::group(of)).collect();
        }
        me
    }

    fn parse(&mut self, ns: &str, pod: &Pod) -> PodTerms {
        let mut pt = PodTerms::default();
        let Some(affinity) = pod.spec.as_ref().and_then(|s| s.affinity.as_ref()) else {
            return pt;
        };
        let labels = pod.metadata.labels.as_ref();
        if let Some(a) = &affinity.pod_affinity {
            for t in required(
                a.required_during_scheduling_ignored_during_execution
                    .as_ref(),
            ) {
                pt.affinity.push(self.intern(Term::new(ns, labels, t)));
            }
            for w in preferred(
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref(),
            ) {
                if w.weight != 0 {
                    let id = self.intern(Term::new(ns, labels, &w.pod_affinity_term));
                    pt.preferred_affinity.push((id, i64::from(w.weight)));
                }
            }
        }
        if let Some(a) = &affinity.pod_anti_affinity {
            for t in required(
                a.required_during_scheduling_ignored_during_execution
                    .as_ref(),
            ) {
                pt.anti_affinity.push(self.intern(Term::new(ns, labels, t)));
            }
            for w in preferred(
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref(),
            ) {
                if w.weight != 0 {
                    let id = self.intern(Term::new(ns, labels, &w.pod_affinity_term));
                    pt.preferred_anti_affinity.push((id, i64::from(w.weight)));
                }
            }
        }
        pt
    }

    fn intern(&mut self, term: Term) -> TermId {
        if let Some(&id) = self.ids.get(&term) {
            return id;
        }
        let next_key = self.keys.len() as KeyId;
        let key = *self
            .keys
            .entry(term.topology_key.clone())
            .or_insert(next_key);
        let id = self.terms.len() as TermId;
        self.terms.push(term.clone());
        self.term_keys.push(key);
        self.ids.insert(term, id);
        id
    }

    /// The terms of task `t`, if it has any.
    #[inline]
    pub(in crate::plugins) fn of_task(&self, t: TaskId) -> Option<&PodTerms> {
        let i = *self.of_task.get(t.idx())?;
        self.pods.get(i as usize)
    }

    /// Whether no pod of the session has any term.
    pub(in crate::plugins) fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// The term `id`.
    #[inline]
    pub(in crate::plugins) fn term(&self, id: TermId) -> &Term {
        &self.terms[id as usize]
    }

    /// The topology key of term `id`.
    #[inline]
    pub(in crate::plugins) fn key_of(&self, id: TermId) -> KeyId {
        self.term_keys[id as usize]
    }

    /// Node `n`'s domain for topology key `key`, `None` when it lacks the label.
    #[inline]
    pub(in crate::plugins) fn domain(&self, key: KeyId, n: NodeId) -> Option<u32> {
        let d = *self.domains.get(key as usize)?.get(n.idx())?;
        (d != NO_DOMAIN).then_some(d)
    }

    /// How many nodes the snapshot has.
    pub(in crate::plugins) fn node_count(&self) -> usize {
        self.nodes
    }

    /// The nodes whose domain for topology key `key` is `d`.
    pub(in crate::plugins) fn nodes_in(&self, key: KeyId, d: u32) -> &[NodeId] {
        self.members
            .get(key as usize)
            .map_or(&[], |m| m.in_domain(d))
    }

    /// Whether task `t`'s pod is selected by term `id`.
    pub(in crate::plugins) fn selects(&self, s: &Snapshot, id: TermId, t: TaskId) -> bool {
        let task = s.task(t);
        self.term(id).matches(
            &task.namespace,
            task.pod.metadata.labels.as_ref(),
            &s.cluster,
        )
    }
}
