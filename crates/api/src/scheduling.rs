//! `scheduling.volcano.sh/v1beta1`: PodGroup and Queue.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Kubernetes resource list (`cpu: 2`, `memory: 4Gi`, `nvidia.com/gpu: 1`).
pub type ResourceList = BTreeMap<String, Quantity>;

/// A gang: the set of pods that must be scheduled together.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "scheduling.volcano.sh",
    version = "v1beta1",
    kind = "PodGroup",
    namespaced,
    status = "PodGroupStatus",
    shortname = "pg"
)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSpec {
    /// Minimum number of pods that must be schedulable together (gang size).
    #[serde(default)]
    pub min_member: i32,
    /// Minimum number of pods per task role.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub min_task_member: BTreeMap<String, i32>,
    /// Queue the group is scheduled in; empty means the default queue.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub queue: String,
    /// Priority class of the group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
    /// Resources the gang needs to start, checked at admission (enqueue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_resources: Option<ResourceList>,
    /// Network topology constraints (not supported by volcano-rs yet; rejected when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_topology: Option<serde_json::Value>,
    /// Sub-group policies (not supported by volcano-rs yet; rejected when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_group_policy: Option<serde_json::Value>,
}

/// Observed state of a PodGroup, written by the scheduler only.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupStatus {
    /// `Pending`, `Inqueue`, `Running`, `Unknown` or `Completed`; empty counts as Pending.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// At most one condition per type (`Unschedulable`, `Scheduled`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<PodGroupCondition>,
    /// Number of running pods.
    #[serde(default)]
    pub running: i32,
    /// Number of succeeded pods.
    #[serde(default)]
    pub succeeded: i32,
    /// Number of failed pods.
    #[serde(default)]
    pub failed: i32,
}

/// One PodGroup condition.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupCondition {
    /// `Unschedulable` or `Scheduled`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The scheduling session that set the condition.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub transition_id: String,
    /// When the condition last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason (`NotEnoughResources`, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable explanation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl PodGroupStatus {
    /// Among the True conditions, the one that changed last (the later one on a tie): what
    /// the PodGroup is now, as persisted, whatever stale conditions it still carries.
    pub fn newest_true_condition(&self) -> Option<&PodGroupCondition> {
        self.conditions
            .iter()
            .enumerate()
            .filter(|(_, c)| c.status == "True")
            .max_by(|(ia, a), (ib, b)| {
                let ta = a.last_transition_time.as_ref().map(|t| t.0);
                let tb = b.last_transition_time.as_ref().map(|t| t.0);
                ta.cmp(&tb).then(ia.cmp(ib))
            })
            .map(|(_, c)| c)
    }
}

/// A queue of PodGroups sharing cluster resources by weight, capability and guarantee.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "scheduling.volcano.sh",
    version = "v1beta1",
    kind = "Queue",
    status = "QueueStatus",
    shortname = "q"
)]
#[serde(rename_all = "camelCase")]
pub struct QueueSpec {
    /// Share weight, 1..=65535 (default 1).
    #[serde(default = "default_weight")]
    pub weight: i32,
    /// Hard upper bound of what the queue may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<ResourceList>,
    /// Whether other queues may reclaim this queue's resources (nil = true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaimable: Option<bool>,
    /// Resources reserved for the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guarantee: Option<Guarantee>,
    /// Resources the queue deserves (capacity plugin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deserved: Option<ResourceList>,
    /// Parent queue (hierarchy); empty means `root`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parent: String,
    /// Higher is scheduled first and reclaimed last.
    #[serde(default)]
    pub priority: i32,
    /// `fifo` or `traverse`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub dequeue_strategy: String,
    /// Node-group affinity (not used by volcano-rs yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<serde_json::Value>,
    /// Multi-cluster settings (not used by volcano-rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extend_clusters: Option<serde_json::Value>,
    /// Queue type (not used by volcano-rs).
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
}

impl Default for QueueSpec {
    fn default() -> Self {
        QueueSpec {
            weight: default_weight(),
            capability: None,
            reclaimable: None,
            guarantee: None,
            deserved: None,
            parent: String::new(),
            priority: 0,
            dequeue_strategy: String::new(),
            affinity: None,
            extend_clusters: None,
            type_: String::new(),
        }
    }
}

fn default_weight() -> i32 {
    1
}

/// Resources guaranteed to a queue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Guarantee {
    /// The guaranteed resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceList>,
}

/// Observed state of a Queue: `state` is owned by the queue controller, `allocated` by the
/// scheduler.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueStatus {
    /// `Open`, `Closed`, `Closing` or `Unknown`; empty counts as Open.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state: String,
    /// Resources of the queue's pods in an allocated status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated: Option<ResourceList>,
}

/// PodGroup phases, as strings on the wire.
pub mod phase {
    /// Not admitted yet.
    pub const PENDING: &str = "Pending";
    /// Admitted by `enqueue`; the job controller may create pods.
    pub const INQUEUE: &str = "Inqueue";
    /// At least `minMember` pods scheduled.
    pub const RUNNING: &str = "Running";
    /// Some pods running while the rest could not be scheduled this session.
    pub const UNKNOWN: &str = "Unknown";
    /// Every scheduled pod finished.
    pub const COMPLETED: &str = "Completed";
}

/// Queue states, as strings on the wire.
pub mod queue_state {
    /// Accepts and schedules work.
    pub const OPEN: &str = "Open";
    /// Accepts nothing new.
    pub const CLOSED: &str = "Closed";
    /// Closing once its PodGroups are gone.
    pub const CLOSING: &str = "Closing";
    /// State not known.
    pub const UNKNOWN: &str = "Unknown";
}
