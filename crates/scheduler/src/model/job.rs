//! A job: a PodGroup and its tasks.

use std::collections::BTreeMap;
use std::sync::Arc;

use volcano_api::NamespacedName;
use volcano_api::scheduling::{
    NetworkTopologySpec, PodGroupCondition, PodGroupStatus, SubGroupPolicySpec, phase,
};

use super::{QueueId, SubGroups, TaskId, TaskStatus};
use crate::fit::FitErrors;
use crate::resource::Resource;

/// PodGroup phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PgPhase {
    /// Not admitted (also the empty phase).
    Pending,
    /// Admitted by enqueue.
    Inqueue,
    /// At least minMember scheduled.
    Running,
    /// Some running, the rest unschedulable in this session.
    Unknown,
    /// Every scheduled task finished.
    Completed,
}

impl PgPhase {
    /// Parses the wire value; anything unrecognised counts as Pending.
    pub fn parse(s: &str) -> PgPhase {
        match s {
            phase::INQUEUE => PgPhase::Inqueue,
            phase::RUNNING => PgPhase::Running,
            phase::UNKNOWN => PgPhase::Unknown,
            phase::COMPLETED => PgPhase::Completed,
            _ => PgPhase::Pending,
        }
    }

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            PgPhase::Pending => phase::PENDING,
            PgPhase::Inqueue => phase::INQUEUE,
            PgPhase::Running => phase::RUNNING,
            PgPhase::Unknown => phase::UNKNOWN,
            PgPhase::Completed => phase::COMPLETED,
        }
    }
}

/// A PodGroup with its tasks and the counters every plugin reads.
#[derive(Debug, Clone)]
pub struct JobInfo {
    /// The PodGroup's identity (Volcano's job ID).
    pub key: NamespacedName,
    /// Namespace.
    pub namespace: String,
    /// PodGroup name.
    pub name: String,
    /// PodGroup UID (the key when unset), for order tie-breaks.
    pub uid: String,
    /// Queue.
    pub queue: QueueId,
    /// Gang size (`minMember`).
    pub min_available: i32,
    /// Per-role minimums (`minTaskMember`).
    pub min_task_member: BTreeMap<String, i32>,
    /// `minResources`, if set.
    pub min_resources: Option<Resource>,
    /// Job priority from the PodGroup's priority class.
    pub priority: i32,
    /// PodGroup creation time in seconds since the epoch.
    pub creation: i64,
    /// Whether the PodGroup may be preempted (`volcano.sh/preemptable`, default false).
    pub preemptable: bool,
    /// Phase in this session (enqueue may change it).
    pub phase: PgPhase,
    /// The PodGroup status as the snapshot found it, for change detection at close.
    pub old_status: PodGroupStatus,
    /// Conditions as they will be written at close.
    pub conditions: Vec<PodGroupCondition>,
    /// The job's tasks.
    pub tasks: Vec<TaskId>,
    /// Number of tasks in each status.
    pub counts: [u32; TaskStatus::COUNT],
    /// Pending tasks whose request is empty.
    pub pending_best_effort: u32,
    /// Σ request of tasks in an allocated status.
    pub allocated: Resource,
    /// Per-task node fit errors recorded by actions in this session.
    pub fit_errors: BTreeMap<TaskId, FitErrors>,
    /// Job-level reason set by actions (queue closed, not admitted, invalid gang...).
    pub job_fit_error: Option<(String, String)>,
    /// How close in the network the gang's pods must be (`spec.networkTopology`).
    pub network_topology: Option<Arc<NetworkTopologySpec>>,
    /// `spec.subGroupPolicy`, when it names any policy.
    pub sub_group_policy: Option<Arc<Vec<SubGroupPolicySpec>>>,
    /// The sub-groups `sub_group_policy` makes of the tasks, built when a session opens.
    pub sub_groups: Option<Arc<SubGroups>>,
    /// A bare pod's PodGroup kept only in memory ([`crate::cache::CacheOptions`]'s
    /// `shadow_pod_groups`): no object exists, so nothing is written to one.
    pub shadow: bool,
}

impl JobInfo {
    /// Tasks in `status`.
    #[inline]
    pub fn count(&self, status: TaskStatus) -> u32 {
        self.counts[status.idx()]
    }

    /// Bound, Binding, Running, Allocated or Succeeded.
    pub fn ready_task_num(&self) -> u32 {
        self.count(TaskStatus::Bound)
            + self.count(TaskStatus::Binding)
            + self.count(TaskStatus::Running)
            + self.count(TaskStatus::Allocated)
            + self.count(TaskStatus::Succeeded)
    }

    /// Pipelined tasks.
    pub fn waiting_task_num(&self) -> u32 {
        self.count(TaskStatus::Pipelined)
    }

    /// Allocated-ish, Succeeded, Pipelined or Pending.
    pub fn valid_task_num(&self) -> u32 {
        self.ready_task_num() + self.count(TaskStatus::Pipelined) + self.count(TaskStatus::Pending)
    }

    /// Ready + pending BestEffort ≥ minAvailable.
    pub fn is_ready(&self) -> bool {
        i64::from(self.ready_task_num() + self.pending_best_effort) >= i64::from(self.min_available)
    }

    /// Waiting + ready + pending BestEffort ≥ minAvailable.
    pub fn is_pipelined(&self) -> bool {
        i64::from(self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort)
            >= i64::from(self.min_available)
    }

    /// Waiting + ready < minAvailable.
    pub fn is_starving(&self) -> bool {
        i64::from(self.waiting_task_num() + self.ready_task_num()) < i64::from(self.min_available)
    }

    /// Not admitted yet.
    pub fn is_pending(&self) -> bool {
        self.phase == PgPhase::Pending
    }

    /// Number of tasks.
    pub fn task_num(&self) -> usize {
        self.tasks.len()
    }
}
