//! The network domains (HyperNodes) of a session: each domain's nodes, each node's domains, and
//! a virtual domain over the whole cluster above the highest tier, as Volcano's session adds
//! one. Built once per change of HyperNodes or nodes and shared by every snapshot.

use std::collections::HashMap;

use volcano_api::Objects;
use volcano_api::topology::tree::{HyperNodeTree, NodeRef};

use super::NodeId;

/// The name of the virtual domain over every node.
pub const CLUSTER_DOMAIN: &str = "<cluster>";

/// Index of a domain in [`Topology::domains`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DomainId(pub u32);

impl DomainId {
    /// The arena index.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// One network domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    /// The HyperNode's name ([`CLUSTER_DOMAIN`] for the virtual one).
    pub name: String,
    /// Its tier.
    pub tier: i64,
    /// Its nodes, in id order.
    pub nodes: Vec<NodeId>,
}

/// The domains of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Real domains by tier then name, then the virtual cluster domain.
    pub domains: Vec<Domain>,
    /// Each node's domains, lowest tier first; the cluster domain is last for every node.
    pub node_domains: Vec<Vec<DomainId>>,
    /// Why the HyperNodes cannot be used (they do not form a tree); jobs with a network
    /// topology wait until they are fixed.
    pub not_ready: Option<String>,
    tier_names: HashMap<String, i64>,
}

impl Default for Topology {
    fn default() -> Self {
        Topology::from_tree(&HyperNodeTree::default(), &HashMap::new(), 0)
    }
}

impl Topology {
    /// The domains of `objs`' HyperNodes over the snapshot's nodes (`node_index`).
    pub fn of(objs: &Objects, node_index: &HashMap<String, NodeId>) -> Self {
        let n = node_index.len();
        if objs.hyper_nodes.is_empty() {
            return Topology::from_tree(&HyperNodeTree::default(), node_index, n);
        }
        let nodes: Vec<NodeRef<'_>> = objs
            .nodes
            .iter()
            .filter_map(|node| {
                let name = node.metadata.name.as_deref()?;
                Some((name, node.metadata.labels.as_ref()))
            })
            .collect();
        match HyperNodeTree::build(&objs.hyper_nodes, &nodes) {
            Ok(tree) => Topology::from_tree(&tree, node_index, n),
            Err(e) => {
                let mut t = Topology::from_tree(&HyperNodeTree::default(), node_index, n);
                t.not_ready = Some(e.to_string());
                t
            }
        }
    }

    fn from_tree(tree: &HyperNodeTree, node_index: &HashMap<String, NodeId>, n: usize) -> Self {
        let mut domains = Vec::with_capacity(tree.domains.len() + 1);
        let mut node_domains: Vec<Vec<DomainId>> = vec![Vec::new(); n];
        let mut tier_names = HashMap::new();
        let mut top = 0;
        for d in &tree.domains {
            let id = DomainId(domains.len() as u32);
            let mut nodes: Vec<NodeId> = d
                .nodes
                .iter()
                .filter_map(|name| node_index.get(name).copied())
                .collect();
            nodes.sort_unstable();
            for &node in &nodes {
                node_domains[node.idx()].push(id);
            }
            if !d.tier_name.is_empty() {
                tier_names.entry(d.tier_name.clone()).or_insert(d.tier);
            }
            top = top.max(d.tier);
            domains.push(Domain {
                name: d.name.clone(),
                tier: d.tier,
                nodes,
            });
        }
        let root = DomainId(domains.len() as u32);
        domains.push(Domain {
            name: CLUSTER_DOMAIN.to_string(),
            tier: top.saturating_add(1),
            nodes: (0..n as u32).map(NodeId).collect(),
        });
        for ds in &mut node_domains {
            // The tree's domains come by tier already; the cluster domain is the widest.
            ds.push(root);
        }
        Topology {
            domains,
            node_domains,
            not_ready: None,
            tier_names,
        }
    }

    /// The domain `id`.
    #[inline]
    pub fn domain(&self, id: DomainId) -> &Domain {
        &self.domains[id.idx()]
    }

    /// The virtual domain over the whole cluster.
    pub fn root(&self) -> DomainId {
        DomainId(self.domains.len() as u32 - 1)
    }

    /// Whether there are HyperNodes (besides the virtual cluster domain).
    pub fn has_hyper_nodes(&self) -> bool {
        self.domains.len() > 1
    }

    /// The tier whose name is `name`.
    pub fn tier_named(&self, name: &str) -> Option<i64> {
        self.tier_names.get(name).copied()
    }

    /// Whether node `n` is in domain `d`.
    #[inline]
    pub fn contains(&self, d: DomainId, n: NodeId) -> bool {
        self.node_domains
            .get(n.idx())
            .is_some_and(|ds| ds.contains(&d))
    }

    /// The lowest-tier domain holding every one of `nodes` (the cluster domain when they share
    /// no HyperNode); `None` when `nodes` is empty.
    pub fn lowest_common(&self, nodes: impl IntoIterator<Item = NodeId>) -> Option<DomainId> {
        let mut nodes = nodes.into_iter();
        let first = nodes.next()?;
        let mut candidates: &[DomainId] = self.node_domains.get(first.idx())?;
        for n in nodes {
            let skip = candidates
                .iter()
                .position(|&d| self.contains(d, n))
                .unwrap_or(candidates.len().saturating_sub(1));
            candidates = &candidates[skip..];
        }
        candidates.first().copied()
    }

    /// The widest domain of tier at most `tier` that holds domain `d` (the domain itself when
    /// none above it qualifies); `None` when `d`'s own tier is above `tier`.
    pub fn widest_within(&self, d: DomainId, tier: i64) -> Option<DomainId> {
        let dom = self.domain(d);
        if dom.tier > tier {
            return None;
        }
        let first = *dom.nodes.first()?;
        self.node_domains[first.idx()].iter().copied().rfind(|&a| {
            let ad = self.domain(a);
            ad.tier <= tier && ad.tier >= dom.tier
        })
    }
}
