//! Network-topology figures of a run or a bench: which tier-1 domain (HyperNode) each node
//! sits in, whether a gang's pods landed inside one, and each domain's occupancy, GPUs (or
//! CPU where no node has GPUs) used of the total.

mod report;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use volcano_api::Objects;
use volcano_api::topology::tree::{HyperNodeTree, NodeRef};

pub use report::{TopologyInput, build_report};

/// The resource the figures count: GPUs when any node has them, else CPU.
pub const GPU: &str = "nvidia.com/gpu";

/// The HyperNodes of a cluster, with each node's domain of the lowest tier (tier 1 in any
/// usual tree).
#[derive(Debug, Clone)]
pub struct Domains {
    /// The tree the HyperNodes form.
    pub tree: HyperNodeTree,
    leaf_of: HashMap<String, usize>,
}

impl Domains {
    /// The domains of `objects`; `None` without HyperNodes, or when they do not form a tree
    /// (loading a scenario refuses that, so only a run's later changes can get there).
    pub fn of(objects: &Objects) -> Option<Self> {
        if objects.hyper_nodes.is_empty() {
            return None;
        }
        let nodes: Vec<NodeRef<'_>> = objects
            .nodes
            .iter()
            .map(|n| {
                (
                    n.metadata.name.as_deref().unwrap_or_default(),
                    n.metadata.labels.as_ref(),
                )
            })
            .collect();
        let tree = HyperNodeTree::build(&objects.hyper_nodes, &nodes).ok()?;
        let lowest = tree.domains.iter().map(|d| d.tier).min()?;
        let mut leaf_of = HashMap::new();
        for (i, d) in tree.domains.iter().enumerate() {
            if d.tier == lowest {
                for n in &d.nodes {
                    leaf_of.insert(n.clone(), i);
                }
            }
        }
        Some(Domains { tree, leaf_of })
    }

    /// The lowest-tier domain holding `node`.
    pub fn leaf_of(&self, node: &str) -> Option<usize> {
        self.leaf_of.get(node).copied()
    }

    /// Whether every one of `nodes` (at least one) sits in the same lowest-tier domain.
    pub fn in_one_leaf<S: AsRef<str>>(&self, nodes: &[S]) -> bool {
        let mut leaves = nodes.iter().map(|n| self.leaf_of(n.as_ref()));
        match leaves.next() {
            Some(Some(first)) => leaves.all(|l| l == Some(first)),
            _ => false,
        }
    }
}

/// A gang whose every pod is bound: its PodGroup (`namespace/name`) and its pods' nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedGang {
    /// `namespace/name` of the PodGroup.
    pub group: String,
    /// The nodes its pods are on.
    pub nodes: Vec<String>,
}

/// The groups of more than one pod (by `scheduling.k8s.io/group-name`) whose name `keep`
/// accepts and whose every pod is on a node.
pub fn placed_gangs(objects: &Objects, keep: impl Fn(&str) -> bool) -> Vec<PlacedGang> {
    let mut groups: BTreeMap<String, (Vec<String>, bool)> = BTreeMap::new();
    for p in &objects.pods {
        let Some(group) = p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(volcano_api::keys::GROUP_NAME))
        else {
            continue;
        };
        if !keep(group) {
            continue;
        }
        let key = format!(
            "{}/{group}",
            p.metadata.namespace.as_deref().unwrap_or_default()
        );
        let entry = groups.entry(key).or_insert_with(|| (Vec::new(), true));
        match p.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
            Some(n) if !n.is_empty() => entry.0.push(n.to_string()),
            _ => entry.1 = false,
        }
    }
    groups
        .into_iter()
        .filter(|(_, (nodes, all))| *all && nodes.len() > 1)
        .map(|(group, (nodes, _))| PlacedGang { group, nodes })
        .collect()
}
