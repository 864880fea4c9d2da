//! `batch.volcano.sh/v1alpha1`: the Volcano Job.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolumeClaimSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::scheduling::NetworkTopologySpec;

/// A batch job made of tasks, each a set of identical pods, scheduled as one gang.
// Each `printcolumn(...)` names the same keys (`type_`, ...): not a duplicate, which clippy
// cannot tell.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "batch.volcano.sh",
    version = "v1alpha1",
    kind = "Job",
    namespaced,
    status = "JobStatus",
    doc = "A Volcano batch job: tasks of pods scheduled as one gang.",
    shortname = "vcjob",
    shortname = "vj",
    printcolumn(name = "STATUS", type_ = "string", json_path = ".status.state.phase"),
    printcolumn(
        name = "minAvailable",
        type_ = "integer",
        json_path = ".status.minAvailable"
    ),
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
pub struct JobSpec {
    /// Scheduler of the task pods (default `volcano`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 63))]
    pub scheduler_name: String,
    /// Gang size; defaults to the sum of the tasks' minimums.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_available: Option<i32>,
    /// The tasks; at least one.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub tasks: Vec<TaskSpec>,
    /// Job-level lifecycle policies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<LifecyclePolicy>,
    /// Controller plugins (`svc`, `env`, `ssh`) with their arguments.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plugins: BTreeMap<String, Vec<String>>,
    /// Queue of the job (default `default`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253), regex(pattern = crate::schema::DNS1123_SUBDOMAIN))]
    pub queue: String,
    /// Whole-job retries before the job fails (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_retry: Option<i32>,
    /// Seconds after finishing before the job is garbage-collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub ttl_seconds_after_finished: Option<i32>,
    /// Priority class copied to the PodGroup and to pods without their own.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253), regex(pattern = crate::schema::DNS1123_SUBDOMAIN))]
    pub priority_class_name: String,
    /// The job completes as soon as this many pods succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_success: Option<i32>,
    /// Volumes mounted into every container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<VolumeSpec>,
    /// The user's estimate of how long the job runs, as a Go duration (`1h30m`). Kept, not
    /// used by volcano-rs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_estimate: Option<String>,
    /// Network-topology constraint of the whole job (not used by volcano-rs yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_topology: Option<NetworkTopologySpec>,
}

/// One task of a Job: `replicas` pods from one template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskSpec {
    /// Task name, unique within the job.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 63), regex(pattern = crate::schema::DNS1123_LABEL))]
    pub name: String,
    /// Number of pods.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub replicas: i32,
    /// Minimum pods of this task in the gang (default `replicas`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_available: Option<i32>,
    /// The pod template.
    #[serde(default)]
    pub template: PodTemplateSpec,
    /// Task-level lifecycle policies, checked before the job's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<LifecyclePolicy>,
    /// Restarts before the task counts as failed (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_retry: Option<i32>,
    /// Tasks that must be ready before this one's pods are created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<DependsOn>,
    /// NUMA topology policy of the task's pods (not used by volcano-rs yet).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "crate::schema::topology_policy")]
    pub topology_policy: String,
    /// Division of the task's pods into partitions, each placed as a gang of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_policy: Option<PartitionPolicySpec>,
}

/// How a task's pods are divided into partitions placed close together.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartitionPolicySpec {
    /// Number of partitions; times `partitionSize` it should equal `replicas`.
    #[schemars(range(min = 1))]
    pub total_partitions: i32,
    /// Pods per partition.
    #[schemars(range(min = 1))]
    pub partition_size: i32,
    /// Network-topology constraint of each partition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_topology: Option<NetworkTopologySpec>,
    /// Fewest partitions the task needs to start.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(range(min = 0))]
    pub min_partitions: i32,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// Task dependencies.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependsOn {
    /// Names of the tasks depended on.
    #[serde(default)]
    pub name: Vec<String>,
    /// `any` or `all` (default `all`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub iteration: String,
}

/// What to do when an event happens or a pod exits with a code.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LifecyclePolicy {
    /// The action (`RestartJob`, `AbortJob`, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub action: String,
    /// A single triggering event.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "crate::bus::event_schema")]
    pub event: String,
    /// Triggering events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::bus::events_schema")]
    pub events: Vec<String>,
    /// Triggering non-zero exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Delay before acting (`10m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
}

/// A volume mounted into every container of the job.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeSpec {
    /// Mount path.
    #[schemars(length(min = 1), regex(pattern = r"^[^:]+$"))]
    pub mount_path: String,
    /// Existing claim to mount.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253))]
    pub volume_claim_name: String,
    /// Claim to create (a PersistentVolumeClaim spec, kept as written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<PersistentVolumeClaimSpec>")]
    pub volume_claim: Option<serde_json::Value>,
}

/// Observed state of a Job, written by the job controller only.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    /// Current phase.
    #[serde(default)]
    pub state: JobState,
    /// Gang size in force.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub min_available: i32,
    /// Pending pods.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub pending: i32,
    /// Running pods.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub running: i32,
    /// Succeeded pods.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub succeeded: i32,
    /// Failed pods.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub failed: i32,
    /// Pods being deleted.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub terminating: i32,
    /// Pods in an unknown phase.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub unknown: i32,
    /// Bumped on every whole-job kill.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub version: i32,
    /// Whole-job retries so far.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub retry_count: i32,
    /// Pod counts per task and pod phase.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub task_status_count: BTreeMap<String, TaskState>,
    /// Resources created by controller plugins (`plugin-svc: svc`), so they are created once.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub controlled_resources: BTreeMap<String, String>,
    /// How long the job ran, as a Go duration; written by Volcano's controller, kept here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_duration: Option<String>,
    /// One entry per phase, newest last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<JobCondition>,
}

/// Pod counts of one task by pod phase.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskState {
    /// Pod phase (`Running`, `Pending`, ...) to number of pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub phase: BTreeMap<String, i32>,
}

/// Job phases (`status.state.phase`).
pub mod job_phase {
    /// Waiting for admission or for pods to start.
    pub const PENDING: &str = "Pending";
    /// Being aborted: pods are killed.
    pub const ABORTING: &str = "Aborting";
    /// Aborted; resumable.
    pub const ABORTED: &str = "Aborted";
    /// At least `minAvailable` pods run.
    pub const RUNNING: &str = "Running";
    /// Pods are killed before the job starts again.
    pub const RESTARTING: &str = "Restarting";
    /// Being completed: remaining pods are killed.
    pub const COMPLETING: &str = "Completing";
    /// Finished successfully.
    pub const COMPLETED: &str = "Completed";
    /// Being terminated: pods are killed.
    pub const TERMINATING: &str = "Terminating";
    /// Terminated by a policy or a user.
    pub const TERMINATED: &str = "Terminated";
    /// Finished unsuccessfully.
    pub const FAILED: &str = "Failed";

    /// Whether a job in this phase is finished (and subject to `ttlSecondsAfterFinished`).
    pub fn is_finished(phase: &str) -> bool {
        matches!(phase, COMPLETED | FAILED | TERMINATED)
    }

    /// The schema of a Job phase: one of these.
    pub(crate) fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::schema::string_enum(&[
            PENDING,
            ABORTING,
            ABORTED,
            RUNNING,
            RESTARTING,
            COMPLETING,
            COMPLETED,
            TERMINATING,
            TERMINATED,
            FAILED,
        ])
    }
}

/// Job phase with reason.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobState {
    /// `Pending`, `Running`, `Completed`, ...; omitted while empty, as Volcano omits it (the
    /// schema allows only the phase names).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "job_phase::schema")]
    pub phase: String,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable explanation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the phase last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// A Job condition: when the job entered a phase.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobCondition {
    /// The phase entered.
    pub status: String,
    /// When.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}
