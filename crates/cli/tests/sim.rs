//! `volcano sim` through the binary: bad input exits 2 with one message naming the file,
//! object and field; a run prints its summary, its JSON, its report, and repeats exactly.

// Test helpers outside #[test] functions: a failure to write a temp file is a broken test machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"8\", memory: 16Gi}}\n";

fn job(job_ann: &str, pod_ann: &str) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n\
         metadata: {{name: train, namespace: ml, annotations: {{{job_ann}}}}}\n\
         spec:\n  minAvailable: 2\n  tasks:\n  - name: w\n    replicas: 2\n\
         \x20   template:\n      metadata: {{annotations: {{{pod_ann}}}}}\n\
         \x20     spec: {{containers: [{{name: c, image: x, resources: {{requests: {{cpu: \"2\"}}}}}}]}}\n"
    )
}

fn node_with(annotations: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: n2, annotations: {{{annotations}}}}}\n\
         status: {{allocatable: {{cpu: \"8\", memory: 16Gi}}}}\n"
    )
}

fn write(name: &str, docs: &[String]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("volcano-sim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, docs.join("---\n")).unwrap();
    path
}

fn volcano(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(args)
        .output()
        .unwrap()
}

fn sim(path: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["sim", "-f", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    volcano(&args)
}

/// Exit 2, nothing on stdout, one line on stderr containing every part.
fn expect_input_error(name: &str, out: &Output, parts: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{name}: exit status (stderr: {stderr})"
    );
    assert!(!stderr.contains("panicked"), "{name}: panicked: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "{name}: bad input prints nothing on stdout"
    );
    for p in parts {
        assert!(
            stderr.contains(p),
            "{name}: message should contain {p:?}: {stderr}"
        );
    }
    assert_eq!(
        stderr.trim().lines().count(),
        1,
        "{name}: one message: {stderr}"
    );
}

#[test]
fn a_bad_submit_at_names_file_object_and_field() {
    let path = write(
        "submit",
        &[
            NODE.to_string(),
            job("sim.volcano-rs.io/submit-at: soon", ""),
        ],
    );
    let file = path.display().to_string();
    expect_input_error(
        "submit-at",
        &sim(&path, &[]),
        &[
            &file,
            "Job ml/train",
            "metadata.annotations.sim.volcano-rs.io/submit-at",
            "\"soon\"",
        ],
    );
}

#[test]
fn a_bad_duration_in_a_pod_template_names_the_template_field() {
    let path = write(
        "duration",
        &[NODE.to_string(), job("", "sim.volcano-rs.io/duration: 10")],
    );
    let file = path.display().to_string();
    expect_input_error(
        "duration",
        &sim(&path, &[]),
        &[
            &file,
            "Job ml/train",
            "spec.tasks[0].template.metadata.annotations.sim.volcano-rs.io/duration",
        ],
    );
}

#[test]
fn bad_node_events_name_the_node_and_field() {
    for (name, ann, field) in [
        ("down", "sim.volcano-rs.io/down-at: never", "down-at"),
        (
            "shrink-alone",
            "sim.volcano-rs.io/shrink-at: 1h",
            "shrink-to",
        ),
        (
            "shrink-to",
            "sim.volcano-rs.io/shrink-at: 1h, sim.volcano-rs.io/shrink-to: \"cpu=lots\"",
            "shrink-to",
        ),
        (
            "same-instant",
            "sim.volcano-rs.io/down-at: 1h, sim.volcano-rs.io/up-at: 60m",
            "up-at",
        ),
    ] {
        let path = write(name, &[NODE.to_string(), node_with(ann)]);
        let file = path.display().to_string();
        let field = format!("metadata.annotations.sim.volcano-rs.io/{field}");
        expect_input_error(name, &sim(&path, &[]), &[&file, "Node n2", &field]);
    }
}

#[test]
fn bad_flags_and_sources_exit_2() {
    let path = write("flags", &[NODE.to_string()]);
    let p = path.to_str().unwrap();
    for (name, args) in [
        ("until", vec!["sim", "-f", p, "--until", "10"]),
        ("period", vec!["sim", "-f", p, "--schedule-period", "0s"]),
        ("sample", vec!["sim", "-f", p, "--sample-every", "often"]),
        ("both", vec!["sim", "-f", p, "--generate", "x"]),
        ("neither", vec!["sim"]),
        ("generate", vec!["sim", "--generate", "nonsense"]),
    ] {
        let out = volcano(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert!(out.stdout.is_empty(), "{name}");
    }
}

#[test]
fn a_run_prints_a_summary_json_and_a_report_and_repeats_exactly() {
    let path = write(
        "run",
        &[
            NODE.to_string(),
            job(
                "sim.volcano-rs.io/submit-at: 5m",
                "sim.volcano-rs.io/duration: 10m",
            ),
        ],
    );
    let text = sim(&path, &[]);
    assert_eq!(text.status.code(), Some(0));
    let summary = String::from_utf8_lossy(&text.stdout);
    assert!(summary.contains("1 submitted, 1 completed"), "{summary}");

    let report = path.with_extension("html");
    let a = sim(&path, &["-o", "json", "--report", report.to_str().unwrap()]);
    let b = sim(&path, &["-o", "json"]);
    assert_eq!(
        a.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    assert_eq!(a.stdout, b.stdout, "same input, same bytes");
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(v["jobs"][0]["name"], "ml/train");
    assert_eq!(v["jobs"][0]["completionS"], 602.0);
    assert_eq!(v["summary"]["sessionMs"]["max"], 0.0);
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("<html"), "{html}");
}

#[test]
fn faults_are_injected_from_a_seed_reported_and_checked() {
    let spec = "nodes=4,jobs=20,over=2m,job-size=1-3,pod-cpu=8-24,duration=uniform:30s-2m";
    let run =
        |faults: &str| volcano(&["sim", "--generate", spec, "--faults", faults, "-o", "json"]);
    let out = run("seed=9,window=2m");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &v["faults"];
    assert_eq!(f["seed"], 9);
    assert_eq!(f["violations"], serde_json::json!([]));
    assert!(f["injected"]["conflicts"].as_u64().unwrap() > 0, "{f}");
    assert!(
        f["injected"]["nodesVanished"].is_u64(),
        "camelCase as the rest: {f}"
    );
    assert_eq!(v["summary"]["unfinished"], 0);
    assert_eq!(
        run("seed=9,window=2m").stdout,
        out.stdout,
        "repeats exactly"
    );

    // Without --faults the JSON has no faults section at all.
    let plain = volcano(&["sim", "--generate", spec, "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert!(v.get("faults").is_none());

    let bad = run("seed=9,conflict=lots");
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("--faults") && err.contains("`conflict=lots`: a rate such as 5%"),
        "{err}"
    );
}

fn cron_job(schedule: &str) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: CronJob\nmetadata: {{name: tick}}\n\
         spec:\n  schedule: \"{schedule}\"\n  jobTemplate:\n    spec:\n      tasks:\n      - name: w\n        replicas: 1\n\
         \x20       template:\n          metadata: {{annotations: {{sim.volcano-rs.io/duration: 30s}}}}\n\
         \x20         spec: {{containers: [{{name: c, image: x, resources: {{requests: {{cpu: \"1\"}}}}}}]}}\n"
    )
}

#[test]
fn a_cron_job_runs_on_virtual_time_and_a_bad_schedule_is_named() {
    let path = write("cron", &[NODE.to_string(), cron_job("*/5 * * * *")]);
    let out = sim(&path, &["--until", "30m", "-o", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    // Every five minutes over half an hour: 5, 10, ..., 25 (the 30:00 start is 100 ms late).
    assert_eq!(jobs.len(), 5, "{jobs:?}");
    assert!(
        jobs.iter()
            .all(|j| j["name"].as_str().unwrap().starts_with("default/tick-"))
    );
    assert!(jobs.iter().all(|j| j["phase"] == "Completed"), "{jobs:?}");

    let bad = write("cron-bad", &[NODE.to_string(), cron_job("61 * * * *")]);
    expect_input_error(
        "bad schedule",
        &sim(&bad, &[]),
        &["cron-bad.yaml", "CronJob default/tick", "spec.schedule"],
    );
}

#[test]
fn a_generated_topology_is_summed_up_in_text_json_and_report() {
    let spec = "nodes=16,gpu-nodes=16,topology=leaf:4,spine:2,topology-mode=hard,jobs=12,\
        job-size=2-4,gpu-jobs=1,gpu-share=0,duration=fixed:10m";
    let text = volcano(&["sim", "--generate", spec]);
    assert!(
        text.status.success(),
        "{}",
        String::from_utf8_lossy(&text.stderr)
    );
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(
        out.contains("network topology: HyperNodes 4 leaf, 2 spine"),
        "{out}"
    );
    assert!(
        out.contains("that ran stayed inside one tier-1 domain"),
        "{out}"
    );
    assert!(out.contains("topology jobs"), "{out}");
    let json = volcano(&["sim", "--generate", spec, "-o", "json"]);
    let m: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap_or_default();
    assert_eq!(m["topology"]["domains"].as_array().map(Vec::len), Some(6));
    assert_eq!(m["topology"]["resource"], "nvidia.com/gpu");
    let ran = m["topology"]["gangsRan"].as_u64().unwrap_or(0);
    assert!(ran > 0 && m["topology"]["gangsInOneTier1Domain"].as_u64() <= Some(ran));
    // A run without `topology` says nothing of it.
    let plain = volcano(&["sim", "--generate", "nodes=4,jobs=3"]);
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("network topology"));
}
