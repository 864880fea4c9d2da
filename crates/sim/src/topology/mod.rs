//! Network-topology figures of a run or a bench: which tier-1 domain (HyperNode) each node
//! sits in, whether a gang's pods landed inside one, and each domain's occupancy, GPUs (or
//! CPU where no node has GPUs) used of the total.

mod report;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use volcano_api::Objects;
use volcano_api::topology::tree::{HyperNodeTree, NodeRef};

pub use report::{TopologyInput, build_report};

use crate::metrics::Stats;

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

/// The network-topology figures of a run with HyperNodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyReport {
    /// What `used`, `total` and `stranded` count: `nvidia.com/gpu`, or `cpu` without GPUs.
    pub resource: String,
    /// Gangs (minMember > 1) whose pods ran.
    pub gangs_ran: u64,
    /// Of those, the gangs whose pods all ran inside one tier-1 domain.
    pub gangs_in_one_tier1_domain: u64,
    /// Jobs with a network topology.
    pub topology_jobs: u64,
    /// Their wait from submission to the first pod running, in seconds (those that started).
    pub topology_wait_s: Stats,
    /// Σ time they waited under the job-level reason `NetworkTopology`, in seconds.
    pub network_topology_wait_s: f64,
    /// Gangs still waiting at the end of the run.
    pub gangs_waiting: u64,
    /// The smallest of their demands for `resource`, in whole units (none when no gang
    /// waits for any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smallest_waiting_gang: Option<f64>,
    /// Free `resource` at the end of the run in tier-1 domains too small for any gang
    /// still waiting, in whole units.
    pub stranded: f64,
    /// Every domain at the end of the run, tier by tier, lowest first.
    pub domains: Vec<DomainOccupancy>,
}

/// One domain at the end of the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainOccupancy {
    /// The HyperNode's name.
    pub name: String,
    /// Its tier.
    pub tier: i64,
    /// Its tier's name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tier_name: String,
    /// The domain it is a member of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Nodes it holds.
    pub nodes: u64,
    /// `resource` in use by pods on its nodes, in whole units.
    pub used: f64,
    /// Allocatable `resource` of its nodes, in whole units.
    pub total: f64,
    /// A tier-1 domain whose free `resource` no waiting gang can use.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stranded: bool,
}

impl TopologyReport {
    /// The domains under `parent` (`None`: the roots), in order.
    pub fn children_of<'a>(
        &'a self,
        parent: Option<&'a str>,
    ) -> impl Iterator<Item = &'a DomainOccupancy> + 'a {
        self.domains
            .iter()
            .filter(move |d| d.parent.as_deref() == parent)
    }

    /// How many domains each tier has, lowest first, with the tier's name.
    pub fn tiers(&self) -> Vec<(i64, String, usize)> {
        let mut out: BTreeMap<i64, (String, usize)> = BTreeMap::new();
        for d in &self.domains {
            let e = out
                .entry(d.tier)
                .or_insert_with(|| (d.tier_name.clone(), 0));
            e.1 += 1;
        }
        out.into_iter().map(|(t, (n, c))| (t, n, c)).collect()
    }

    /// Names of the stranded domains.
    pub fn stranded_domains(&self) -> BTreeSet<&str> {
        self.domains
            .iter()
            .filter(|d| d.stranded)
            .map(|d| d.name.as_str())
            .collect()
    }
}
