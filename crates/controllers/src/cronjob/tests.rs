//! Behaviour of the CronJob controller a user would notice.

use std::time::Duration;

use volcano_api::batch::{Job, JobStatus, job_phase};
use volcano_api::cronjob::{
    ConcurrencyPolicy, CronJob, CronJobSpec, CronJobStatus, SCHEDULED_TIMESTAMP_ANNOTATION,
};

use super::schedule::{Schedule, ScheduleError};
use super::sync::{job_name, sync_cron_job};
use crate::time::Instant;

/// 2026-01-01T00:00:00Z.
const T0: u64 = 1_767_225_600;

fn at(secs: u64) -> Instant {
    Instant(Duration::from_secs(T0 + secs))
}

fn cron_job(schedule: &str) -> CronJob {
    let mut cj = CronJob::new(
        "nightly",
        CronJobSpec {
            schedule: schedule.to_string(),
            ..CronJobSpec::default()
        },
    );
    cj.metadata.namespace = Some("default".into());
    cj.metadata.uid = Some("uid-1".into());
    cj.metadata.creation_timestamp = Some(at(0).to_time());
    cj
}

/// Runs the controller as a cluster would: Jobs it creates appear, and finish after `runs`.
struct World {
    cj: CronJob,
    jobs: Vec<(Job, Instant)>,
    created: usize,
}

impl World {
    fn new(cj: CronJob) -> Self {
        World {
            cj,
            jobs: Vec::new(),
            created: 0,
        }
    }

    /// Reconciles once at `now`, with Jobs lasting `runs`.
    fn step(&mut self, now: Instant, runs: Duration) -> super::CronJobSync {
        for (j, started) in &mut self.jobs {
            if now.since(*started) >= runs {
                let mut st = JobStatus::default();
                st.state.phase = job_phase::COMPLETED.to_string();
                st.state.last_transition_time = Some(started.after(runs).to_time());
                j.status = Some(st);
            }
        }
        let refs: Vec<&Job> = self.jobs.iter().map(|(j, _)| j).collect();
        let out = sync_cron_job(&self.cj, &refs, now);
        self.jobs
            .retain(|(j, _)| !out.delete.contains(j.metadata.name.as_ref().unwrap()));
        for j in &out.create {
            let mut j = j.clone();
            j.metadata.creation_timestamp = Some(now.to_time());
            self.jobs.push((j, now));
            self.created += 1;
        }
        if let Some(s) = &out.status {
            self.cj.status = Some(s.clone());
        }
        out
    }

    /// Drives the controller by its own wake-ups until `end`.
    fn run_until(&mut self, end: Instant, runs: Duration) {
        let mut now = at(0);
        while now <= end {
            let out = self.step(now, runs);
            // A Job finishing also wakes the controller, as its watch event would.
            let finish = self
                .jobs
                .iter()
                .filter(|(j, _)| j.status.is_none())
                .map(|(_, s)| s.after(runs))
                .min();
            let next = [out.requeue_at, finish].into_iter().flatten().min();
            match next {
                Some(n) if n > now => now = n,
                _ => break,
            }
        }
    }
}

#[test]
fn bad_schedules_are_refused_with_the_reason() {
    assert!(matches!(
        Schedule::parse("every minute", None),
        Err(ScheduleError::Unparseable { .. })
    ));
    assert!(matches!(
        Schedule::parse("* * * *", None),
        Err(ScheduleError::Unparseable { .. })
    ));
    assert!(matches!(
        Schedule::parse("0 * * * * *", None),
        Err(ScheduleError::Unparseable { .. })
    ));
    assert!(matches!(
        Schedule::parse("0 0 31 2 *", None),
        Err(ScheduleError::NeverDue { .. })
    ));
    assert!(matches!(
        Schedule::parse("* * * * *", Some("Mars/Olympus")),
        Err(ScheduleError::UnknownTimeZone { .. })
    ));
    assert!(Schedule::parse("@hourly", None).is_ok());
    assert!(Schedule::parse("*/5 9-17 * * MON-FRI", None).is_ok());
}

#[test]
fn an_invalid_schedule_is_a_warning_event_and_creates_nothing() {
    let out = sync_cron_job(&cron_job("61 * * * *"), &[], at(3600));
    assert!(out.create.is_empty());
    assert_eq!(out.events[0].reason, "InvalidSchedule");
    assert_eq!(out.requeue_at, None);
    let mut cj = cron_job("* * * * *");
    cj.spec.time_zone = Some("Nowhere/Town".into());
    let out = sync_cron_job(&cj, &[], at(3600));
    assert!(out.create.is_empty());
    assert_eq!(out.events[0].reason, "InvalidTimeZone");
}

#[test]
fn time_zones_shift_the_start_times() {
    // 09:00 in Tokyo is 00:00 UTC.
    let tokyo = Schedule::parse("0 9 * * *", Some("Asia/Tokyo")).unwrap();
    assert_eq!(tokyo.next(at(1)), Some(at(86_400)));
    let prefixed = Schedule::parse("CRON_TZ=Asia/Tokyo 0 9 * * *", Some("UTC")).unwrap();
    assert_eq!(prefixed.next(at(1)), Some(at(86_400)));
    let tz = Schedule::parse("TZ=America/New_York 0 0 * * *", None).unwrap();
    // Midnight in New York in January is 05:00 UTC.
    assert_eq!(tz.next(at(0)), Some(at(5 * 3600)));
    let utc = Schedule::parse("0 9 * * *", None).unwrap();
    assert_eq!(utc.next(at(0)), Some(at(9 * 3600)));
}

#[test]
fn every_counts_from_the_last_start_in_whole_seconds_as_go_cron_does() {
    let every = Schedule::parse("@every 90m", None).unwrap();
    assert_eq!(every.next(at(0)), Some(at(5400)));
    // From a time with a fraction of a second, the fraction is dropped first.
    let mid = Instant(Duration::from_millis((T0 + 10) * 1000 + 700));
    assert_eq!(every.next(mid), Some(at(10 + 5400)));
    let tiny = Schedule::parse("@every 200ms", None).unwrap();
    assert_eq!(tiny.next(at(0)), Some(at(1)), "never less than a second");
    assert!(matches!(
        Schedule::parse("@every often", None),
        Err(ScheduleError::Unparseable { .. })
    ));
    assert!(matches!(
        Schedule::parse("@every5m", None),
        Err(ScheduleError::Unparseable { .. })
    ));
    // A CronJob on @every 30m starts a Job 30 minutes after its creation.
    let out = sync_cron_job(&cron_job("@every 30m"), &[], at(1800));
    assert_eq!(out.create.len(), 1, "{:?}", out.events);
}

#[test]
fn a_prefixed_schedule_warns_that_time_zone_is_ignored() {
    let mut cj = cron_job("CRON_TZ=Asia/Tokyo * * * * *");
    cj.spec.time_zone = Some("Nowhere/Town".into());
    let out = sync_cron_job(&cj, &[], at(90));
    assert_eq!(out.events[0].reason, "UnsupportedSchedule");
    assert_eq!(out.create.len(), 1);
}

#[test]
fn a_due_run_creates_a_job_named_for_its_minute_owned_and_annotated() {
    let mut cj = cron_job("*/10 * * * *");
    cj.spec.time_zone = Some("Asia/Tokyo".into());
    cj.spec.job_template.metadata.labels = Some([("team".to_string(), "a".to_string())].into());
    let out = sync_cron_job(&cj, &[], at(601));
    assert_eq!(out.create.len(), 1);
    let job = &out.create[0];
    let name = format!("nightly-{}", (T0 + 600) / 60);
    assert_eq!(job.metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(job_name("nightly", at(600)), name);
    assert_eq!(job.metadata.namespace.as_deref(), Some("default"));
    let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("CronJob", "uid-1")
    );
    assert_eq!(owner.controller, Some(true));
    assert_eq!(
        job.metadata.annotations.as_ref().unwrap()[SCHEDULED_TIMESTAMP_ANNOTATION],
        "2026-01-01T09:10:00+09:00"
    );
    assert_eq!(job.metadata.labels.as_ref().unwrap()["team"], "a");
    let status = out.status.unwrap();
    assert_eq!(status.active.len(), 1);
    assert_eq!(status.last_schedule_time, Some(at(600).to_time()));
    // The next look is just after the next start time.
    assert_eq!(
        out.requeue_at,
        Some(at(1200).after(Duration::from_millis(100)))
    );
}

#[test]
fn nothing_is_due_before_the_first_start_time() {
    let out = sync_cron_job(&cron_job("0 * * * *"), &[], at(59));
    assert!(out.create.is_empty() && out.status.is_none());
    assert_eq!(
        out.requeue_at,
        Some(at(3600).after(Duration::from_millis(100)))
    );
}

#[test]
fn allow_over_an_hour_every_minute_creates_sixty_jobs() {
    let mut w = World::new(cron_job("* * * * *"));
    // Runs of 150 s overlap; each minute still gets its own.
    w.run_until(at(3601), Duration::from_secs(150));
    assert_eq!(w.created, 60);
    assert_eq!(w.cj.status.as_ref().unwrap().active.len(), 3);
}

#[test]
fn forbid_skips_starts_while_a_run_is_active_and_takes_the_missed_one_late() {
    let mut cj = cron_job("* * * * *");
    cj.spec.concurrency_policy = Some(ConcurrencyPolicy::Forbid);
    let mut w = World::new(cj);
    // Each run lasts 90 s: one starts at 1:00 and ends at 2:30, when the skipped 2:00 start
    // is taken late; that one ends at 4:00, just when the 4:00 start is due: a run every 90 s.
    w.run_until(at(3601), Duration::from_secs(90));
    assert_eq!(w.created, 40);
    assert!(w.jobs.iter().filter(|(j, _)| j.status.is_none()).count() <= 1);
}

#[test]
fn forbid_with_a_deadline_drops_late_starts() {
    let mut cj = cron_job("* * * * *");
    cj.spec.concurrency_policy = Some(ConcurrencyPolicy::Forbid);
    cj.spec.starting_deadline_seconds = Some(10);
    let mut w = World::new(cj);
    // A 90 s run ends 30 s after the next start, past its 10 s deadline: that start is lost
    // and the run after it starts on time, so one run every two minutes, each on a minute.
    w.run_until(at(3600), Duration::from_secs(90));
    assert_eq!(w.created, 30);
    for (_, started) in &w.jobs {
        assert_eq!(started.0.as_secs() % 60, 0);
    }
}

#[test]
fn replace_deletes_the_active_run() {
    let mut cj = cron_job("* * * * *");
    cj.spec.concurrency_policy = Some(ConcurrencyPolicy::Replace);
    let mut w = World::new(cj);
    w.step(at(60), Duration::from_secs(600));
    let out = w.step(at(120), Duration::from_secs(600));
    assert_eq!(out.delete, vec![job_name("nightly", at(60))]);
    assert_eq!(out.create.len(), 1);
    assert_eq!(out.status.unwrap().active.len(), 1);
}

#[test]
fn a_suspended_cron_job_starts_nothing_and_resumes_without_backfill_past_the_deadline() {
    let mut cj = cron_job("* * * * *");
    cj.spec.suspend = Some(true);
    let out = sync_cron_job(&cj, &[], at(600));
    assert!(out.create.is_empty());
    assert_eq!(out.requeue_at, None);
    cj.spec.suspend = Some(false);
    let out = sync_cron_job(&cj, &[], at(600));
    // Only the most recent missed start runs, once.
    assert_eq!(out.create.len(), 1);
    assert_eq!(
        out.create[0].metadata.name.as_deref(),
        Some(job_name("nightly", at(600)).as_str())
    );
}

#[test]
fn too_many_missed_starts_is_a_warning() {
    let out = sync_cron_job(&cron_job("* * * * *"), &[], at(200 * 60));
    assert!(out.events.iter().any(|e| e.reason == "TooManyMissedTimes"));
    assert_eq!(out.create.len(), 1);
    let mut cj = cron_job("* * * * *");
    cj.spec.starting_deadline_seconds = Some(120);
    let out = sync_cron_job(&cj, &[], at(200 * 60));
    assert!(!out.events.iter().any(|e| e.reason == "TooManyMissedTimes"));
}

#[test]
fn history_limits_delete_the_oldest_finished_jobs() {
    let mut cj = cron_job("* * * * *");
    cj.spec.successful_jobs_history_limit = Some(2);
    let mut w = World::new(cj);
    w.run_until(at(601), Duration::from_secs(30));
    assert_eq!(w.created, 10);
    let mut kept: Vec<_> = w
        .jobs
        .iter()
        .map(|(j, _)| j.metadata.name.clone().unwrap())
        .collect();
    kept.sort();
    // The run of minute 10 is active, the two before it are kept.
    assert_eq!(kept, [8, 9, 10].map(|m| job_name("nightly", at(m * 60))));
    let status: CronJobStatus = w.cj.status.clone().unwrap();
    assert_eq!(
        status.last_successful_time,
        Some(at(9 * 60 + 30).after(Duration::from_millis(100)).to_time())
    );
}

#[test]
fn failed_jobs_keep_one_by_default() {
    let cj = cron_job("* * * * *");
    let mut jobs = Vec::new();
    for m in 1..=3u64 {
        let mut j =
            super::sync::job_from_template(&cj, &job_name("nightly", at(m * 60)), at(m * 60));
        j.metadata.creation_timestamp = Some(at(m * 60).to_time());
        let mut st = JobStatus::default();
        st.state.phase = job_phase::FAILED.to_string();
        j.status = Some(st);
        jobs.push(j);
    }
    let refs: Vec<&Job> = jobs.iter().collect();
    let out = sync_cron_job(&cj, &refs, at(3 * 60 + 1));
    assert_eq!(
        out.delete,
        vec![job_name("nightly", at(60)), job_name("nightly", at(120))]
    );
}

#[test]
fn jobs_of_others_are_ignored() {
    let cj = cron_job("0 0 1 1 *");
    let mut other = cron_job("* * * * *");
    other.metadata.uid = Some("uid-2".into());
    let mut j = super::sync::job_from_template(&other, "x", at(0));
    j.status = Some(JobStatus::default());
    let out = sync_cron_job(&cj, &[&j], at(60));
    assert!(out.status.is_none());
}
