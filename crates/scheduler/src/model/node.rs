//! A node and its resource accounting.
//!
//! `idle = allocatable − Σ request of tasks not pipelined` may be negative: a node whose pods
//! need more than it has (its allocatable shrank, another scheduler bound a pod) is *out of
//! sync*. Such a node keeps counting its pods but takes no new placements until the numbers add
//! up again; it never brings the scheduler down.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use volcano_api::k8s_openapi;

use super::gpu::NodeGpus;
use super::{TaskId, TaskStatus};
use crate::resource::Resource;

/// A node with its accounting.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Node name.
    pub name: String,
    /// The Node object (labels, taints, unschedulable).
    pub node: Arc<Node>,
    /// What pods may use.
    pub allocatable: Resource,
    /// Allocatable minus the requests of the tasks on the node (may be negative).
    pub idle: Resource,
    /// Σ request of tasks on the node (including releasing ones).
    pub used: Resource,
    /// Σ request of tasks being released.
    pub releasing: Resource,
    /// Σ request of tasks pipelined onto the node.
    pub pipelined: Resource,
    /// `idle + releasing − pipelined`, kept current.
    pub future_idle: Resource,
    /// Tasks on the node, in arrival order.
    pub tasks: Vec<TaskId>,
    /// Σ of kube-scheduler's non-zero (cpu, memory) requests of the tasks on the node.
    pub non_zero_requested: (i64, i64),
    /// Whether the node's pods needed more than its allocatable when the snapshot was taken.
    pub out_of_sync: bool,
    /// Tasks evicted from the node in this session (still Releasing on it).
    pub evicted_in_session: usize,
    /// The node's GPU devices, one by one, when it has any.
    pub gpus: Option<Box<NodeGpus>>,
}

impl NodeInfo {
    /// A node with nothing on it.
    pub fn new(name: String, node: Arc<Node>, allocatable: Resource) -> Self {
        NodeInfo {
            name,
            node,
            idle: allocatable.clone(),
            future_idle: allocatable.clone(),
            used: Resource::default(),
            releasing: Resource::default(),
            pipelined: Resource::default(),
            allocatable,
            tasks: Vec::new(),
            non_zero_requested: (0, 0),
            out_of_sync: false,
            evicted_in_session: 0,
            gpus: None,
        }
    }

    fn refresh_future_idle(&mut self) {
        let mut f = self.idle.clone();
        f.add(&self.releasing);
        f.sub_saturating(&self.pipelined);
        self.future_idle = f;
    }

    /// Accounts a task in `status` on this node. Never fails: a task that does not fit makes
    /// idle negative, which callers check before placing.
    pub fn add_task(
        &mut self,
        id: TaskId,
        status: TaskStatus,
        req: &Resource,
        non_zero: (i64, i64),
    ) {
        self.non_zero_requested.0 += non_zero.0;
        self.non_zero_requested.1 += non_zero.1;
        match status {
            TaskStatus::Pipelined => self.pipelined.add(req),
            TaskStatus::Releasing => {
                self.idle.sub_saturating(req);
                self.releasing.add(req);
                self.used.add(req);
            }
            _ => {
                self.idle.sub_saturating(req);
                self.used.add(req);
            }
        }
        self.tasks.push(id);
        self.refresh_future_idle();
    }

    /// Reverses [`NodeInfo::add_task`] for a task accounted in `status`.
    pub fn remove_task(
        &mut self,
        id: TaskId,
        status: TaskStatus,
        req: &Resource,
        non_zero: (i64, i64),
    ) {
        let Some(pos) = self.tasks.iter().position(|t| *t == id) else {
            return;
        };
        self.non_zero_requested.0 -= non_zero.0;
        self.non_zero_requested.1 -= non_zero.1;
        self.tasks.remove(pos);
        match status {
            TaskStatus::Pipelined => self.pipelined.sub_saturating(req),
            TaskStatus::Releasing => {
                self.idle.add(req);
                self.releasing.sub_saturating(req);
                self.used.sub_saturating(req);
            }
            _ => {
                self.idle.add(req);
                self.used.sub_saturating(req);
            }
        }
        self.refresh_future_idle();
    }

    /// Number of pods the pod-count predicate sees: pipelined ones included, those evicted in
    /// this session not.
    pub fn pod_count(&self) -> usize {
        self.tasks.len().saturating_sub(self.evicted_in_session)
    }
}
