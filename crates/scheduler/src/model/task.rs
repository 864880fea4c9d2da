//! A task: one pod as the scheduler sees it.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use volcano_api::NamespacedName;
use volcano_api::k8s_openapi;

use super::gpu::GpuRequest;
use super::{JobId, NodeId};
use crate::resource::Resource;

/// Where a task stands, as in Volcano's `TaskStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaskStatus {
    /// Waiting for a node.
    Pending,
    /// Given a node in this session, not yet bound.
    Allocated,
    /// Given a node in this session, waiting for resources being released there.
    Pipelined,
    /// Bind request sent.
    Binding,
    /// Bound to a node, not running yet.
    Bound,
    /// Running.
    Running,
    /// Being deleted or evicted; still holds its resources.
    Releasing,
    /// Finished successfully.
    Succeeded,
    /// Finished with a failure.
    Failed,
    /// Phase not known.
    Unknown,
}

impl TaskStatus {
    /// Number of statuses, for counting arrays.
    pub const COUNT: usize = 10;

    /// Every status, in declaration order.
    pub const ALL: [TaskStatus; TaskStatus::COUNT] = [
        TaskStatus::Pending,
        TaskStatus::Allocated,
        TaskStatus::Pipelined,
        TaskStatus::Binding,
        TaskStatus::Bound,
        TaskStatus::Running,
        TaskStatus::Releasing,
        TaskStatus::Succeeded,
        TaskStatus::Failed,
        TaskStatus::Unknown,
    ];

    /// Index into counting arrays.
    #[inline]
    pub fn idx(self) -> usize {
        self as usize
    }

    /// Holds resources of its job's allocation: Bound, Binding, Running, Allocated.
    pub fn is_allocated(self) -> bool {
        matches!(
            self,
            TaskStatus::Bound | TaskStatus::Binding | TaskStatus::Running | TaskStatus::Allocated
        )
    }

    /// May be chosen as a preemption victim: Bound, Running.
    pub fn is_preemptable(self) -> bool {
        matches!(self, TaskStatus::Bound | TaskStatus::Running)
    }

    /// Counts as scheduled for PodGroup phase: Running, Bound, Failed, Succeeded.
    pub fn is_scheduled(self) -> bool {
        matches!(
            self,
            TaskStatus::Running | TaskStatus::Bound | TaskStatus::Failed | TaskStatus::Succeeded
        )
    }

    /// Volcano's name of the status.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "Pending",
            TaskStatus::Allocated => "Allocated",
            TaskStatus::Pipelined => "Pipelined",
            TaskStatus::Binding => "Binding",
            TaskStatus::Bound => "Bound",
            TaskStatus::Running => "Running",
            TaskStatus::Releasing => "Releasing",
            TaskStatus::Succeeded => "Succeeded",
            TaskStatus::Failed => "Failed",
            TaskStatus::Unknown => "Unknown",
        }
    }
}

/// One pod as the scheduler sees it.
#[derive(Debug, Clone)]
pub struct TaskInfo {
    /// Pod UID (`<ns>-<name>` when the pod has none).
    pub uid: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The pod's identity, the key decisions name it by.
    pub key: NamespacedName,
    /// The job (PodGroup) the task belongs to; `None` for pods that only use node resources.
    pub job: Option<JobId>,
    /// Task role (`volcano.sh/task-spec`), if any.
    pub role: Option<String>,
    /// Current status.
    pub status: TaskStatus,
    /// Resources requested, including one `pods`.
    pub resreq: Resource,
    /// Node the task is on or placed on in this session.
    pub node: Option<NodeId>,
    /// The pod's `spec.nodeName` when the snapshot was taken.
    pub bound_node_name: Option<String>,
    /// Task priority (pod priority, or the `volcano.sh/task-priority` annotation).
    pub priority: i32,
    /// Whether the task may be preempted (`volcano.sh/preemptable`, default true).
    pub preemptable: bool,
    /// The request is empty but for the pod count.
    pub best_effort: bool,
    /// `preemptionPolicy: Never`.
    pub preemption_never: bool,
    /// The pod still has `spec.schedulingGates`: Kubernetes will not let it be bound, so it
    /// is neither placed nor allowed to evict anything.
    pub scheduling_gated: bool,
    /// Pod creation time in seconds since the epoch (0 when unset).
    pub creation: i64,
    /// Index parsed from the pod name's `-<n>` suffix, for default task order.
    pub name_index: Option<i64>,
    /// The pod's `status.nominatedNodeName`.
    pub nominated_node: Option<String>,
    /// The pod's `PodScheduled` condition as persisted, so a session decides whether to
    /// write it from what the pod carries, not from what an earlier process wrote.
    pub pod_scheduled: Option<Arc<PodCondition>>,
    /// kube-scheduler's non-zero (cpu, memory) request, for scoring.
    pub non_zero: (i64, i64),
    /// The pod itself, shared with the object store that holds it (in the runtime, the
    /// watcher's slim copy: `cache::slim_pod`).
    pub pod: Arc<Pod>,
    /// Whether the task's last transaction in this session put it on a node (even if the
    /// statement was discarded later), for the gang's "schedulable" count.
    pub last_tx_allocated: bool,
    /// What the pod asks of a node's GPU devices, if anything.
    pub gpu: Option<Arc<GpuRequest>>,
    /// The devices of its node it holds (or will hold once placed), by index.
    pub gpu_devices: Vec<u8>,
}
