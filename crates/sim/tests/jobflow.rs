//! JobFlows over virtual time: a flow's Jobs are made from their JobTemplates as their
//! dependencies complete, so a chain runs one Job after another and a diamond runs its middle
//! in parallel.

// Helpers outside #[test] functions drive the simulation; a failure there is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::metrics::{JobRecord, SimMetrics};
use volcano_sim::simulate::SimOptions;

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n\
    status: {allocatable: {cpu: \"8\", memory: 16Gi, pods: \"110\"}}\n---\n";

/// A JobTemplate of one pod that runs for `run`, or fails after `run` when `fail` is set.
fn template(name: &str, run: &str, fail: bool) -> String {
    let end = if fail { "fail-after" } else { "duration" };
    format!(
        "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobTemplate\n\
         metadata: {{name: {name}, namespace: default}}\n\
         spec:\n  minAvailable: 1\n  maxRetry: 1\n  tasks:\n\
         \x20 - name: w\n    replicas: 1\n    template:\n\
         \x20     metadata: {{annotations: {{sim.volcano-rs.io/{end}: {run}}}}}\n\
         \x20     spec: {{restartPolicy: Never, containers: [{{name: c, image: x, resources: {{requests: {{cpu: \"1\"}}}}}}]}}\n---\n"
    )
}

fn run(text: &str) -> SimMetrics {
    let opts = SimOptions {
        timings: false,
        max_time: Duration::from_secs(3600),
        ..Default::default()
    };
    let text = format!("{NODE}{text}");
    common::simulate_text("flow.yaml", &text, &SchedulerConf::default_conf(), &opts)
}

fn job<'a>(m: &'a SimMetrics, name: &str) -> &'a JobRecord {
    m.jobs
        .iter()
        .find(|j| j.name == format!("default/{name}"))
        .unwrap_or_else(|| {
            let names: Vec<_> = m.jobs.iter().map(|j| j.name.as_str()).collect();
            panic!("no job {name}; jobs: {names:?}")
        })
}

const CHAIN: &str = "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\n\
    metadata: {name: etl, namespace: default}\n\
    spec:\n  jobRetainPolicy: retain\n  flows:\n\
    \x20 - name: a\n\
    \x20 - name: b\n    dependsOn: {targets: [a]}\n\
    \x20 - name: c\n    dependsOn: {targets: [b]}\n";

#[test]
fn a_chain_of_three_templates_runs_in_dependency_order() {
    let m = run(&format!(
        "{}{}{}{CHAIN}",
        template("a", "60s", false),
        template("b", "60s", false),
        template("c", "60s", false)
    ));
    let (a, b, c) = (job(&m, "etl-a"), job(&m, "etl-b"), job(&m, "etl-c"));
    for j in [a, b, c] {
        assert_eq!(j.phase, "Completed", "{j:?}");
    }
    // Each Job is made only once the one it depends on has completed.
    assert!(a.submitted_s < 1.0, "{a:?}");
    assert!(b.submitted_s >= a.finished_s.unwrap(), "{a:?} then {b:?}");
    assert!(c.submitted_s >= b.finished_s.unwrap(), "{b:?} then {c:?}");
    assert!(c.started_s.unwrap() >= 120.0, "{c:?}");
}

#[test]
fn a_diamond_runs_its_middle_in_parallel_and_joins() {
    let flow = "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\n\
        metadata: {name: d, namespace: default}\n\
        spec:\n  flows:\n\
        \x20 - name: a\n\
        \x20 - name: b\n    dependsOn: {targets: [a]}\n\
        \x20 - name: c\n    dependsOn: {targets: [a]}\n\
        \x20 - name: e\n    dependsOn: {targets: [b, c]}\n";
    let m = run(&format!(
        "{}{}{}{}{flow}",
        template("a", "60s", false),
        template("b", "30s", false),
        template("c", "90s", false),
        template("e", "10s", false)
    ));
    let (a, b, c, e) = (
        job(&m, "d-a"),
        job(&m, "d-b"),
        job(&m, "d-c"),
        job(&m, "d-e"),
    );
    assert_eq!(b.submitted_s, c.submitted_s, "b and c are made together");
    assert!(b.submitted_s >= a.finished_s.unwrap());
    // The join waits for the slower branch.
    assert!(e.submitted_s >= c.finished_s.unwrap(), "{c:?} then {e:?}");
    assert!(e.submitted_s > b.finished_s.unwrap());
    assert_eq!(e.phase, "Completed");
}

#[test]
fn a_failed_step_stops_the_flow() {
    let m = run(&format!(
        "{}{}{}{CHAIN}",
        template("a", "60s", false),
        template("b", "20s", true),
        template("c", "60s", false)
    ));
    assert_eq!(job(&m, "etl-a").phase, "Completed");
    assert_eq!(job(&m, "etl-b").phase, "Failed");
    assert!(
        m.jobs.iter().all(|j| j.name != "default/etl-c"),
        "c depends on a failed Job and is never made"
    );
}

#[test]
fn a_flow_waits_for_a_template_submitted_later() {
    let late_b = template("b", "30s", false).replace(
        "metadata: {name: b, namespace: default}",
        "metadata: {name: b, namespace: default, annotations: {sim.volcano-rs.io/submit-at: 10m}}",
    );
    let m = run(&format!(
        "{}{late_b}{}{CHAIN}",
        template("a", "60s", false),
        template("c", "60s", false)
    ));
    let b = job(&m, "etl-b");
    assert!(b.submitted_s >= 600.0, "{b:?}");
    assert_eq!(job(&m, "etl-c").phase, "Completed");
}
