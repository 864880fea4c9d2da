//! The Statement: the ordered operations of one tentative placement, already applied to the
//! session, so that a gang that cannot reach its minimum is undone as one unit.

use crate::model::{NodeId, TaskId, TaskStatus};

/// One recorded operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// Task allocated on a node.
    Allocate { task: TaskId, node: NodeId },
    /// Task pipelined onto a node; `nominate` when evictions made the room, so the pod is
    /// nominated to the node once committed.
    Pipeline {
        task: TaskId,
        node: NodeId,
        nominate: bool,
    },
    /// Task evicted; `before` is the status to restore; `reason` names who took its place.
    Evict {
        task: TaskId,
        before: TaskStatus,
        reason: String,
    },
}

/// Operations applied to a session that can still be committed or discarded together.
#[derive(Debug, Default)]
#[must_use = "a statement must be committed or discarded"]
pub struct Statement {
    ops: Vec<Op>,
}

impl Statement {
    /// An empty statement.
    pub fn new() -> Self {
        Statement::default()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Moves `other`'s operations to the end of this one.
    pub fn merge(&mut self, other: Statement) {
        self.ops.extend(other.ops);
    }

    pub(crate) fn push_allocate(&mut self, task: TaskId, node: NodeId) {
        self.ops.push(Op::Allocate { task, node });
    }

    pub(crate) fn push_pipeline(&mut self, task: TaskId, node: NodeId, nominate: bool) {
        self.ops.push(Op::Pipeline {
            task,
            node,
            nominate,
        });
    }

    pub(crate) fn push_evict(&mut self, task: TaskId, before: TaskStatus, reason: String) {
        self.ops.push(Op::Evict {
            task,
            before,
            reason,
        });
    }

    /// Whether the statement evicts anything.
    pub fn has_evictions(&self) -> bool {
        self.ops.iter().any(|op| matches!(op, Op::Evict { .. }))
    }

    /// Takes the eviction of `task` out of the statement (the caller restores the session),
    /// returning the status to restore and the eviction's reason.
    pub(crate) fn remove_evict(&mut self, task: TaskId) -> Option<(TaskStatus, String)> {
        let pos = self
            .ops
            .iter()
            .position(|op| matches!(op, Op::Evict { task: t, .. } if *t == task))?;
        match self.ops.remove(pos) {
            Op::Evict { before, reason, .. } => Some((before, reason)),
            _ => None,
        }
    }

    /// The tasks the statement pipelines, with their nodes.
    pub fn pipelined(&self) -> impl Iterator<Item = (TaskId, NodeId)> + '_ {
        self.ops.iter().filter_map(|op| match op {
            Op::Pipeline { task, node, .. } => Some((*task, *node)),
            _ => None,
        })
    }

    /// The tasks the statement places (allocates or pipelines), with their nodes.
    pub fn placed(&self) -> impl Iterator<Item = (TaskId, NodeId)> + '_ {
        self.ops.iter().filter_map(|op| match op {
            Op::Allocate { task, node } | Op::Pipeline { task, node, .. } => Some((*task, *node)),
            _ => None,
        })
    }

    /// The tasks the statement evicts, in order.
    pub fn evicted(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.ops.iter().filter_map(|op| match op {
            Op::Evict { task, .. } => Some(*task),
            _ => None,
        })
    }

    pub(crate) fn into_ops(self) -> Vec<Op> {
        self.ops
    }
}
