//! `flow.volcano.sh/v1alpha1`: the JobTemplate (a Job spec kept for reuse) and the JobFlow (Jobs
//! made from templates, each started once the Jobs it depends on have completed).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::batch::{JobSpec, TaskState};

/// The spec of a JobTemplate: a Volcano Job spec, written where a Job's `spec` would be.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "flow.volcano.sh",
    version = "v1alpha1",
    kind = "JobTemplate",
    namespaced,
    status = "JobTemplateStatus",
    doc = "A JobTemplate: a Volcano Job spec a JobFlow creates Jobs from.",
    shortname = "jt"
)]
#[serde(transparent)]
pub struct JobTemplateSpec(pub JobSpec);

/// Observed state of a JobTemplate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobTemplateStatus {
    /// The Jobs created from this template.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_depends_on_list: Vec<String>,
}

/// The spec of a JobFlow: its flows and what becomes of their Jobs once it succeeds.
// Each `printcolumn(...)` names the same keys: not a duplicate, which clippy cannot tell.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "flow.volcano.sh",
    version = "v1alpha1",
    kind = "JobFlow",
    namespaced,
    status = "JobFlowStatus",
    doc = "A JobFlow: Volcano Jobs made from JobTemplates, run in dependency order.",
    shortname = "jf",
    printcolumn(name = "Status", type_ = "string", json_path = ".status.state.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct JobFlowSpec {
    /// The flows: one Job each, made from the JobTemplate of the flow's name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<Flow>,
    /// `retain` (default) keeps the Jobs once the flow succeeds; `delete` removes them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub job_retain_policy: String,
}

/// One step of a JobFlow.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Flow {
    /// The JobTemplate's name (the Job is `<jobflow>-<name>`).
    pub name: String,
    /// The flows that must complete before this one starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<DependsOn>,
    /// Changes to the template's spec (kept; Volcano's controller does not apply it either).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<Patch>,
}

/// What a flow waits for.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependsOn {
    /// Names of the flows this one waits for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// Extra readiness checks (kept; Volcano's controller waits for `Completed` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<Probe>,
}

/// A patch of a flow's Job spec.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Patch {
    /// The spec fields to change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_spec: Option<JobSpec>,
}

/// Readiness checks of a dependency.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    /// HTTP GET checks against a task's pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http_get_list: Vec<HttpGet>,
    /// TCP connection checks against a task's pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tcp_socket_list: Vec<TcpSocket>,
    /// Task phase checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_status_list: Vec<TaskStatus>,
}

/// An HTTP GET check.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpGet {
    /// The task whose pods are checked.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_name: String,
    /// The path requested.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The port requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// A header sent with the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_header: Option<HttpHeader>,
}

/// An HTTP header.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpHeader {
    /// The header name.
    pub name: String,
    /// The header value.
    pub value: String,
}

/// A TCP connection check.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TcpSocket {
    /// The task whose pods are checked.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_name: String,
    /// The port connected to.
    pub port: i64,
}

/// A task phase check.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The task checked.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_name: String,
    /// The phase it must be in.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
}

/// Observed state of a JobFlow, written by its controller.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobFlowStatus {
    /// Jobs in phase `Pending`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_jobs: Vec<String>,
    /// Jobs in phase `Running`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running_jobs: Vec<String>,
    /// Jobs in phase `Failed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_jobs: Vec<String>,
    /// Jobs in phase `Completed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completed_jobs: Vec<String>,
    /// Jobs in phase `Terminated`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terminated_jobs: Vec<String>,
    /// Jobs in any other phase (Volcano's spelling).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub un_know_jobs: Vec<String>,
    /// Each Job's history.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_status_list: Vec<JobStatus>,
    /// Each Job's current state, by Job name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub conditions: BTreeMap<String, Condition>,
    /// The flow's phase.
    #[serde(default)]
    pub state: State,
}

/// One Job of a flow, as the flow last saw it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    /// The Job's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The Job's phase.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state: String,
    /// When the Job was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    /// When the Job stopped running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_timestamp: Option<Time>,
    /// The Job's whole-job retries.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub restart_count: i32,
    /// The phases the Job went through, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running_histories: Vec<JobRunningHistory>,
}

/// One phase a Job went through.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobRunningHistory {
    /// When the phase began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    /// When it ended; absent while it lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_timestamp: Option<Time>,
    /// The phase.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state: String,
}

/// A Job's current state, as a flow records it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The Job's phase.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// When the Job was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_time: Option<Time>,
    /// How long the Job ran, as a Go duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_duration: Option<String>,
    /// Pod counts per task and pod phase.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub task_status_count: BTreeMap<String, TaskState>,
}

/// A JobFlow's phase.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// `Pending`, `Running`, `Succeed`, `Terminating` or `Failed`; empty before the first sync.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
}

/// JobFlow phases (`status.state.phase`), in Volcano's words.
pub mod flow_phase {
    /// No Job has started running yet.
    pub const PENDING: &str = "Pending";
    /// A Job runs or has completed, none failed.
    pub const RUNNING: &str = "Running";
    /// Every flow's Job completed.
    pub const SUCCEED: &str = "Succeed";
    /// Being torn down.
    pub const TERMINATING: &str = "Terminating";
    /// A Job failed or was terminated.
    pub const FAILED: &str = "Failed";
}

/// `spec.jobRetainPolicy` values.
pub mod retain_policy {
    /// Keep the Jobs after the flow succeeds (the default).
    pub const RETAIN: &str = "retain";
    /// Delete the Jobs once the flow succeeds.
    pub const DELETE: &str = "delete";
}

/// Labels and annotations a flow's Jobs carry, valued `<namespace>.<name>`.
pub mod labels {
    /// The JobTemplate a Job was made from.
    pub const CREATED_BY_JOB_TEMPLATE: &str = "volcano.sh/createdByJobTemplate";
    /// The JobFlow a Job was made for.
    pub const CREATED_BY_JOB_FLOW: &str = "volcano.sh/createdByJobFlow";
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}
