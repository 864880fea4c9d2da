//! `batch.volcano.sh/v1alpha1` CronJob: Volcano Jobs created from a template on a cron schedule.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::batch::JobSpec;

/// The annotation a Job created by a CronJob carries: its scheduled time, RFC 3339, in the
/// CronJob's time zone.
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "volcano.sh/cronjob-scheduled-timestamp";

/// Successful Jobs kept when `successfulJobsHistoryLimit` is not set.
pub const DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT: i32 = 3;

/// Failed Jobs kept when `failedJobsHistoryLimit` is not set.
pub const DEFAULT_FAILED_JOBS_HISTORY_LIMIT: i32 = 1;

/// A Volcano Job created on a schedule, as Kubernetes' CronJob does for batch Jobs.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "batch.volcano.sh",
    version = "v1alpha1",
    kind = "CronJob",
    namespaced,
    status = "CronJobStatus",
    doc = "A Volcano CronJob: Volcano Jobs created from a template on a cron schedule.",
    shortname = "cronvcjob",
    shortname = "cronvj"
)]
#[serde(rename_all = "camelCase")]
pub struct CronJobSpec {
    /// The schedule in cron format (five fields, or `@hourly` and the like), optionally
    /// prefixed with `CRON_TZ=<zone>` or `TZ=<zone>`.
    pub schedule: String,
    /// IANA time zone of the schedule (default: UTC, the controller's zone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// A run that missed its time by more than this many seconds is skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub starting_deadline_seconds: Option<i64>,
    /// What to do when a run is due while an earlier one is still active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<ConcurrencyPolicy>,
    /// No new runs while true; runs already started go on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// The Job each run creates.
    pub job_template: JobTemplateSpec,
    /// Finished successful Jobs kept (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub successful_jobs_history_limit: Option<i32>,
    /// Finished failed Jobs kept (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub failed_jobs_history_limit: Option<i32>,
}

impl CronJobSpec {
    /// The concurrency policy, `Allow` when unset.
    pub fn concurrency_policy(&self) -> ConcurrencyPolicy {
        self.concurrency_policy.unwrap_or_default()
    }

    /// Whether new runs are held back.
    pub fn suspended(&self) -> bool {
        self.suspend.unwrap_or(false)
    }

    /// Successful Jobs kept, with the default.
    pub fn successful_jobs_history_limit(&self) -> i32 {
        self.successful_jobs_history_limit
            .unwrap_or(DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT)
    }

    /// Failed Jobs kept, with the default.
    pub fn failed_jobs_history_limit(&self) -> i32 {
        self.failed_jobs_history_limit
            .unwrap_or(DEFAULT_FAILED_JOBS_HISTORY_LIMIT)
    }
}

/// How a due run treats runs still active.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ConcurrencyPolicy {
    /// Runs may overlap.
    #[default]
    Allow,
    /// A due run is skipped while another is active.
    Forbid,
    /// The active runs are deleted and the due run replaces them.
    Replace,
}

/// The Job a CronJob creates: its metadata (labels and annotations are copied) and spec.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobTemplateSpec {
    /// Labels and annotations of the created Jobs.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The spec of the created Jobs.
    #[serde(default)]
    pub spec: JobSpec,
}

/// What the CronJob controller observed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronJobStatus {
    /// The Jobs of this CronJob still running.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active: Vec<ObjectReference>,
    /// When a Job was last scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,
    /// When a Job last completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_time: Option<Time>,
}
