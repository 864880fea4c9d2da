//! `batch.volcano.sh/v1alpha1`: the Volcano Job.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A batch job made of tasks, each a set of identical pods, scheduled as one gang.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "batch.volcano.sh",
    version = "v1alpha1",
    kind = "Job",
    namespaced,
    status = "JobStatus",
    shortname = "vcjob"
)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    /// Scheduler of the task pods (default `volcano`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scheduler_name: String,
    /// Gang size; defaults to the sum of the tasks' minimums.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<i32>,
    /// The tasks; at least one.
    #[serde(default)]
    pub tasks: Vec<TaskSpec>,
    /// Job-level lifecycle policies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<LifecyclePolicy>,
    /// Controller plugins (`svc`, `env`, `ssh`) with their arguments.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plugins: BTreeMap<String, Vec<String>>,
    /// Queue of the job (default `default`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub queue: String,
    /// Whole-job retries before the job fails (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retry: Option<i32>,
    /// Seconds after finishing before the job is garbage-collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
    /// Priority class copied to the PodGroup and to pods without their own.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
    /// The job completes as soon as this many pods succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_success: Option<i32>,
    /// Volumes mounted into every container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<VolumeSpec>,
}

/// One task of a Job: `replicas` pods from one template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskSpec {
    /// Task name, unique within the job.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Number of pods.
    #[serde(default)]
    pub replicas: i32,
    /// Minimum pods of this task in the gang (default `replicas`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<i32>,
    /// The pod template.
    #[serde(default)]
    pub template: PodTemplateSpec,
    /// Task-level lifecycle policies, checked before the job's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<LifecyclePolicy>,
    /// Restarts before the task counts as failed (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retry: Option<i32>,
    /// Tasks that must be ready before this one's pods are created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<DependsOn>,
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
    pub event: String,
    /// Triggering events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
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
    pub mount_path: String,
    /// Existing claim to mount.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub volume_claim_name: String,
    /// Claim to create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    pub min_available: i32,
    /// Pending pods.
    #[serde(default)]
    pub pending: i32,
    /// Running pods.
    #[serde(default)]
    pub running: i32,
    /// Succeeded pods.
    #[serde(default)]
    pub succeeded: i32,
    /// Failed pods.
    #[serde(default)]
    pub failed: i32,
    /// Pods being deleted.
    #[serde(default)]
    pub terminating: i32,
    /// Pods in an unknown phase.
    #[serde(default)]
    pub unknown: i32,
    /// Bumped on every whole-job kill.
    #[serde(default)]
    pub version: i32,
    /// Whole-job retries so far.
    #[serde(default)]
    pub retry_count: i32,
    /// Pod counts per task and pod phase.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub task_status_count: BTreeMap<String, TaskState>,
    /// Resources created by controller plugins (`plugin-svc: svc`), so they are created once.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub controlled_resources: BTreeMap<String, String>,
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
}

/// Job phase with reason.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobState {
    /// `Pending`, `Running`, `Completed`, ...
    #[serde(default)]
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
