//! The numbers a task's node scan reads of every node, copied out of the nodes into dense
//! arrays. A scan looks at hundreds of nodes per task; reading them from contiguous rows
//! instead of following one pointer per node is what makes it cheap. The [`Snapshot`] keeps the
//! table in step with every change it makes to a node.
//!
//! [`Snapshot`]: super::Snapshot

use std::sync::Arc;

use smallvec::SmallVec;

use super::{NodeId, NodeInfo};
use crate::resource::{CPU_DIM, MEMORY_DIM, PODS_DIM, Resource};

/// Whether the node takes no new placements until its pods fit again.
const OUT_OF_SYNC: u8 = 1;
/// A vector of the node is longer than the rows: its rows are not used.
const WIDE: u8 = 2;
/// The node has no taints and is schedulable, so no taint or toleration check can fail on it.
const PLAIN: u8 = 4;

/// What node scoring reads of a node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScoreInputs {
    /// Allocatable (milli-CPU, memory).
    pub allocatable: (i64, i64),
    /// kube-scheduler's non-zero requests of the node's tasks (milli-CPU, memory).
    pub non_zero_requested: (i64, i64),
    /// Σ request of the node's tasks, pipelined ones included (milli-CPU, memory).
    pub requested: (i64, i64),
}

impl ScoreInputs {
    /// Reads them off the node.
    pub fn of(node: &NodeInfo) -> Self {
        let req = |d: usize| node.used.get(d).wrapping_add(node.pipelined.get(d));
        ScoreInputs {
            allocatable: (
                node.allocatable.get(CPU_DIM),
                node.allocatable.get(MEMORY_DIM),
            ),
            non_zero_requested: node.non_zero_requested,
            requested: (req(CPU_DIM), req(MEMORY_DIM)),
        }
    }
}

/// Whether the node object has no taints and is not cordoned.
pub fn is_plain(node: &NodeInfo) -> bool {
    node.node.spec.as_ref().is_none_or(|s| {
        !s.unschedulable.unwrap_or(false) && s.taints.as_deref().is_none_or(<[_]>::is_empty)
    })
}

/// Free pod slots as the pod-count predicate counts them (may be zero or negative).
pub fn pod_room(node: &NodeInfo) -> i64 {
    node.allocatable.get(PODS_DIM) / 1000 - node.pod_count() as i64
}

/// Dense per-node rows, indexed by node id.
#[derive(Debug, Clone, Default)]
pub struct NodeTable {
    /// Dimensions per resource row; shorter vectors are padded with zeros, which every
    /// comparison treats as the absent dimension it stands for.
    width: usize,
    future_idle: Vec<i64>,
    idle: Vec<i64>,
    pod_room: Vec<i64>,
    flags: Vec<u8>,
    scores: Vec<ScoreInputs>,
}

impl NodeTable {
    /// The table of `nodes`, with resource rows of at least `width` dimensions.
    pub fn build(nodes: &[Arc<NodeInfo>], width: usize) -> Self {
        let width = nodes
            .iter()
            .map(|n| n.idle.len().max(n.future_idle.len()))
            .fold(width, usize::max);
        let n = nodes.len();
        let mut t = NodeTable {
            width,
            future_idle: vec![0; n * width],
            idle: vec![0; n * width],
            pod_room: vec![0; n],
            flags: vec![0; n],
            scores: vec![ScoreInputs::default(); n],
        };
        for (i, node) in nodes.iter().enumerate() {
            t.refresh(NodeId(i as u32), node);
            if is_plain(node) {
                t.flags[i] |= PLAIN;
            }
        }
        t
    }

    /// Copies the node's accounting into its rows (not the node object: it does not change
    /// within a session).
    pub fn refresh(&mut self, id: NodeId, node: &NodeInfo) {
        let i = id.idx();
        let Some(flags) = self.flags.get_mut(i) else {
            return;
        };
        let w = self.width;
        let mut f = *flags & PLAIN;
        if node.out_of_sync {
            f |= OUT_OF_SYNC;
        }
        if node.idle.len() > w || node.future_idle.len() > w {
            f |= WIDE;
        } else {
            copy_row(&mut self.idle[i * w..(i + 1) * w], &node.idle);
            copy_row(&mut self.future_idle[i * w..(i + 1) * w], &node.future_idle);
        }
        *flags = f;
        self.pod_room[i] = pod_room(node);
        self.scores[i] = ScoreInputs::of(node);
    }

    fn flag(&self, n: NodeId, f: u8) -> Option<bool> {
        self.flags.get(n.idx()).map(|v| v & f != 0)
    }

    /// `req` laid out as a row, for comparing it with many nodes.
    pub fn row_request(&self, req: &Resource) -> RowRequest {
        RowRequest {
            row: (0..self.width).map(|i| req.get(i)).collect(),
            rest_fits: req.iter().skip(self.width).all(|(_, v)| v <= 0),
        }
    }

    #[inline]
    fn fits(&self, rows: &[i64], req: &RowRequest, n: NodeId) -> Option<bool> {
        let i = n.idx();
        if self.flags.get(i)? & WIDE != 0 {
            return None;
        }
        let w = self.width;
        let row = rows.get(i * w..(i + 1) * w)?;
        Some(req.rest_fits && req.row.iter().zip(row).all(|(r, a)| r <= a))
    }

    /// Whether `req` fits the node's future idle; `None` when the table cannot say.
    #[inline]
    pub fn fits_future_idle(&self, req: &RowRequest, n: NodeId) -> Option<bool> {
        self.fits(&self.future_idle, req, n)
    }

    /// Whether `req` fits the node's idle; `None` when the table cannot say.
    #[inline]
    pub fn fits_idle(&self, req: &RowRequest, n: NodeId) -> Option<bool> {
        self.fits(&self.idle, req, n)
    }

    /// Whether the node is out of sync.
    #[inline]
    pub fn out_of_sync(&self, n: NodeId) -> Option<bool> {
        self.flag(n, OUT_OF_SYNC)
    }

    /// Whether the node has no taints and is schedulable.
    #[inline]
    pub fn plain(&self, n: NodeId) -> Option<bool> {
        self.flag(n, PLAIN)
    }

    /// Free pod slots of the node.
    #[inline]
    pub fn pod_room(&self, n: NodeId) -> Option<i64> {
        self.pod_room.get(n.idx()).copied()
    }

    /// What scoring reads of the node.
    #[inline]
    pub fn score_inputs(&self, n: NodeId) -> Option<ScoreInputs> {
        self.scores.get(n.idx()).copied()
    }
}

/// A request laid out like the table's rows. Comparing it with a row is
/// [`Resource::fits_in`]: both are padded with zeros to the same width, and a request that asks
/// for a dimension past the rows fits no node.
#[derive(Debug, Clone)]
pub struct RowRequest {
    row: SmallVec<[i64; 4]>,
    rest_fits: bool,
}

fn copy_row(row: &mut [i64], r: &Resource) {
    for (i, v) in row.iter_mut().enumerate() {
        *v = r.get(i);
    }
}
