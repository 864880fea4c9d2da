//! Volcano CronJobs over virtual time: the simulator's clock drives the CronJob controller, so
//! an hour of schedule runs in a moment and every start time is exact.

// Helpers outside #[test] functions drive the simulation; a failure there is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::metrics::SimMetrics;
use volcano_sim::simulate::SimOptions;

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n\
    status: {allocatable: {cpu: \"64\", memory: 64Gi, pods: \"110\"}}\n---\n";

/// A CronJob every minute whose Jobs run one pod for `run`, with `extra` spec lines.
fn cron_job(run: &str, extra: &str) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: CronJob\n\
         metadata: {{name: tick, namespace: default}}\n\
         spec:\n  schedule: \"* * * * *\"\n{extra}  jobTemplate:\n    spec:\n      minAvailable: 1\n      tasks:\n\
         \x20     - name: w\n        replicas: 1\n        template:\n\
         \x20         metadata: {{annotations: {{sim.volcano-rs.io/duration: {run}}}}}\n\
         \x20         spec: {{containers: [{{name: c, image: x, resources: {{requests: {{cpu: \"1\"}}}}}}]}}\n"
    )
}

/// Runs the scenario for an hour and a second (the start at 60:00 is taken too).
fn hour(text: &str) -> SimMetrics {
    let opts = SimOptions {
        timings: false,
        until: Some(Duration::from_secs(3601)),
        ..Default::default()
    };
    let text = format!("{NODE}{text}");
    common::simulate_text("cron.yaml", &text, &SchedulerConf::default_conf(), &opts)
}

/// The submission times of the CronJob's Jobs, in seconds, sorted.
fn starts(m: &SimMetrics) -> Vec<f64> {
    let mut out: Vec<f64> = m
        .jobs
        .iter()
        .filter(|j| j.name.starts_with("default/tick-"))
        .map(|j| j.submitted_s)
        .collect();
    out.sort_by(f64::total_cmp);
    out
}

#[test]
fn every_minute_for_an_hour_creates_sixty_jobs_that_run() {
    let m = hour(&cron_job("30s", ""));
    let s = starts(&m);
    assert_eq!(s.len(), 60, "{s:?}");
    // Each on its minute (the controller looks 100 ms after the start time).
    for (i, t) in s.iter().enumerate() {
        let minute = (i as f64 + 1.0) * 60.0;
        assert!((t - minute).abs() < 1.0, "job {i} at {t}, due at {minute}");
    }
    let completed = m.jobs.iter().filter(|j| j.phase == "Completed").count();
    assert!(completed >= 59, "{completed} of 60 completed");
}

#[test]
fn forbid_with_runs_longer_than_a_minute_starts_fewer() {
    // 90 s runs and a 10 s deadline: the start that falls during a run is skipped, and the run
    // ends 30 s after it, past the deadline, so it is lost: a run every other minute.
    let m = hour(&cron_job(
        "90s",
        "  concurrencyPolicy: Forbid\n  startingDeadlineSeconds: 10\n",
    ));
    let s = starts(&m);
    assert_eq!(s.len(), 30, "{s:?}");
    for w in s.windows(2) {
        assert!((w[1] - w[0] - 120.0).abs() < 1.0, "{s:?}");
    }
    assert!(
        m.jobs
            .iter()
            .all(|j| j.phase == "Completed" || j.finished_s.is_none())
    );
}

#[test]
fn allow_with_runs_longer_than_a_minute_overlaps_them() {
    let m = hour(&cron_job("150s", ""));
    assert_eq!(starts(&m).len(), 60);
}

#[test]
fn forbid_without_a_deadline_takes_a_skipped_start_late_and_never_overlaps() {
    let m = hour(&cron_job("90s", "  concurrencyPolicy: Forbid\n"));
    let mut runs: Vec<(f64, Option<f64>)> = m
        .jobs
        .iter()
        .filter(|j| j.name.starts_with("default/tick-"))
        .map(|j| (j.submitted_s, j.finished_s))
        .collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    // A run every 90 s or a little more: fewer than 60, more than the 30 a deadline allows.
    assert!(runs.len() > 30 && runs.len() < 60, "{runs:?}");
    for w in runs.windows(2) {
        let ended = w[0].1.expect("an earlier run has finished");
        assert!(
            w[1].0 >= ended,
            "a run started before the one before it ended: {runs:?}"
        );
    }
}
