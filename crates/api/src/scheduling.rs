//! `scheduling.volcano.sh/v1beta1`: PodGroup and Queue.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Kubernetes resource list (`cpu: 2`, `memory: 4Gi`, `nvidia.com/gpu: 1`).
pub type ResourceList = BTreeMap<String, Quantity>;

/// A gang: the set of pods that must be scheduled together.
// Each `printcolumn(...)` names the same keys (`type_`, ...): not a duplicate, which clippy
// cannot tell.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "scheduling.volcano.sh",
    version = "v1beta1",
    kind = "PodGroup",
    namespaced,
    status = "PodGroupStatus",
    doc = "A PodGroup: pods scheduled together, as one gang.",
    shortname = "pg",
    shortname = "podgroup-v1beta1",
    printcolumn(name = "STATUS", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "minMember", type_ = "integer", json_path = ".spec.minMember"),
    printcolumn(name = "RUNNINGS", type_ = "integer", json_path = ".status.running"),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(
        name = "QUEUE",
        type_ = "string",
        json_path = ".spec.queue",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSpec {
    /// Minimum number of pods that must be schedulable together (gang size).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub min_member: i32,
    /// Minimum number of pods per task role.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub min_task_member: BTreeMap<String, i32>,
    /// Queue the group is scheduled in; empty means the default queue.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253), regex(pattern = crate::schema::DNS1123_SUBDOMAIN))]
    pub queue: String,
    /// Priority class of the group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253))]
    pub priority_class_name: String,
    /// Resources the gang needs to start, checked at admission (enqueue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_resources: Option<ResourceList>,
    /// How close in the network (HyperNode tiers) the gang's pods must be placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_topology: Option<NetworkTopologySpec>,
    /// Sub-groups of the gang's pods, each a gang of its own that may have its own network
    /// topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_group_policy: Option<Vec<SubGroupPolicySpec>>,
}

/// How far apart, in the network topology (HyperNode tiers), a gang's pods may be placed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkTopologySpec {
    /// `hard` (never cross the limit) or `soft` (prefer not to); `hard` when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "crate::schema::network_topology_mode")]
    pub mode: String,
    /// Highest tier the pods may span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub highest_tier_allowed: Option<i64>,
    /// Name of the highest tier the pods may span (instead of its number).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253))]
    pub highest_tier_name: String,
}

/// A sub-group of a PodGroup's pods, matched by labels, with its own gang size.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubGroupPolicySpec {
    /// Name of the policy.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253))]
    pub name: String,
    /// Pods per sub-group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub sub_group_size: Option<i32>,
    /// Fewest sub-groups the gang needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_sub_groups: Option<i32>,
    /// Pods the policy applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Label keys whose values split the pods into sub-groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_label_keys: Vec<String>,
    /// Network-topology constraint of each sub-group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_topology: Option<NetworkTopologySpec>,
}

/// Observed state of a PodGroup, written by the scheduler only.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupStatus {
    /// `Pending`, `Inqueue`, `Running`, `Unknown` or `Completed`; empty counts as Pending.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "phase::schema")]
    pub phase: String,
    /// At most one condition per type (`Unschedulable`, `Scheduled`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<PodGroupCondition>,
    /// Number of running pods.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub running: i32,
    /// Number of succeeded pods.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub succeeded: i32,
    /// Number of failed pods.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub failed: i32,
}

/// One PodGroup condition.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupCondition {
    /// `Unschedulable` or `Scheduled`.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default)]
    pub status: String,
    /// The scheduling session that set the condition. Volcano spells the key `transitionID`;
    /// `transitionId` is still read, as earlier volcano-rs wrote it.
    #[serde(
        default,
        rename = "transitionID",
        alias = "transitionId",
        skip_serializing_if = "String::is_empty"
    )]
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
    doc = "A Queue: PodGroups sharing cluster resources by weight, capability and guarantee.",
    shortname = "q",
    shortname = "queue-v1beta1",
    printcolumn(name = "PARENT", type_ = "string", json_path = ".spec.parent")
)]
#[serde(rename_all = "camelCase")]
pub struct QueueSpec {
    /// Share weight, 1..=65535 (default 1).
    #[serde(default = "default_weight")]
    #[schemars(range(min = 1, max = 65535))]
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
    #[schemars(length(max = 253), regex(pattern = crate::schema::DNS1123_SUBDOMAIN))]
    pub parent: String,
    /// Higher is scheduled first and reclaimed last.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub priority: i32,
    /// `fifo` or `traverse`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "crate::schema::dequeue_strategy")]
    pub dequeue_strategy: String,
    /// Node-group affinity (not used by volcano-rs yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<QueueAffinity>")]
    pub affinity: Option<serde_json::Value>,
    /// Multi-cluster settings (not used by volcano-rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<ExtendCluster>>")]
    pub extend_clusters: Option<serde_json::Value>,
    /// Queue type (not used by volcano-rs).
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253))]
    pub type_: String,
}

/// Node groups a queue's pods must or should (not) run in. Described for the schema only:
/// volcano-rs keeps `affinity` as written and does not act on it yet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueAffinity {
    /// Node groups to run in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_group_affinity: Option<NodeGroupAffinity>,
    /// Node groups to stay out of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_group_anti_affinity: Option<NodeGroupAffinity>,
}

/// Names of node groups, as hard and soft rules.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct NodeGroupAffinity {
    /// Node groups the rule must hold for.
    #[serde(
        default,
        rename = "requiredDuringSchedulingIgnoredDuringExecution",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub required: Vec<String>,
    /// Node groups the rule should hold for.
    #[serde(
        default,
        rename = "preferredDuringSchedulingIgnoredDuringExecution",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub preferred: Vec<String>,
}

/// A cluster a queue extends to (multi-cluster scheduling, not used by volcano-rs).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtendCluster {
    /// Cluster name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Share weight of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
    /// Capacity of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<ResourceList>,
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
/// scheduler. The PodGroup counts and `reservation` are Volcano's; volcano-rs keeps what is
/// there and writes none of them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueStatus {
    /// `Open`, `Closed`, `Closing` or `Unknown`; empty counts as Open.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "queue_state::schema")]
    pub state: String,
    /// Resources of the queue's pods in an allocated status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated: Option<ResourceList>,
    /// PodGroups of the queue in phase Unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub unknown: Option<i32>,
    /// PodGroups of the queue in phase Pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub pending: Option<i32>,
    /// PodGroups of the queue in phase Running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub running: Option<i32>,
    /// PodGroups of the queue in phase Inqueue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub inqueue: Option<i32>,
    /// PodGroups of the queue in phase Completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub completed: Option<i32>,
    /// Nodes locked for the queue and their idle resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<Reservation>,
}

/// Nodes locked for a queue (Volcano's reservation), kept as written.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reservation {
    /// Locked nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// Idle resources of the locked nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceList>,
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

    /// The schema of a PodGroup phase: one of these.
    pub(crate) fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::schema::string_enum(&[PENDING, RUNNING, UNKNOWN, INQUEUE, COMPLETED])
    }
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

    /// The schema of a Queue state: one of these.
    pub(crate) fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::schema::string_enum(&[OPEN, CLOSED, CLOSING, UNKNOWN])
    }
}
