//! The arenas of one session and the only methods that change task status or node accounting.

use std::collections::HashMap;

use super::{JobId, JobInfo, NodeId, NodeInfo, QueueId, QueueInfo, TaskId, TaskInfo, TaskStatus};
use crate::resource::{Dims, Resource};

/// Everything one session works on.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The resource dimensions of every vector in the snapshot.
    pub dims: Dims,
    /// Tasks.
    pub tasks: Vec<TaskInfo>,
    /// Jobs.
    pub jobs: Vec<JobInfo>,
    /// Nodes, in cache order.
    pub nodes: Vec<NodeInfo>,
    /// Queues.
    pub queues: Vec<QueueInfo>,
    /// Σ allocatable of all nodes.
    pub total_resource: Resource,
    /// Queue by name.
    pub queue_index: HashMap<String, QueueId>,
    /// Node by name.
    pub node_index: HashMap<String, NodeId>,
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

    /// Mutable job `id`.
    #[inline]
    pub fn job_mut(&mut self, id: JobId) -> &mut JobInfo {
        &mut self.jobs[id.idx()]
    }

    /// The node `id`.
    #[inline]
    pub fn node(&self, id: NodeId) -> &NodeInfo {
        &self.nodes[id.idx()]
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
        let task = &mut self.tasks[id.idx()];
        let old = task.status;
        if old == status {
            return;
        }
        task.status = status;
        let best_effort = task.best_effort;
        let Some(jid) = task.job else { return };
        let req = task.resreq.clone();
        let job = &mut self.jobs[jid.idx()];
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
        let task = &mut self.tasks[id.idx()];
        task.node = Some(node);
        let req = task.resreq.clone();
        let nz = task.non_zero;
        let n = &mut self.nodes[node.idx()];
        n.add_task(id, status, &req, nz);
        if let (Some(gpu), Some(gpus)) = (&task.gpu, n.gpus.as_deref_mut()) {
            if task.gpu_devices.is_empty() {
                task.gpu_devices = gpus.best_fit(gpu).unwrap_or_default();
            }
            gpus.take(&task.gpu_devices, gpu);
        }
    }

    /// Takes a task off its node and sets it to `status`.
    pub fn unplace(&mut self, id: TaskId, status: TaskStatus) {
        let task = &self.tasks[id.idx()];
        let old = task.status;
        if let Some(node) = task.node {
            let req = task.resreq.clone();
            let nz = task.non_zero;
            let n = &mut self.nodes[node.idx()];
            n.remove_task(id, old, &req, nz);
            if let (Some(gpu), Some(gpus)) = (&task.gpu, n.gpus.as_deref_mut()) {
                gpus.release(&task.gpu_devices, gpu);
            }
        }
        self.tasks[id.idx()].node = None;
        self.tasks[id.idx()].gpu_devices.clear();
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
                let n = &mut self.nodes[node.idx()];
                n.remove_task(id, old, &req, nz);
                n.add_task(id, status, &req, nz);
                self.set_status(id, status);
            }
            None => self.set_status(id, status),
        }
    }
}
