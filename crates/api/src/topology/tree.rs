//! The tree the HyperNodes of a cluster form: each HyperNode's member nodes and HyperNodes
//! resolved against what exists, each domain's nodes gathered through its members, and the
//! checks that make it a tree (no cycle, one parent, a member's tier below its parent's, a
//! node in at most one domain per tier, a lower-tier domain inside one domain of every higher
//! tier that holds any of its nodes).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use thiserror::Error;

use super::{HyperNode, MEMBER_HYPER_NODE, MEMBER_NODE, MemberSelector, check_hyper_node};
use crate::field_error::FieldError;
use crate::label_selector::selector_matches;

/// Why the HyperNodes do not form a tree.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TreeError {
    /// One HyperNode is invalid on its own.
    #[error("HyperNode {hyper_node}: {error}")]
    Invalid {
        /// The HyperNode.
        hyper_node: String,
        /// The field and what is wrong.
        error: FieldError,
    },
    /// Members lead back to where they started.
    #[error("HyperNodes form a cycle through their members: {}", path.join(" -> "))]
    Cycle {
        /// The HyperNodes around the cycle, the first repeated at the end.
        path: Vec<String>,
    },
    /// A HyperNode is a member of two HyperNodes.
    #[error("HyperNode {child} is a member of both {first} and {second}; a domain has one parent")]
    TwoParents {
        /// The member.
        child: String,
        /// One parent.
        first: String,
        /// The other.
        second: String,
    },
    /// A member HyperNode's tier is not below its parent's.
    #[error(
        "HyperNode {parent} (tier {parent_tier}) has member HyperNode {child} of tier {child_tier}; a member's tier must be lower than its parent's"
    )]
    TierNotLower {
        /// The parent.
        parent: String,
        /// Its tier.
        parent_tier: i64,
        /// The member.
        child: String,
        /// Its tier.
        child_tier: i64,
    },
    /// A node is in two domains of one tier.
    #[error("node {node} is in two HyperNodes of tier {tier}: {first} and {second}")]
    NodeInTwo {
        /// The node.
        node: String,
        /// The tier.
        tier: i64,
        /// One domain.
        first: String,
        /// The other.
        second: String,
    },
    /// A domain's nodes are split at a higher tier.
    #[error(
        "HyperNode {hyper_node} (tier {tier}) is not inside one HyperNode of tier {higher_tier}: {split}"
    )]
    NotSubset {
        /// The lower-tier domain.
        hyper_node: String,
        /// Its tier.
        tier: i64,
        /// The higher tier it straddles.
        higher_tier: i64,
        /// Two of its nodes and where each is at the higher tier.
        split: String,
    },
}

fn in_or_none(d: &Option<String>) -> String {
    match d {
        Some(d) => d.clone(),
        None => "none".to_string(),
    }
}

/// One network domain of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    /// The HyperNode's name.
    pub name: String,
    /// Its tier.
    pub tier: i64,
    /// Its tier's name.
    pub tier_name: String,
    /// The domain it is a member of.
    pub parent: Option<usize>,
    /// Its member domains, by name.
    pub children: Vec<usize>,
    /// Every existing node it holds, directly or through its members, by name.
    pub nodes: Vec<String>,
}

/// The HyperNodes of a cluster as a forest of domains, lowest tier first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HyperNodeTree {
    /// The domains, by tier and then name.
    pub domains: Vec<Domain>,
    index: HashMap<String, usize>,
}

/// A node as the tree reads it: its name and labels.
pub type NodeRef<'a> = (&'a str, Option<&'a BTreeMap<String, String>>);

impl HyperNodeTree {
    /// Resolves `hyper_nodes` against `nodes` and checks that they form a tree.
    pub fn build(hyper_nodes: &[HyperNode], nodes: &[NodeRef<'_>]) -> Result<Self, TreeError> {
        let mut hns: Vec<&HyperNode> = hyper_nodes.iter().collect();
        hns.sort_by_key(|h| (h.spec.tier, name_of(h)));
        for h in &hns {
            check_hyper_node(h).map_err(|error| TreeError::Invalid {
                hyper_node: name_of(h).to_string(),
                error,
            })?;
        }
        let index: HashMap<String, usize> = hns
            .iter()
            .enumerate()
            .map(|(i, h)| (name_of(h).to_string(), i))
            .collect();
        let names: Vec<&str> = hns.iter().map(|h| name_of(h)).collect();
        let mut direct_nodes: Vec<BTreeSet<&str>> = Vec::with_capacity(hns.len());
        let mut children: Vec<BTreeSet<usize>> = Vec::with_capacity(hns.len());
        for (i, h) in hns.iter().enumerate() {
            let mut ns = BTreeSet::new();
            let mut cs = BTreeSet::new();
            for m in &h.spec.members {
                if m.member_type == MEMBER_NODE {
                    ns.extend(node_members(&m.selector, nodes));
                } else if m.member_type == MEMBER_HYPER_NODE {
                    cs.extend(
                        hyper_node_members(&m.selector, &names, &index)
                            .into_iter()
                            .filter(|&c| c != i),
                    );
                }
            }
            direct_nodes.push(ns);
            children.push(cs);
        }
        if let Some(path) = find_cycle(&children) {
            return Err(TreeError::Cycle {
                path: path.into_iter().map(|i| names[i].to_string()).collect(),
            });
        }
        let mut parent: Vec<Option<usize>> = vec![None; hns.len()];
        for (p, cs) in children.iter().enumerate() {
            for &c in cs {
                if let Some(first) = parent[c] {
                    return Err(TreeError::TwoParents {
                        child: names[c].to_string(),
                        first: names[first].to_string(),
                        second: names[p].to_string(),
                    });
                }
                if hns[c].spec.tier >= hns[p].spec.tier {
                    return Err(TreeError::TierNotLower {
                        parent: names[p].to_string(),
                        parent_tier: hns[p].spec.tier,
                        child: names[c].to_string(),
                        child_tier: hns[c].spec.tier,
                    });
                }
                parent[c] = Some(p);
            }
        }
        // Lowest tier first: a domain's members are gathered before it.
        let mut all: Vec<BTreeSet<&str>> = Vec::with_capacity(hns.len());
        for i in 0..hns.len() {
            let mut set = direct_nodes[i].clone();
            for &c in &children[i] {
                set.extend(all[c].iter().copied());
            }
            all.push(set);
        }
        check_laminar(&hns, &names, &all)?;
        let domains = (0..hns.len())
            .map(|i| Domain {
                name: names[i].to_string(),
                tier: hns[i].spec.tier,
                tier_name: hns[i].spec.tier_name.clone(),
                parent: parent[i],
                children: children[i].iter().copied().collect(),
                nodes: all[i].iter().map(|s| s.to_string()).collect(),
            })
            .collect();
        Ok(HyperNodeTree { domains, index })
    }

    /// The domain named `name`.
    pub fn get(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The tier whose name is `tier_name`, when some HyperNode has it.
    pub fn tier_named(&self, tier_name: &str) -> Option<i64> {
        self.domains
            .iter()
            .find(|d| d.tier_name == tier_name)
            .map(|d| d.tier)
    }

    /// Whether there are no HyperNodes.
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty()
    }
}

fn name_of(h: &HyperNode) -> &str {
    h.metadata.name.as_deref().unwrap_or("")
}

/// The existing nodes a Node member entry chooses.
fn node_members<'a>(s: &MemberSelector, nodes: &[NodeRef<'a>]) -> Vec<&'a str> {
    if let Some(e) = &s.exact_match {
        return nodes
            .iter()
            .filter(|(n, _)| *n == e.name)
            .map(|(n, _)| *n)
            .collect();
    }
    if let Some(r) = &s.regex_match {
        // A pattern that does not compile was refused by check_hyper_node.
        let Ok(re) = regex::Regex::new(&r.pattern) else {
            return Vec::new();
        };
        return nodes
            .iter()
            .filter(|(n, _)| re.is_match(n))
            .map(|(n, _)| *n)
            .collect();
    }
    if let Some(l) = &s.label_match {
        return nodes
            .iter()
            .filter(|(_, labels)| selector_matches(l, *labels))
            .map(|(n, _)| *n)
            .collect();
    }
    Vec::new()
}

/// The existing HyperNodes a HyperNode member entry chooses.
fn hyper_node_members(
    s: &MemberSelector,
    names: &[&str],
    index: &HashMap<String, usize>,
) -> Vec<usize> {
    if let Some(e) = &s.exact_match {
        return index.get(&e.name).copied().into_iter().collect();
    }
    if let Some(r) = &s.regex_match {
        let Ok(re) = regex::Regex::new(&r.pattern) else {
            return Vec::new();
        };
        return (0..names.len())
            .filter(|&i| re.is_match(names[i]))
            .collect();
    }
    Vec::new()
}

/// A cycle of member edges, when there is one: the domains around it, the first repeated.
fn find_cycle(children: &[BTreeSet<usize>]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark = vec![Mark::New; children.len()];
    for root in 0..children.len() {
        if mark[root] != Mark::New {
            continue;
        }
        // Iterative depth-first walk: the stack holds the path and each step's next child.
        let mut stack: Vec<(usize, std::collections::btree_set::Iter<'_, usize>)> =
            vec![(root, children[root].iter())];
        mark[root] = Mark::Open;
        while let Some((at, next)) = stack.last_mut() {
            let at = *at;
            match next.next() {
                Some(&c) if mark[c] == Mark::Open => {
                    let from = stack.iter().position(|(i, _)| *i == c).unwrap_or(0);
                    let mut path: Vec<usize> = stack[from..].iter().map(|(i, _)| *i).collect();
                    path.push(c);
                    return Some(path);
                }
                Some(&c) if mark[c] == Mark::New => {
                    mark[c] = Mark::Open;
                    stack.push((c, children[c].iter()));
                }
                Some(_) => {}
                None => {
                    mark[at] = Mark::Done;
                    stack.pop();
                }
            }
        }
    }
    None
}

/// A node in at most one domain per tier, and each domain inside one domain of every higher
/// tier that holds any of its nodes.
fn check_laminar(
    hns: &[&HyperNode],
    names: &[&str],
    all: &[BTreeSet<&str>],
) -> Result<(), TreeError> {
    let mut at_tier: HashMap<(&str, i64), usize> = HashMap::new();
    for (i, nodes) in all.iter().enumerate() {
        let tier = hns[i].spec.tier;
        for &n in nodes {
            if let Some(&first) = at_tier.get(&(n, tier)) {
                return Err(TreeError::NodeInTwo {
                    node: n.to_string(),
                    tier,
                    first: names[first].to_string(),
                    second: names[i].to_string(),
                });
            }
            at_tier.insert((n, tier), i);
        }
    }
    let tiers: BTreeSet<i64> = hns.iter().map(|h| h.spec.tier).collect();
    for (i, nodes) in all.iter().enumerate() {
        let tier = hns[i].spec.tier;
        let Some(&first) = nodes.iter().next() else {
            continue;
        };
        for &higher in tiers.range(tier.saturating_add(1)..) {
            let first_in = at_tier.get(&(first, higher)).copied();
            if let Some(&other) = nodes
                .iter()
                .find(|n| at_tier.get(&(**n, higher)).copied() != first_in)
            {
                let other_in = at_tier.get(&(other, higher)).copied();
                let name_of = |d: Option<usize>| d.map(|d| names[d].to_string());
                return Err(TreeError::NotSubset {
                    hyper_node: names[i].to_string(),
                    tier,
                    higher_tier: higher,
                    split: format!(
                        "node {first} is in {}, node {other} is in {}",
                        in_or_none(&name_of(first_in)),
                        in_or_none(&name_of(other_in))
                    ),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
