//! A set of the snapshot's nodes, one bit per node: what a filter that knows where whole
//! topology domains are closed hands the node scan, so the scan never visits them.

use fixedbitset::FixedBitSet;

use super::NodeId;

/// A set of nodes of one snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeSet {
    bits: FixedBitSet,
}

impl NodeSet {
    /// Every one of `nodes` nodes.
    pub fn full(nodes: usize) -> Self {
        let mut set = NodeSet::default();
        set.fill(nodes);
        set
    }

    /// None of `nodes` nodes.
    pub fn empty(nodes: usize) -> Self {
        NodeSet {
            bits: FixedBitSet::with_capacity(nodes),
        }
    }

    /// Makes the set hold every one of `nodes` nodes again, keeping its allocation.
    pub fn fill(&mut self, nodes: usize) {
        if self.bits.len() == nodes {
            self.bits.insert_range(..);
        } else {
            self.bits = FixedBitSet::with_capacity(nodes);
            self.bits.insert_range(..);
        }
    }

    /// Whether `n` is in the set.
    #[inline]
    pub fn contains(&self, n: NodeId) -> bool {
        self.bits.contains(n.idx())
    }

    /// Puts `n` in the set (a node beyond the set's size is ignored).
    #[inline]
    pub fn insert(&mut self, n: NodeId) {
        if n.idx() < self.bits.len() {
            self.bits.insert(n.idx());
        }
    }

    /// Keeps only the nodes `other` holds too.
    pub fn intersect_with(&mut self, other: &NodeSet) {
        self.bits.intersect_with(&other.bits);
    }

    /// Takes out the nodes `other` holds.
    pub fn difference_with(&mut self, other: &NodeSet) {
        self.bits.difference_with(&other.bits);
    }

    /// Takes `n` out of the set.
    #[inline]
    pub fn remove(&mut self, n: NodeId) {
        if n.idx() < self.bits.len() {
            self.bits.set(n.idx(), false);
        }
    }

    /// Keeps only the nodes for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(NodeId) -> bool) {
        for i in 0..self.bits.len() {
            if self.bits.contains(i) && !keep(NodeId(i as u32)) {
                self.bits.set(i, false);
            }
        }
    }

    /// How many nodes the set holds.
    pub fn len(&self) -> usize {
        self.bits.count_ones(..)
    }

    /// Whether the set holds no node.
    pub fn is_empty(&self) -> bool {
        self.bits.is_clear()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_set_loses_exactly_the_nodes_taken_out() {
        let mut set = NodeSet::full(130);
        assert_eq!(set.len(), 130);
        set.remove(NodeId(0));
        set.remove(NodeId(129));
        set.remove(NodeId(500));
        set.retain(|n| n.0 % 2 == 1);
        assert!(!set.contains(NodeId(129)));
        assert!(set.contains(NodeId(127)));
        assert!(!set.contains(NodeId(64)));
        assert_eq!(set.len(), 64);
        let mut odd_low = NodeSet::empty(130);
        (0..10)
            .filter(|i| i % 2 == 1)
            .for_each(|i| odd_low.insert(NodeId(i)));
        odd_low.insert(NodeId(999));
        set.intersect_with(&odd_low);
        assert_eq!(set.len(), 5);
        let mut three = NodeSet::empty(130);
        three.insert(NodeId(3));
        set.difference_with(&three);
        assert_eq!(set.len(), 4);
        assert!(!set.contains(NodeId(3)));
        set.fill(3);
        assert_eq!(set.len(), 3);
        assert!(!set.contains(NodeId(3)));
        set.retain(|_| false);
        assert!(set.is_empty());
    }
}
