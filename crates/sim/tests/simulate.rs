//! The simulation over virtual time: submissions, kubelets, lifecycle policies, queues
//! waiting on each other, nodes going away, and runs that repeat exactly.

// Helpers outside #[test] functions drive the simulation; a failure there is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use volcano_controllers::admission;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::metrics::{JobRecord, SimMetrics};
use volcano_sim::simulate::{SimOptions, simulate};

fn options() -> ManagerOptions {
    ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    }
}

fn sim_with(text: &str, opts: &SimOptions) -> SimMetrics {
    let mut s = volcano_api::scenario::load_str(Path::new("t.yaml"), text)
        .unwrap_or_else(|e| panic!("{e}"));
    for j in &mut s.objects.jobs {
        admission::default_job(j);
        admission::validate_job(j).unwrap();
    }
    let conf = SchedulerConf::default_conf();
    simulate(s.objects, &s.sources, &conf, opts, options(), &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"))
}

fn sim(text: &str) -> SimMetrics {
    sim_with(
        text,
        &SimOptions {
            timings: false,
            ..Default::default()
        },
    )
}

fn job<'m>(m: &'m SimMetrics, name: &str) -> &'m JobRecord {
    m.jobs
        .iter()
        .find(|j| j.name == name)
        .unwrap_or_else(|| panic!("no job {name} in {:?}", m.jobs))
}

fn node(name: &str, cpu: u32, annotations: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, annotations: {{{annotations}}}}}\n\
         status: {{allocatable: {{cpu: \"{cpu}\", memory: 32Gi}}}}\n---\n"
    )
}

/// A Volcano Job of `replicas` pods of `cpu` each, with Job and template annotations.
fn vjob(name: &str, queue: &str, replicas: u32, cpu: u32, job_ann: &str, pod_ann: &str) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n\
         metadata: {{name: {name}, namespace: default, annotations: {{{job_ann}}}}}\n\
         spec:\n  queue: {queue}\n  minAvailable: {replicas}\n  tasks:\n  - name: w\n    replicas: {replicas}\n\
         \x20   template:\n      metadata: {{annotations: {{{pod_ann}}}}}\n\
         \x20     spec: {{containers: [{{name: c, image: x, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]}}\n---\n"
    )
}

fn queue(name: &str) -> String {
    format!(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {{weight: 1}}\n---\n"
    )
}

const SUBMIT_5M: &str = "sim.volcano-rs.io/submit-at: 5m";
const RUN_10M: &str = "sim.volcano-rs.io/duration: 10m";

#[test]
fn a_job_submitted_at_5m_running_10m_ends_at_15m_plus_startup() {
    let m = sim(&format!(
        "{}{}",
        node("n1", 8, ""),
        vjob("train", "default", 2, 2, SUBMIT_5M, RUN_10M)
    ));
    let j = job(&m, "default/train");
    assert_eq!(j.pods, 2);
    assert_eq!(j.submitted_s, 300.0);
    // One session admits the PodGroup, the controller creates the pods, the next session
    // binds them; they run one start-up (1s) later.
    assert_eq!(j.started_s, Some(302.0));
    assert_eq!(j.wait_s, Some(2.0));
    assert_eq!(j.finished_s, Some(902.0), "15m + start-up and sessions");
    assert_eq!(j.completion_s, Some(602.0));
    assert_eq!(j.phase, "Completed");
    assert_eq!(m.summary.completed, 1);
    assert_eq!(m.summary.pods_bound, 2);
    assert_eq!(m.summary.makespan_s, 602.0);
    assert_eq!(
        m.summary.simulated_s, 902.0,
        "the run stops once everything finished"
    );
    // Half the cpu was requested while it ran.
    let busy = m.timeline.iter().find(|s| s.t_s == 600.0).unwrap();
    assert_eq!(busy.utilisation.get("cpu"), Some(&0.5));
    assert_eq!((busy.running_jobs, busy.running_pods), (1, 2));
}

#[test]
fn a_longer_startup_delays_the_start_and_the_end() {
    let opts = SimOptions {
        pod_startup: Duration::from_secs(30),
        timings: false,
        ..Default::default()
    };
    let m = sim_with(
        &format!(
            "{}{}",
            node("n1", 8, ""),
            vjob("j", "default", 1, 1, SUBMIT_5M, RUN_10M)
        ),
        &opts,
    );
    assert_eq!(job(&m, "default/j").started_s, Some(331.0));
    assert_eq!(job(&m, "default/j").finished_s, Some(931.0));
}

#[test]
fn with_no_startup_pods_run_from_their_binding() {
    let opts = SimOptions {
        pod_startup: Duration::ZERO,
        timings: false,
        ..Default::default()
    };
    let m = sim_with(
        &format!(
            "{}{}",
            node("n1", 8, ""),
            vjob("j", "default", 1, 1, SUBMIT_5M, RUN_10M)
        ),
        &opts,
    );
    assert_eq!(job(&m, "default/j").started_s, Some(301.0));
    assert_eq!(job(&m, "default/j").finished_s, Some(901.0));
}

#[test]
fn fail_after_fails_the_pod_and_restart_job_retries_up_to_max_retry() {
    let flaky = "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n\
        metadata: {name: flaky, namespace: default}\n\
        spec:\n  minAvailable: 1\n  maxRetry: 3\n  policies: [{event: PodFailed, action: RestartJob}]\n\
        \x20 tasks:\n  - name: w\n    replicas: 1\n\
        \x20   template:\n      metadata: {annotations: {sim.volcano-rs.io/fail-after: 1m}}\n\
        \x20     spec: {containers: [{name: c, image: x, resources: {requests: {cpu: \"1\"}}}]}\n---\n";
    let m = sim(&format!(
        "{}{flaky}{}",
        node("n1", 8, ""),
        vjob(
            "plain",
            "default",
            1,
            1,
            "",
            "sim.volcano-rs.io/fail-after: 1m"
        )
    ));
    let f = job(&m, "default/flaky");
    assert_eq!(f.phase, "Failed");
    assert_eq!(f.started_s, Some(2.0), "the wait is to the first run");
    // Three runs of a minute, each restart taking a session to kill, admit and bind again.
    let plain = job(&m, "default/plain");
    assert_eq!(
        plain.phase, "Failed",
        "no policy: a failed pod fails the job"
    );
    assert_eq!(plain.finished_s, Some(62.0));
    assert_eq!(m.summary.pods_bound, 3 + 1, "flaky ran maxRetry times");
    let end = f.finished_s.unwrap();
    assert!(
        end > 3.0 * 60.0 && end < 3.0 * 60.0 + 30.0,
        "ended at {end}"
    );
    assert_eq!(m.summary.failed, 2);
}

#[test]
fn a_queue_waits_while_another_holds_the_nodes_then_starts() {
    let m = sim(&format!(
        "{}{}{}{}{}",
        node("n1", 8, ""),
        queue("q1"),
        queue("q2"),
        vjob("big", "q1", 2, 4, "", "sim.volcano-rs.io/duration: 1h"),
        vjob(
            "small",
            "q2",
            1,
            4,
            "sim.volcano-rs.io/submit-at: 1m",
            "sim.volcano-rs.io/duration: 10m"
        )
    ));
    let big = job(&m, "default/big");
    let small = job(&m, "default/small");
    assert_eq!(big.finished_s, Some(3602.0));
    let waited = small.wait_s.unwrap();
    assert!(waited > 3500.0, "small waited {waited}s for big's hour");
    assert!(small.started_s.unwrap() > big.finished_s.unwrap());
    assert_eq!(small.phase, "Completed");
    // While big ran, small was pending and q1 held the whole node.
    let mid = m.timeline.iter().find(|s| s.t_s == 1800.0).unwrap();
    assert_eq!((mid.pending_jobs, mid.running_jobs), (1, 1));
    assert_eq!(mid.queues["q1"].allocated, 1.0);
    assert_eq!(mid.queues["q2"].allocated, 0.0);
    assert_eq!(m.queues, vec!["q1".to_string(), "q2".to_string()]);
}

#[test]
fn a_node_going_down_fails_its_pods_and_takes_no_more() {
    let m = sim(&format!(
        "{}{}{}",
        node("n1", 4, "sim.volcano-rs.io/down-at: 10m"),
        node("n2", 4, ""),
        vjob(
            "pair",
            "default",
            2,
            4,
            "",
            "sim.volcano-rs.io/duration: 1h"
        )
    ));
    let pair = job(&m, "default/pair");
    // One pod per node. The one on n1 is lost at 10m; with no policy the job runs on with the
    // other and, that one done, fails: one pod succeeded of the two it needs.
    let after = m.timeline.iter().find(|s| s.t_s == 600.0).unwrap();
    assert_eq!(after.running_pods, 1, "{after:?}");
    assert_eq!(
        after.utilisation["cpu"], 1.0,
        "n2 full, n1 no longer counted"
    );
    let before = m.timeline.iter().find(|s| s.t_s == 540.0).unwrap();
    assert_eq!(before.running_pods, 2, "{before:?}");
    assert_eq!(pair.phase, "Failed");
    assert_eq!(pair.finished_s, Some(3602.0));
    assert_eq!(m.summary.pods_bound, 2, "nothing goes to the lost node");
}

#[test]
fn a_lost_node_s_restarted_job_runs_on_the_nodes_left() {
    let restart = "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n\
        metadata: {name: r, namespace: default}\n\
        spec:\n  minAvailable: 1\n  maxRetry: 5\n  policies: [{event: PodFailed, action: RestartJob}]\n\
        \x20 tasks:\n  - name: w\n    replicas: 1\n\
        \x20   template:\n      metadata: {annotations: {sim.volcano-rs.io/duration: 30m}}\n\
        \x20     spec: {containers: [{name: c, image: x, resources: {requests: {cpu: \"4\"}}}]}\n---\n";
    // n2 is busy until 20m, so the job starts on n1; n1 goes down at 10m; the restarted job
    // waits for n2 and runs there.
    let m = sim(&format!(
        "{}{}{}{restart}",
        node("a-n1", 4, "sim.volcano-rs.io/down-at: 10m"),
        node("b-n2", 4, ""),
        vjob(
            "filler",
            "default",
            1,
            4,
            "",
            "sim.volcano-rs.io/duration: 20m"
        ),
    ));
    let r = job(&m, "default/r");
    assert_eq!(r.phase, "Completed", "{r:?}");
    let end = r.finished_s.unwrap();
    assert!(
        end > 1200.0 + 1800.0 && end < 1200.0 + 1800.0 + 10.0,
        "ended at {end}"
    );
}

#[test]
fn a_node_that_shrinks_or_joins_later_changes_what_fits() {
    let m = sim(&format!(
        "{}{}{}",
        node(
            "n1",
            8,
            "sim.volcano-rs.io/shrink-at: 1m, sim.volcano-rs.io/shrink-to: \"cpu=2\""
        ),
        node("late", 8, "sim.volcano-rs.io/up-at: 1h"),
        vjob(
            "j",
            "default",
            1,
            4,
            "sim.volcano-rs.io/submit-at: 2m",
            "sim.volcano-rs.io/duration: 10m"
        )
    ));
    let j = job(&m, "default/j");
    assert!(j.started_s.unwrap() > 3600.0, "{j:?}");
    assert_eq!(j.phase, "Completed");
}

#[test]
fn bare_pods_with_a_group_are_one_job() {
    let text = format!(
        "{}apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n\
         metadata: {{name: g, namespace: ns, annotations: {{sim.volcano-rs.io/submit-at: 1m, sim.volcano-rs.io/duration: 5m}}}}\n\
         spec: {{minMember: 2}}\n---\n{}{}",
        node("n1", 8, ""),
        bare("p1", ""),
        bare("p2", "sim.volcano-rs.io/duration: 10m")
    );
    let m = sim(&text);
    assert_eq!(m.jobs.len(), 1);
    let g = job(&m, "ns/g");
    assert_eq!(g.pods, 2);
    assert_eq!(g.submitted_s, 60.0, "pods come with their group");
    let started = g.started_s.unwrap();
    assert_eq!(
        g.finished_s,
        Some(started + 600.0),
        "the longer pod ends the job"
    );
    assert_eq!(g.phase, "Completed");
}

fn bare(name: &str, ann: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\n\
         metadata: {{name: {name}, namespace: ns, annotations: {{scheduling.k8s.io/group-name: g, {ann}}}}}\n\
         spec: {{schedulerName: volcano, containers: [{{name: c, image: x, resources: {{requests: {{cpu: \"1\"}}}}}}]}}\n---\n"
    )
}

#[test]
fn until_runs_to_that_time_and_pods_without_duration_run_on() {
    let opts = SimOptions {
        until: Some(Duration::from_secs(2 * 3600)),
        timings: false,
        ..Default::default()
    };
    let m = sim_with(
        &format!(
            "{}{}",
            node("n1", 8, ""),
            vjob("forever", "default", 1, 1, "", "")
        ),
        &opts,
    );
    assert_eq!(m.summary.simulated_s, 7200.0);
    assert_eq!(m.summary.unfinished, 1);
    assert_eq!(job(&m, "default/forever").phase, "Running");
    assert_eq!(m.timeline.last().map(|s| s.t_s), Some(7200.0));
    assert_eq!(m.timeline.len(), 121, "every minute, both ends included");
    // Nothing changes after the start: a handful of sessions, not one per second.
    assert!(m.summary.sessions < 10, "{} sessions", m.summary.sessions);
}

#[test]
fn without_until_a_run_that_cannot_progress_stops() {
    let m = sim(&format!(
        "{}{}",
        node("n1", 2, ""),
        vjob("too-big", "default", 1, 4, "", RUN_10M)
    ));
    assert_eq!(m.summary.unfinished, 1);
    assert!(m.summary.simulated_s < 10.0, "{}", m.summary.simulated_s);
}

fn day_like() -> String {
    let mut text = String::new();
    for n in 0..4 {
        text.push_str(&node(&format!("n{n}"), 8, ""));
    }
    text.push_str(&queue("a"));
    text.push_str(&queue("b"));
    for i in 0..24 {
        let q = if i % 3 == 0 { "b" } else { "a" };
        let submit = format!("sim.volcano-rs.io/submit-at: {}m", i * 7);
        let run = format!("sim.volcano-rs.io/duration: {}m", 10 + (i * 13) % 50);
        text.push_str(&vjob(
            &format!("j{i}"),
            q,
            1 + i % 3,
            2 + i % 4,
            &submit,
            &run,
        ));
    }
    text
}

#[test]
fn the_same_input_gives_byte_identical_json() {
    let a = serde_json::to_string(&sim(&day_like())).unwrap();
    let b = serde_json::to_string(&sim(&day_like())).unwrap();
    assert_eq!(a, b);
    let m = sim(&day_like());
    assert_eq!(m.summary.completed, 24, "{:?}", m.summary);
    assert!(m.summary.wait_s.max > 0.0, "some jobs queued");
    assert!(m.session_ms.iter().all(|&ms| ms == 0.0));
}
