//! One reconcile of a CronJob.

use std::collections::BTreeMap;
use std::time::Duration;

use volcano_api::batch::{Job, job_phase};
use volcano_api::cronjob::{
    ConcurrencyPolicy, CronJob, CronJobStatus, SCHEDULED_TIMESTAMP_ANNOTATION,
};
use volcano_api::event::EventType;
use volcano_api::k8s_openapi::api::core::v1::ObjectReference;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::schedule::{self, Missed, Schedule};
use crate::time::Instant;

/// How long after a start time the controller looks again, so the time has surely passed.
const NEXT_SCHEDULE_DELTA: Duration = Duration::from_millis(100);

/// An event to record on the CronJob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronJobEvent {
    /// Normal or Warning.
    pub type_: EventType,
    /// Kubernetes' reason (`SuccessfulCreate`, `TooManyMissedTimes`, ...).
    pub reason: &'static str,
    /// What happened.
    pub message: String,
}

/// What one reconcile asks for.
#[derive(Debug, Clone, Default)]
pub struct CronJobSync {
    /// Jobs to create.
    pub create: Vec<Job>,
    /// Names of Jobs (in the CronJob's namespace) to delete.
    pub delete: Vec<String>,
    /// The new status, when it changed.
    pub status: Option<CronJobStatus>,
    /// Events on the CronJob.
    pub events: Vec<CronJobEvent>,
    /// When to reconcile again (the next start time), if ever.
    pub requeue_at: Option<Instant>,
}

impl CronJobSync {
    fn event(&mut self, type_: EventType, reason: &'static str, message: String) {
        self.events.push(CronJobEvent {
            type_,
            reason,
            message,
        });
    }
}

/// Whether `job` is controlled by `cron_job` (by UID, or by name when the CronJob has none yet).
pub fn is_owned_by(job: &Job, cron_job: &CronJob) -> bool {
    let uid = cron_job.metadata.uid.as_deref().unwrap_or("");
    let name = cron_job.metadata.name.as_deref().unwrap_or("");
    job.metadata.namespace == cron_job.metadata.namespace
        && job.metadata.owner_references.iter().flatten().any(|o| {
            o.controller == Some(true)
                && o.kind == "CronJob"
                && if uid.is_empty() {
                    o.name == name
                } else {
                    o.uid == uid
                }
        })
}

/// The name of the Job for `scheduled`: `<cronjob>-<minutes since the epoch>`, as Volcano names it.
pub fn job_name(cron_job_name: &str, scheduled: Instant) -> String {
    format!("{cron_job_name}-{}", scheduled.0.as_secs() / 60)
}

fn phase(job: &Job) -> &str {
    job.status.as_ref().map_or("", |s| s.state.phase.as_str())
}

fn finished(job: &Job) -> bool {
    job_phase::is_finished(phase(job))
}

fn reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch.volcano.sh/v1alpha1".to_string()),
        kind: Some("Job".to_string()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

fn creation(job: &Job) -> Option<Instant> {
    job.metadata
        .creation_timestamp
        .as_ref()
        .map(Instant::from_time)
}

/// Reconciles `cron_job` at `now`, given every Job in its namespace (those it does not own are
/// ignored).
pub fn sync_cron_job(cron_job: &CronJob, jobs: &[&Job], now: Instant) -> CronJobSync {
    let mut out = CronJobSync::default();
    if cron_job.metadata.deletion_timestamp.is_some() {
        return out;
    }
    let name = cron_job.metadata.name.clone().unwrap_or_default();
    let owned: Vec<&Job> = jobs
        .iter()
        .copied()
        .filter(|j| is_owned_by(j, cron_job))
        .collect();
    let old = cron_job.status.clone().unwrap_or_default();
    let mut status = old.clone();
    track_active(&mut status, &owned, now, &mut out);
    clean_history(cron_job, &owned, &mut out);
    let spec = &cron_job.spec;
    let result = if spec.suspended() {
        None
    } else {
        schedule_next(cron_job, &name, &owned, &mut status, now, &mut out)
    };
    out.requeue_at = result;
    if status != old {
        out.status = Some(status);
    }
    out
}

/// Moves finished Jobs out of the active list and adopts running ones missing from it.
fn track_active(status: &mut CronJobStatus, owned: &[&Job], now: Instant, out: &mut CronJobSync) {
    let in_active = |status: &CronJobStatus, j: &Job| {
        status
            .active
            .iter()
            .any(|a| a.name == j.metadata.name && a.namespace == j.metadata.namespace)
    };
    for j in owned {
        let job_name = j.metadata.name.clone().unwrap_or_default();
        let active = in_active(status, j);
        if !finished(j) {
            if !active {
                status.active.push(reference(j));
            }
            continue;
        }
        if active {
            status
                .active
                .retain(|a| a.name.as_deref() != Some(job_name.as_str()));
            out.event(
                EventType::Normal,
                "SawCompletedJob",
                format!("Saw completed job: {job_name}, condition: {}", phase(j)),
            );
        }
        if phase(j) == job_phase::COMPLETED {
            let done = j
                .status
                .as_ref()
                .and_then(|s| s.state.last_transition_time.as_ref())
                .map_or(now, Instant::from_time);
            let last = status.last_successful_time.as_ref().map(Instant::from_time);
            if last.is_none_or(|l| l < done) {
                status.last_successful_time = Some(done.to_time());
            }
        }
    }
    // An active entry whose Job is gone (deleted by hand) is dropped.
    let before = status.active.len();
    status.active.retain(|a| {
        owned
            .iter()
            .any(|j| j.metadata.name == a.name && j.metadata.namespace == a.namespace)
    });
    if status.active.len() != before {
        out.event(
            EventType::Normal,
            "MissingJob",
            "Active job went missing".to_string(),
        );
    }
}

/// Deletes the oldest finished Jobs beyond the history limits.
fn clean_history(cron_job: &CronJob, owned: &[&Job], out: &mut CronJobSync) {
    let spec = &cron_job.spec;
    let (mut succeeded, mut failed): (Vec<&Job>, Vec<&Job>) = owned
        .iter()
        .copied()
        .filter(|j| finished(j))
        .partition(|j| phase(j) == job_phase::COMPLETED);
    for (jobs, limit) in [
        (&mut succeeded, spec.successful_jobs_history_limit()),
        (&mut failed, spec.failed_jobs_history_limit()),
    ] {
        let keep = usize::try_from(limit).unwrap_or(0);
        if jobs.len() <= keep {
            continue;
        }
        // Oldest first; Jobs without a creation time last, as Kubernetes sorts them.
        jobs.sort_by(|a, b| {
            (creation(a).is_none(), creation(a), &a.metadata.name).cmp(&(
                creation(b).is_none(),
                creation(b),
                &b.metadata.name,
            ))
        });
        for j in &jobs[..jobs.len() - keep] {
            let job_name = j.metadata.name.clone().unwrap_or_default();
            out.event(
                EventType::Normal,
                "SuccessfulDelete",
                format!("Deleted job {job_name}"),
            );
            out.delete.push(job_name);
        }
    }
}

/// Starts the due run, if any, and says when the next one is due.
fn schedule_next(
    cron_job: &CronJob,
    name: &str,
    owned: &[&Job],
    status: &mut CronJobStatus,
    now: Instant,
    out: &mut CronJobSync,
) -> Option<Instant> {
    let spec = &cron_job.spec;
    if schedule::has_zone_prefix(&spec.schedule) {
        out.event(
            EventType::Warning,
            "UnsupportedSchedule",
            format!(
                "CRON_TZ or TZ in the schedule {:?} is not officially supported; spec.timeZone is ignored",
                spec.schedule
            ),
        );
    } else if let Some(zone) = &spec.time_zone
        && let Err(e) = schedule::time_zone(zone)
    {
        out.event(EventType::Warning, "InvalidTimeZone", e.to_string());
        return None;
    }
    let sched = match Schedule::parse(&spec.schedule, spec.time_zone.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            out.event(EventType::Warning, "InvalidSchedule", e.to_string());
            return None;
        }
    };
    let created = cron_job
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(now, Instant::from_time);
    let last = status.last_schedule_time.as_ref().map(Instant::from_time);
    let earliest = last.unwrap_or(created);
    let due = schedule::most_recent(&sched, earliest, spec.starting_deadline_seconds, now);
    let wake = |status: &CronJobStatus| next_wake(&sched, status, created, now);
    let Some(scheduled) = due.most_recent else {
        return wake(status);
    };
    if due.missed == Missed::Many {
        out.event(
            EventType::Warning,
            "TooManyMissedTimes",
            "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew".to_string(),
        );
    }
    let job_name = job_name(name, scheduled);
    let taken = status
        .active
        .iter()
        .any(|a| a.name.as_deref() == Some(job_name.as_str()))
        || last == Some(scheduled);
    if taken {
        return wake(status);
    }
    match spec.concurrency_policy() {
        ConcurrencyPolicy::Forbid if !status.active.is_empty() => {
            // Not started, not recorded: if the active run ends before the deadline, the
            // missed start is taken late, as Kubernetes does.
            return wake(status);
        }
        ConcurrencyPolicy::Replace => {
            for a in std::mem::take(&mut status.active) {
                let victim = a.name.unwrap_or_default();
                out.event(
                    EventType::Normal,
                    "SuccessfulDelete",
                    format!("Deleted job {victim}"),
                );
                out.delete.push(victim);
            }
        }
        _ => {}
    }
    match owned
        .iter()
        .find(|j| j.metadata.name.as_deref() == Some(job_name.as_str()))
    {
        // Created before, its status write lost: take it as this run.
        Some(existing) => {
            if !finished(existing) {
                status.active.push(reference(existing));
            }
        }
        None => {
            let job = job_from_template(cron_job, &job_name, scheduled);
            let mut created_ref = reference(&job);
            created_ref.uid = None;
            status.active.push(created_ref);
            out.event(
                EventType::Normal,
                "SuccessfulCreate",
                format!("Created job {job_name}"),
            );
            out.create.push(job);
        }
    }
    status.last_schedule_time = Some(scheduled.to_time());
    wake(status)
}

/// When the start after the last one taken is due, plus a little.
fn next_wake(
    sched: &Schedule,
    status: &CronJobStatus,
    created: Instant,
    now: Instant,
) -> Option<Instant> {
    let earliest = status
        .last_schedule_time
        .as_ref()
        .map_or(created, Instant::from_time);
    let due = schedule::most_recent(sched, earliest, None, now);
    let from = match (due.most_recent, due.missed) {
        (Some(t), _) => t,
        (None, Missed::None) => due.earliest,
        (None, _) => now,
    };
    sched.next(from).map(|t| t.after(NEXT_SCHEDULE_DELTA))
}

/// The Job of the run scheduled at `scheduled`: the template's labels, annotations and spec,
/// owned by the CronJob, annotated with the scheduled time in the CronJob's zone.
pub fn job_from_template(cron_job: &CronJob, job_name: &str, scheduled: Instant) -> Job {
    let template = &cron_job.spec.job_template;
    let mut annotations: BTreeMap<String, String> =
        template.metadata.annotations.clone().unwrap_or_default();
    let zone = cron_job
        .spec
        .time_zone
        .as_deref()
        .and_then(|z| schedule::time_zone(z).ok())
        .unwrap_or(jiff::tz::TimeZone::UTC);
    annotations.insert(
        SCHEDULED_TIMESTAMP_ANNOTATION.to_string(),
        rfc3339(scheduled, zone),
    );
    let owner = OwnerReference {
        api_version: "batch.volcano.sh/v1alpha1".to_string(),
        kind: "CronJob".to_string(),
        name: cron_job.metadata.name.clone().unwrap_or_default(),
        uid: cron_job.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        // Unset, as on every reference the controllers write: setting it needs `update` on
        // the owner's finalizers, which a real API server enforces and deploy/ does not grant.
        block_owner_deletion: None,
    };
    Job {
        metadata: ObjectMeta {
            name: Some(job_name.to_string()),
            namespace: cron_job.metadata.namespace.clone(),
            labels: template.metadata.labels.clone().filter(|l| !l.is_empty()),
            annotations: Some(annotations),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// Go's RFC 3339 form: `Z` for UTC, else the offset.
fn rfc3339(t: Instant, zone: jiff::tz::TimeZone) -> String {
    let zoned = t.to_time().0.to_zoned(zone);
    if zoned.offset().seconds() == 0 {
        zoned.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        zoned.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    }
}
