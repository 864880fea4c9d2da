//! Each network domain's free and used resources, summed over its nodes once per action and
//! kept as placements happen: a gang's search reads a domain's totals without walking its
//! nodes.

use super::{DomainId, NodeId, NodeInfo, Snapshot};
use crate::resource::Resource;

/// The totals of one domain.
#[derive(Debug, Clone)]
pub struct DomainTotals {
    /// Σ allocatable.
    pub allocatable: Resource,
    /// Σ used.
    pub used: Resource,
    /// Σ idle.
    pub idle: Resource,
    /// Σ future idle (idle once releasing pods are gone, less what is pipelined).
    pub future_idle: Resource,
}

/// What a node last contributed to its domains.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NodeShare {
    used: Resource,
    idle: Resource,
    future_idle: Resource,
}

impl NodeShare {
    /// What `node` adds to its domains: nothing free when it is out of sync (it takes no new
    /// pods), and never less than nothing on a dimension, so one overfull node does not hide
    /// another's room.
    fn of(node: &NodeInfo, zero: &Resource) -> Self {
        let free = |r: &Resource| {
            if node.out_of_sync {
                return zero.clone();
            }
            let mut r = r.clone();
            r.max_with(zero);
            r
        };
        NodeShare {
            used: node.used.clone(),
            idle: free(&node.idle),
            future_idle: free(&node.future_idle),
        }
    }
}

/// The totals of every domain of the snapshot's topology.
#[derive(Debug)]
pub struct DomainLedger {
    domains: Vec<DomainTotals>,
    nodes: Vec<NodeShare>,
    zero: Resource,
}

impl DomainLedger {
    /// Sums every node of `s` into its domains.
    pub fn new(s: &Snapshot) -> Self {
        let zero = s.dims.zero();
        let topo = &s.topology;
        let mut domains = vec![
            DomainTotals {
                allocatable: zero.clone(),
                used: zero.clone(),
                idle: zero.clone(),
                future_idle: zero.clone(),
            };
            topo.domains.len()
        ];
        let mut nodes = Vec::with_capacity(s.nodes.len());
        for (i, node) in s.nodes.iter().enumerate() {
            let share = NodeShare::of(node, &zero);
            for d in topo.node_domains.get(i).into_iter().flatten() {
                let t = &mut domains[d.idx()];
                t.allocatable.add(&node.allocatable);
                t.used.add(&share.used);
                t.idle.add(&share.idle);
                t.future_idle.add(&share.future_idle);
            }
            nodes.push(share);
        }
        DomainLedger {
            domains,
            nodes,
            zero,
        }
    }

    /// Domain `d`'s totals.
    pub fn totals(&self, d: DomainId) -> &DomainTotals {
        &self.domains[d.idx()]
    }

    /// Takes node `n`'s current numbers into its domains' totals.
    pub fn refresh(&mut self, s: &Snapshot, n: NodeId) {
        let (Some(node), Some(share)) = (s.nodes.get(n.idx()), self.nodes.get_mut(n.idx())) else {
            return;
        };
        let now = NodeShare::of(node, &self.zero);
        if now == *share {
            return;
        }
        for d in s.topology.node_domains.get(n.idx()).into_iter().flatten() {
            let t = &mut self.domains[d.idx()];
            swap(&mut t.used, &share.used, &now.used);
            swap(&mut t.idle, &share.idle, &now.idle);
            swap(&mut t.future_idle, &share.future_idle, &now.future_idle);
        }
        *share = now;
    }
}

/// `total - old + new`, dimension by dimension.
fn swap(total: &mut Resource, old: &Resource, new: &Resource) {
    let dims = total.len().max(old.len()).max(new.len());
    for i in 0..dims {
        total.set(i, total.get(i) - old.get(i) + new.get(i));
    }
}
