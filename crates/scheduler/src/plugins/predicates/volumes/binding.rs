//! VolumeBinding per node, and the bindings a session assumes: a bound claim's volume must
//! accept the node; a claim still to bind needs a free matching volume the node may reach, or
//! a class that can provision one there. Placing a task assumes its choices (the smallest
//! matching volume, or provisioning for the node) so no other pod of the session takes the
//! same volume; undoing the placement gives them back.

use std::collections::{HashMap, HashSet};

use volcano_api::NamespacedName;
use volcano_api::k8s_openapi::api::core::v1::{Node, PersistentVolume};
use volcano_api::k8s_openapi::api::storage::v1::StorageClass;

use super::claims::PodVolumes;
use crate::fit::FitReason;
use crate::model::storage::{ClaimBinding, NO_PROVISIONER};
use crate::model::{NodeId, Snapshot, TaskId};
use crate::plugins::predicates::term_matches;

/// No free volume matches a claim on the node, and none can be provisioned there.
pub(super) const BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// A bound claim's volume does not accept the node (kube-scheduler v1.36's words; earlier
/// releases said "node(s) had volume node affinity conflict").
pub(super) const NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
/// A claim is bound to a volume that does not exist.
pub(super) const PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";

/// Whether `pv`'s required node affinity accepts `node` (no affinity accepts every node).
pub(super) fn volume_fits_node(pv: &PersistentVolume, node: &Node) -> bool {
    let Some(required) = pv
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
    else {
        return true;
    };
    required
        .node_selector_terms
        .iter()
        .any(|t| term_matches(node, t))
}

/// Whether `class` can provision a volume reachable from `node`: it names a provisioner and
/// its `allowedTopologies` (if any) accept the node's labels.
fn can_provision(class: &StorageClass, node: &Node) -> bool {
    if class.provisioner.is_empty() || class.provisioner == NO_PROVISIONER {
        return false;
    }
    let Some(terms) = class.allowed_topologies.as_ref().filter(|t| !t.is_empty()) else {
        return true;
    };
    let labels = node.metadata.labels.as_ref();
    terms.iter().any(|term| {
        term.match_label_expressions.iter().flatten().all(|e| {
            labels
                .and_then(|l| l.get(&e.key))
                .is_some_and(|v| e.values.contains(v))
        })
    })
}

/// A claim bound in the session, not yet in the API.
#[derive(Debug, Clone)]
struct AssumedClaim {
    /// The volume chosen; `None` when it is to be provisioned for `node`.
    volume: Option<String>,
    node: NodeId,
    /// Placed tasks using the claim, the one that chose first.
    holders: Vec<TaskId>,
}

/// What each unbound claim of a pod would take on one node: the volume, or `None` to
/// provision.
pub(super) type Choices = Vec<(NamespacedName, Option<String>)>;

/// The bindings the session's placements assumed.
#[derive(Debug, Default)]
pub(super) struct Assumed {
    claims: HashMap<NamespacedName, AssumedClaim>,
    /// Volumes chosen for some claim in the session.
    taken: HashSet<String>,
    /// Claims each placed task holds.
    by_task: HashMap<TaskId, Vec<NamespacedName>>,
}

impl Assumed {
    /// VolumeBinding's verdict on node `n` for a pod with volumes `vols`.
    pub(super) fn check(
        &self,
        s: &Snapshot,
        vols: &PodVolumes,
        n: NodeId,
    ) -> Result<(), FitReason> {
        self.find(s, vols, n).map(|_| ())
    }

    /// The choices a pod with volumes `vols` would make on node `n`, or why the node does
    /// not do.
    fn find(&self, s: &Snapshot, vols: &PodVolumes, n: NodeId) -> Result<Choices, FitReason> {
        let cat = &s.cluster.storage;
        let node = &s.node(n).node;
        let conflict = |r: &'static str| FitReason::unresolvable(r).depending_on_pods();
        for v in &vols.bound {
            match cat.volume(v) {
                None => return Err(conflict(PV_NOT_EXIST)),
                Some(pv) if !volume_fits_node(pv, node) => return Err(conflict(NODE_CONFLICT)),
                Some(_) => {}
            }
        }
        let mut choices = Choices::with_capacity(vols.unbound.len());
        for c in &vols.unbound {
            if let Some(a) = self.claims.get(&c.key) {
                // Another placement of the session bound it: it is bound for this pod too.
                match &a.volume {
                    Some(v) if cat.volume(v).is_some_and(|pv| volume_fits_node(pv, node)) => {}
                    Some(_) => return Err(conflict(NODE_CONFLICT)),
                    None if a.node == n => {}
                    None => return Err(conflict(BIND_CONFLICT)),
                }
                continue;
            }
            let chosen = |v: &str| choices.iter().any(|(_, x)| x.as_deref() == Some(v));
            if let Some(sel) = &c.selected_node {
                if *sel != s.node(n).name {
                    return Err(conflict(BIND_CONFLICT));
                }
            } else if let Some(v) = &c.prebound {
                // A volume pre-bound to the claim is its only match.
                match cat.volume(v) {
                    Some(pv) if volume_fits_node(pv, node) && !chosen(v) => {
                        choices.push((c.key.clone(), Some(v.clone())));
                        continue;
                    }
                    _ => return Err(conflict(BIND_CONFLICT)),
                }
            } else if let Some(v) = c.candidates.iter().find(|v| {
                !self.taken.contains(*v)
                    && !chosen(v)
                    && cat.volume(v).is_some_and(|pv| volume_fits_node(pv, node))
            }) {
                choices.push((c.key.clone(), Some(v.clone())));
                continue;
            }
            match cat.class(&c.class) {
                Some(class) if can_provision(class, node) => choices.push((c.key.clone(), None)),
                _ => return Err(conflict(BIND_CONFLICT)),
            }
        }
        Ok(choices)
    }

    /// Assumes the choices of task `t`, with volumes `vols`, placed on node `n`.
    pub(super) fn assume(&mut self, s: &Snapshot, vols: &PodVolumes, t: TaskId, n: NodeId) {
        let held: Vec<NamespacedName> = vols
            .unbound
            .iter()
            .filter(|c| self.claims.contains_key(&c.key))
            .map(|c| c.key.clone())
            .collect();
        // A placement the filter did not check (none should reach here) assumes nothing new.
        let choices = self.find(s, vols, n).unwrap_or_default();
        let mut mine = Vec::with_capacity(vols.unbound.len());
        for key in held {
            if let Some(a) = self.claims.get_mut(&key) {
                a.holders.push(t);
            }
            mine.push(key);
        }
        for (key, volume) in choices {
            if let Some(v) = &volume {
                self.taken.insert(v.clone());
            }
            self.claims.insert(
                key.clone(),
                AssumedClaim {
                    volume,
                    node: n,
                    holders: vec![t],
                },
            );
            mine.push(key);
        }
        if !mine.is_empty() {
            self.by_task.insert(t, mine);
        }
    }

    /// Gives back what task `t`'s placement assumed: a claim no placed task holds any more is
    /// unbound again, and its volume free.
    pub(super) fn release(&mut self, t: TaskId) {
        let Some(keys) = self.by_task.remove(&t) else {
            return;
        };
        for key in keys {
            let Some(a) = self.claims.get_mut(&key) else {
                continue;
            };
            a.holders.retain(|h| *h != t);
            if a.holders.is_empty()
                && let Some(a) = self.claims.remove(&key)
                && let Some(v) = a.volume
            {
                self.taken.remove(&v);
            }
        }
    }

    /// Every assumed claim with each task holding it, claims in name order.
    pub(super) fn bindings(&self, s: &Snapshot) -> Vec<ClaimBinding> {
        let mut out: Vec<ClaimBinding> = self
            .claims
            .iter()
            .flat_map(|(key, a)| {
                a.holders.iter().map(move |&task| ClaimBinding {
                    task,
                    claim: key.clone(),
                    node: s.node(a.node).name.clone(),
                    volume: a.volume.clone(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.claim.cmp(&b.claim));
        out
    }
}
