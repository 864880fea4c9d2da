//! What the plugin's node scores read: each HyperNode's allocatable and used resources, kept
//! as tasks are placed and undone in the session (Volcano's `hyperNodeResourceCache`).

use std::collections::HashMap;

use crate::model::{DomainId, NodeId, Snapshot, TaskId};
use crate::resource::Resource;

/// Per-domain totals over the HyperNodes and the virtual cluster domain above them (Volcano's
/// cluster-top hypernode, which its scores count as the highest tier).
pub(super) struct DomainUse {
    allocatable: Vec<Resource>,
    used: Vec<Resource>,
    /// Where each task placed in this session went: an undone placement has forgotten its
    /// node by the time the plugin hears of it.
    placed: HashMap<TaskId, NodeId>,
    /// The tiers there are, lowest first; the last is the cluster domain's.
    pub tiers: Vec<i64>,
}

impl DomainUse {
    /// Sums the snapshot's nodes into their domains; `None` when there is no usable HyperNode.
    pub fn new(s: &Snapshot) -> Option<Self> {
        let topo = &s.topology;
        if !topo.has_hyper_nodes() || topo.not_ready.is_some() {
            return None;
        }
        let zero = s.dims.zero();
        let mut allocatable = vec![zero.clone(); topo.domains.len()];
        let mut used = vec![zero; topo.domains.len()];
        for (i, node) in s.nodes.iter().enumerate() {
            for d in topo.node_domains.get(i).into_iter().flatten() {
                allocatable[d.idx()].add(&node.allocatable);
                used[d.idx()].add(&node.used);
            }
        }
        let mut tiers: Vec<i64> = topo.domains.iter().map(|d| d.tier).collect();
        tiers.sort_unstable();
        tiers.dedup();
        Some(DomainUse {
            tiers,
            allocatable,
            used,
            placed: HashMap::new(),
        })
    }

    /// Lowest tier.
    pub fn min_tier(&self) -> i64 {
        self.tiers.first().copied().unwrap_or(1)
    }

    /// Highest tier (the cluster domain's).
    pub fn max_tier(&self) -> i64 {
        self.tiers.last().copied().unwrap_or(1)
    }

    /// Allocatable and used resources of domain `d`.
    pub fn of(&self, d: DomainId) -> Option<(&Resource, &Resource)> {
        Some((self.allocatable.get(d.idx())?, self.used.get(d.idx())?))
    }

    /// Counts `t`'s request on its node's domains (`add`) or takes it off.
    pub fn update(&mut self, s: &Snapshot, t: TaskId, add: bool) {
        let node = if add {
            let n = s.task(t).node;
            if let Some(n) = n {
                self.placed.insert(t, n);
            }
            n
        } else {
            s.task(t).node.or_else(|| self.placed.remove(&t))
        };
        let Some(n) = node else {
            return;
        };
        let req = &s.task(t).resreq;
        for d in s.topology.node_domains.get(n.idx()).into_iter().flatten() {
            if let Some(u) = self.used.get_mut(d.idx()) {
                if add {
                    u.add(req);
                } else {
                    u.sub_saturating(req);
                }
            }
        }
    }
}
