//! The arenas of one session and the only methods that change task status or node accounting.

use std::collections::HashMap;
use std::sync::Arc;

use super::node_table::{self, NodeTable, RowRequest, ScoreInputs};
use super::{
    ClusterObjects, JobId, JobInfo, NodeId, NodeInfo, QueueId, QueueInfo, SubGroups, TaskId,
    TaskInfo, TaskStatus, Topology,
};
use crate::resource::{Dims, Resource};

/// Everything one session works on.
///
/// Tasks, jobs, nodes and queues are shared with the cache that took the snapshot and copied
/// one by one when a session first changes them: a snapshot costs a reference per object, and
/// a session pays only for what it touches.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The resource dimensions of every vector in the snapshot.
    pub dims: Dims,
    /// Tasks.
    pub tasks: Vec<Arc<TaskInfo>>,
    /// Jobs.
    pub jobs: Vec<Arc<JobInfo>>,
    /// Nodes, in cache order.
    pub nodes: Vec<Arc<NodeInfo>>,
    /// Queues.
    pub queues: Vec<Arc<QueueInfo>>,
    /// Σ allocatable of all nodes.
    pub total_resource: Resource,
    /// Queue by name.
    pub queue_index: Arc<HashMap<String, QueueId>>,
    /// Node by name.
    pub node_index: Arc<HashMap<String, NodeId>>,
    /// Each node's place in name order, by node id: ties between nodes are broken by name,
    /// and comparing two numbers is cheaper than comparing two names.
    pub node_rank: Arc<Vec<u32>>,
    /// The nodes' hot numbers in dense rows, once a session asks for them
    /// ([`Snapshot::build_node_table`]); kept in step by every method that changes a node.
    pub(crate) node_table: Option<NodeTable>,
    /// Namespaces and storage objects, for the placement rules that read them.
    pub cluster: Arc<ClusterObjects>,
    /// The network domains (HyperNodes) over the nodes.
    pub topology: Arc<Topology>,
}

/// A task's request prepared for comparing with many nodes ([`Snapshot::node_request`]).
pub struct NodeRequest<'a> {
    req: &'a Resource,
    row: Option<RowRequest>,
}

impl Snapshot {
    /// The task `id`.
    #[inline]
    pub fn task(&self, id: TaskId) -> &TaskInfo {
        &self.tasks[id.idx()]
    }

    /// The job `id`.
    #[inline]
    pub fn job(&self, id: JobId) -> &JobInfo {
        &self.jobs[id.idx()]
    }

    /// Mutable job `id` (copied first if the cache still shares it).
    #[inline]
    pub fn job_mut(&mut self, id: JobId) -> &mut JobInfo {
        Arc::make_mut(&mut self.jobs[id.idx()])
    }

    /// Mutable task `id` (copied first if the cache still shares it).
    #[inline]
    pub fn task_mut(&mut self, id: TaskId) -> &mut TaskInfo {
        Arc::make_mut(&mut self.tasks[id.idx()])
    }

    /// Mutable node `id` (copied first if the cache still shares it). The node table is
    /// dropped, as the change is not known; sessions change nodes through the methods below.
    #[inline]
    pub fn node_mut(&mut self, id: NodeId) -> &mut NodeInfo {
        self.node_table = None;
        Arc::make_mut(&mut self.nodes[id.idx()])
    }

    /// Splits the tasks of every job with a `subGroupPolicy` into its sub-groups.
    pub fn index_sub_groups(&mut self) {
        for j in self.job_ids() {
            let Some(policies) = self.job(j).sub_group_policy.clone() else {
                continue;
            };
            let job = self.job(j);
            let groups = SubGroups::of(
                &self.tasks,
                &job.tasks,
                &policies,
                job.network_topology.as_ref(),
            );
            self.job_mut(j).sub_groups = Some(Arc::new(groups));
        }
    }

    /// Copies every node's hot numbers into the dense table the node scans read.
    pub fn build_node_table(&mut self) {
        self.node_table = Some(NodeTable::build(&self.nodes, self.dims.len()));
    }

    /// Copies node `id`'s accounting into the node table, after a change to it.
    fn refresh_node(&mut self, id: NodeId) {
        if let Some(t) = self.node_table.as_mut() {
            t.refresh(id, &self.nodes[id.idx()]);
        }
    }

    /// Counts a pod evicted from node `id` in this session (`evicted`), or takes one back.
    pub fn set_evicted_in_session(&mut self, id: NodeId, evicted: bool) {
        let node = Arc::make_mut(&mut self.nodes[id.idx()]);
        if evicted {
            node.evicted_in_session += 1;
        } else {
            node.evicted_in_session = node.evicted_in_session.saturating_sub(1);
        }
        self.refresh_node(id);
    }

    /// `req` prepared for comparing with many nodes.
    pub fn node_request<'a>(&self, req: &'a Resource) -> NodeRequest<'a> {
        NodeRequest {
            req,
            row: self.node_table.as_ref().map(|t| t.row_request(req)),
        }
    }

    /// Whether `req` fits node `id`'s future idle.
    #[inline]
    pub fn fits_future_idle(&self, req: &NodeRequest, id: NodeId) -> bool {
        let fast = match (&self.node_table, &req.row) {
            (Some(t), Some(row)) => t.fits_future_idle(row, id),
            _ => None,
        };
        let slow = || req.req.fits_in(&self.node(id).future_idle);
        debug_assert!(fast.is_none_or(|f| f == slow()));
        fast.unwrap_or_else(slow)
    }

    /// Whether `req` fits node `id`'s idle.
    #[inline]
    pub fn fits_idle(&self, req: &NodeRequest, id: NodeId) -> bool {
        let fast = match (&self.node_table, &req.row) {
            (Some(t), Some(row)) => t.fits_idle(row, id),
            _ => None,
        };
        let slow = || req.req.fits_in(&self.node(id).idle);
        debug_assert!(fast.is_none_or(|f| f == slow()));
        fast.unwrap_or_else(slow)
    }

    /// Whether node `id` is out of sync (takes no new placements).
    #[inline]
    pub fn node_out_of_sync(&self, id: NodeId) -> bool {
        let fast = self.node_table.as_ref().and_then(|t| t.out_of_sync(id));
        debug_assert!(fast.is_none_or(|f| f == self.node(id).out_of_sync));
        fast.unwrap_or_else(|| self.node(id).out_of_sync)
    }

    /// Whether node `id` has no taints and is schedulable.
    #[inline]
    pub fn node_plain(&self, id: NodeId) -> bool {
        let fast = self.node_table.as_ref().and_then(|t| t.plain(id));
        debug_assert!(fast.is_none_or(|f| f == node_table::is_plain(self.node(id))));
        fast.unwrap_or_else(|| node_table::is_plain(self.node(id)))
    }

    /// Free pod slots of node `id` as the pod-count predicate counts them.
    #[inline]
    pub fn node_pod_room(&self, id: NodeId) -> i64 {
        let fast = self.node_table.as_ref().and_then(|t| t.pod_room(id));
        debug_assert!(fast.is_none_or(|f| f == node_table::pod_room(self.node(id))));
        fast.unwrap_or_else(|| node_table::pod_room(self.node(id)))
    }

    /// What node scoring reads of node `id`.
    #[inline]
    pub fn node_score_inputs(&self, id: NodeId) -> ScoreInputs {
        let fast = self.node_table.as_ref().and_then(|t| t.score_inputs(id));
        debug_assert!(fast.is_none_or(|f| f == ScoreInputs::of(self.node(id))));
        fast.unwrap_or_else(|| ScoreInputs::of(self.node(id)))
    }

    /// Mutable queue `id` (copied first if the cache still shares it).
    #[inline]
    pub fn queue_mut(&mut self, id: QueueId) -> &mut QueueInfo {
        Arc::make_mut(&mut self.queues[id.idx()])
    }

    /// The node `id`.
    #[inline]
    pub fn node(&self, id: NodeId) -> &NodeInfo {
        &self.nodes[id.idx()]
    }

    /// Orders two nodes by name.
    #[inline]
    pub fn node_name_cmp(&self, a: NodeId, b: NodeId) -> std::cmp::Ordering {
        match (self.node_rank.get(a.idx()), self.node_rank.get(b.idx())) {
            (Some(x), Some(y)) => x.cmp(y),
            _ => self.node(a).name.cmp(&self.node(b).name),
        }
    }

    /// The queue `id`.
    #[inline]
    pub fn queue(&self, id: QueueId) -> &QueueInfo {
        &self.queues[id.idx()]
    }

    /// The job of a task, if any.
    pub fn task_job(&self, id: TaskId) -> Option<&JobInfo> {
        self.task(id).job.map(|j| self.job(j))
    }

    /// The queue of a job.
    pub fn job_queue(&self, id: JobId) -> &QueueInfo {
        self.queue(self.job(id).queue)
    }

    /// All job ids.
    pub fn job_ids(&self) -> impl Iterator<Item = JobId> + use<> {
        (0..self.jobs.len() as u32).map(JobId)
    }

    /// All node ids.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + use<> {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// All queue ids.
    pub fn queue_ids(&self) -> impl Iterator<Item = QueueId> + use<> {
        (0..self.queues.len() as u32).map(QueueId)
    }

    /// Changes a task's status, keeping its job's counters and allocated resources current.
    /// Node accounting is not touched (see [`Snapshot::place`] and [`Snapshot::unplace`]).
    pub fn set_status(&mut self, id: TaskId, status: TaskStatus) {
        if self.tasks[id.idx()].status == status {
            return;
        }
        let task = self.task_mut(id);
        let old = task.status;
        task.status = status;
        let best_effort = task.best_effort;
        let Some(jid) = task.job else { return };
        let req = task.resreq.clone();
        let job = self.job_mut(jid);
        job.counts[old.idx()] = job.counts[old.idx()].saturating_sub(1);
        job.counts[status.idx()] += 1;
        if best_effort {
            if old == TaskStatus::Pending {
                job.pending_best_effort = job.pending_best_effort.saturating_sub(1);
            }
            if status == TaskStatus::Pending {
                job.pending_best_effort += 1;
            }
        }
        match (old.is_allocated(), status.is_allocated()) {
            (false, true) => job.allocated.add(&req),
            (true, false) => job.allocated.sub_saturating(&req),
            _ => {}
        }
    }

    /// Puts a task on a node in `status` (Allocated, Pipelined, Releasing ...). A task that
    /// asks for GPUs takes the devices in its `gpu_devices`, or best fit's when none were
    /// chosen; when none fit it holds none (its node-level request is still counted).
    pub fn place(&mut self, id: TaskId, node: NodeId, status: TaskStatus) {
        self.set_status(id, status);
        let task = Arc::make_mut(&mut self.tasks[id.idx()]);
        task.node = Some(node);
        let req = task.resreq.clone();
        let nz = task.non_zero;
        let n = Arc::make_mut(&mut self.nodes[node.idx()]);
        n.add_task(id, status, &req, nz);
        if let (Some(gpu), Some(gpus)) = (&task.gpu, n.gpus.as_deref_mut()) {
            if task.gpu_devices.is_empty() {
                task.gpu_devices = gpus.best_fit(gpu).unwrap_or_default();
            }
            gpus.take(&task.gpu_devices, gpu);
        }
        self.refresh_node(node);
    }

    /// Takes a task off its node and sets it to `status`.
    pub fn unplace(&mut self, id: TaskId, status: TaskStatus) {
        let task = &self.tasks[id.idx()];
        let old = task.status;
        if let Some(node) = task.node {
            let req = task.resreq.clone();
            let nz = task.non_zero;
            let n = Arc::make_mut(&mut self.nodes[node.idx()]);
            n.remove_task(id, old, &req, nz);
            if let (Some(gpu), Some(gpus)) = (&task.gpu, n.gpus.as_deref_mut()) {
                gpus.release(&task.gpu_devices, gpu);
            }
            self.refresh_node(node);
        }
        let task = self.task_mut(id);
        task.node = None;
        task.gpu_devices.clear();
        self.set_status(id, status);
    }

    /// Changes the status of a task that stays on its node (e.g. Running → Releasing).
    pub fn update_on_node(&mut self, id: TaskId, status: TaskStatus) {
        let task = &self.tasks[id.idx()];
        let old = task.status;
        match task.node {
            Some(node) => {
                let req = task.resreq.clone();
                let nz = task.non_zero;
                let n = Arc::make_mut(&mut self.nodes[node.idx()]);
                n.remove_task(id, old, &req, nz);
                n.add_task(id, status, &req, nz);
                self.refresh_node(node);
                self.set_status(id, status);
            }
            None => self.set_status(id, status),
        }
    }
}
