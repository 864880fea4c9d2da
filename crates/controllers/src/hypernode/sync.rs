//! What makes the cluster match: discovered HyperNodes created, updated or deleted (hand-written
//! ones never touched), and each HyperNode's `status.nodeCount` kept.

use std::collections::BTreeMap;

use volcano_api::k8s_openapi::api::core::v1::Node;
use volcano_api::topology::HyperNode;
use volcano_api::topology::tree::{HyperNodeTree, NodeRef};

use super::label::is_discovered;
use crate::change::Change;

/// The changes that turn the discovered HyperNodes among `existing` into `desired`: new ones
/// created, changed ones updated (their spec replaced, their labels merged, as Volcano's
/// controller does), ones no longer described deleted.
pub fn discovery_changes(
    desired: &BTreeMap<String, HyperNode>,
    existing: &[HyperNode],
) -> Vec<Change> {
    let by_name: BTreeMap<&str, &HyperNode> = existing
        .iter()
        .filter_map(|h| h.metadata.name.as_deref().map(|n| (n, h)))
        .collect();
    let mut changes = Vec::new();
    for (name, want) in desired {
        match by_name.get(name.as_str()) {
            None => changes.push(Change::CreateHyperNode(Box::new(want.clone()))),
            // A name a person gave a HyperNode is theirs; discovery never picks one, so this
            // is a HyperNode made meanwhile: left alone.
            Some(have) if !is_discovered(have) => {}
            Some(have) if needs_update(have, want) => {
                changes.push(Change::UpdateHyperNode(Box::new(want.clone())));
            }
            Some(_) => {}
        }
    }
    for h in existing.iter().filter(|h| is_discovered(h)) {
        if let Some(name) = h.metadata.name.as_deref()
            && !desired.contains_key(name)
        {
            changes.push(Change::DeleteHyperNode {
                name: name.to_string(),
            });
        }
    }
    changes
}

fn needs_update(have: &HyperNode, want: &HyperNode) -> bool {
    if have.spec != want.spec {
        return true;
    }
    let have_labels = have.metadata.labels.clone().unwrap_or_default();
    want.metadata
        .labels
        .iter()
        .flatten()
        .any(|(k, v)| have_labels.get(k) != Some(v))
}

/// A `status.nodeCount` write for every HyperNode whose count of nodes, through its member
/// HyperNodes too, is not the one written. When the HyperNodes do not form a tree, each is
/// counted by its own node members.
pub fn node_count_changes(hyper_nodes: &[HyperNode], nodes: &[Node]) -> Vec<Change> {
    let refs: Vec<NodeRef<'_>> = nodes
        .iter()
        .filter_map(|n| {
            n.metadata
                .name
                .as_deref()
                .map(|name| (name, n.metadata.labels.as_ref()))
        })
        .collect();
    let counts: BTreeMap<String, i64> = match HyperNodeTree::build(hyper_nodes, &refs) {
        Ok(tree) => tree
            .domains
            .iter()
            .map(|d| (d.name.clone(), d.nodes.len() as i64))
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, "HyperNodes do not form a tree; counting each HyperNode's own node members");
            hyper_nodes
                .iter()
                .filter_map(|h| {
                    let tree = HyperNodeTree::build(std::slice::from_ref(h), &refs).ok()?;
                    let d = tree.domains.first()?;
                    Some((d.name.clone(), d.nodes.len() as i64))
                })
                .collect()
        }
    };
    let mut changes = Vec::new();
    for h in hyper_nodes {
        let Some(name) = h.metadata.name.as_deref() else {
            continue;
        };
        let Some(&count) = counts.get(name) else {
            continue;
        };
        let written = h.status.as_ref().map_or(0, |s| s.node_count);
        if written != count {
            changes.push(Change::UpdateHyperNodeStatus {
                name: name.to_string(),
                node_count: count,
            });
        }
    }
    changes
}
