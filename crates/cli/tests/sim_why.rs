//! `volcano sim` says why: every job that waited names the why-pending messages it waited
//! under and for how long, every failed job names what failed it; the run records its seed
//! and scheduler configuration; and `--default-duration` ends pods that carry no duration.

// Test helpers outside #[test] functions: a failure to write a temp file is a broken test machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn volcano(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn gpu_day() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/gpu-day/")
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("volcano-sim-why-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn jobs(v: &Value) -> &Vec<Value> {
    v["jobs"].as_array().expect("jobs")
}

fn job<'v>(v: &'v Value, name: &str) -> &'v Value {
    jobs(v)
        .iter()
        .find(|j| j["name"] == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

#[test]
fn gpu_day_names_why_each_job_waited_and_why_each_failed() {
    let dir = gpu_day();
    let dir = dir.to_str().unwrap();
    let report = temp("gpu-day.html");
    let json = ok(volcano(&[
        "sim",
        "-f",
        dir,
        "-o",
        "json",
        "--seed",
        "7",
        "--report",
        report.to_str().unwrap(),
    ]));
    let v: Value = serde_json::from_str(&json).unwrap();

    // A job that took longer to start than the trip from submission through admission, pod
    // creation, binding and start-up (a few one-second steps) waited for a reason, and the
    // time under its reasons covers that wait.
    let mut waiting = 0;
    for j in jobs(&v) {
        let Some(wait) = j["waitS"].as_f64() else {
            continue;
        };
        if wait <= 5.0 {
            continue;
        }
        waiting += 1;
        let waited = j["waited"].as_array().unwrap();
        assert!(
            !waited.is_empty(),
            "{} waited {wait}s for no reason",
            j["name"]
        );
        for w in waited {
            assert!(!w["reason"].as_str().unwrap().is_empty(), "{j}");
            assert!(w["seconds"].as_f64().unwrap() > 0.0, "{j}");
        }
        let total: f64 = waited.iter().map(|w| w["seconds"].as_f64().unwrap()).sum();
        assert!(
            total >= wait - 5.0,
            "{}: waited {wait}s but reasons cover {total}s",
            j["name"]
        );
    }
    assert!(
        waiting > 20,
        "the afternoon peak makes jobs wait: {waiting}"
    );
    let gpu_wait = jobs(&v).iter().any(|j| {
        j["waited"].as_array().unwrap().iter().any(|w| {
            let r = w["reason"].as_str().unwrap();
            r.contains("Insufficient nvidia.com/gpu") && w["seconds"].as_f64().unwrap() > 60.0
        })
    });
    assert!(gpu_wait, "some gang waits over a minute for GPUs");

    // Every failed job says why; the three ways gpu-day fails are told apart.
    let failed: Vec<&Value> = jobs(&v)
        .iter()
        .filter(|j| !j["failure"].is_null())
        .collect();
    assert_eq!(
        failed.len() as u64,
        v["summary"]["failed"].as_u64().unwrap()
    );
    for j in &failed {
        let f = &j["failure"];
        assert!(!f["reason"].as_str().unwrap().is_empty(), "{j}");
        assert!(!f["message"].as_str().unwrap().is_empty(), "{j}");
    }
    let aborted = &job(&v, "research/train-0021")["failure"];
    assert_eq!(aborted["reason"], "PodFailed");
    assert_eq!(aborted["exitCode"], 1);
    let phases: Vec<&str> = aborted["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(phases.ends_with(&["Aborting", "Aborted"]), "{phases:?}");
    let retried = &job(&v, "research/train-0096")["failure"];
    assert_eq!(retried["retries"], 2);
    assert_eq!(retried["maxRetry"], 2);
    let lost = failed
        .iter()
        .find(|j| j["failure"]["reason"] == "NodeLost")
        .expect("a job fails with its node");
    assert!(
        lost["failure"]["message"]
            .as_str()
            .unwrap()
            .contains("gpu-05")
    );
    assert!(lost["failure"]["exitCode"].is_null());

    // What the run ran under.
    assert_eq!(v["seed"], 7);
    let conf = v["schedulerConf"].as_str().unwrap();
    assert!(conf.contains("deviceshare"), "{conf}");

    // The same input gives the same JSON, byte for byte.
    let again = ok(volcano(&["sim", "-f", dir, "-o", "json", "--seed", "7"]));
    assert_eq!(json, again);

    // The summary and the report tell the same.
    let text = ok(volcano(&["sim", "-f", dir]));
    let html = std::fs::read_to_string(&report).unwrap();
    for heading in ["Why jobs waited", "Why jobs failed"] {
        assert!(text.contains(heading), "{heading} in the summary");
        assert!(html.contains(heading), "{heading} in the report");
    }
    for j in &failed {
        let name = j["name"].as_str().unwrap();
        assert!(text.contains(name), "{name} in the summary");
        assert!(html.contains(name), "{name} in the report");
    }
    let waited_lines = text
        .split("Why jobs waited")
        .nth(1)
        .and_then(|s| s.split("Why jobs failed").next())
        .unwrap();
    // Jobs that waited 10 s or more are listed by name; the brief waits are counted.
    let total_wait = |j: &Value| -> f64 {
        j["waited"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["seconds"].as_f64().unwrap())
            .sum()
    };
    let mut brief = 0;
    for j in jobs(&v)
        .iter()
        .filter(|j| !j["waited"].as_array().unwrap().is_empty())
    {
        let name = j["name"].as_str().unwrap();
        let listed = waited_lines
            .lines()
            .any(|l| l.starts_with(&format!("{name} ")));
        if total_wait(j) >= 10.0 {
            assert!(listed, "{name} in the summary's waits");
        } else {
            assert!(!listed, "{name} waited briefly and is only counted");
            brief += 1;
        }
    }
    assert!(brief > 0, "gpu-day has brief waits");
    assert!(
        waited_lines.contains(&format!("(and {brief} jobs that waited under 10s each)")),
        "{waited_lines}"
    );
    assert!(html.contains("deviceshare") && html.contains("Seed"));
}

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"8\", memory: 16Gi}}\n";

/// A two-pod Job; `pod_ann` goes on its pod template.
fn job_doc(name: &str, pod_ann: &str) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n\
         metadata: {{name: {name}, namespace: ml}}\n\
         spec:\n  minAvailable: 2\n  tasks:\n  - name: w\n    replicas: 2\n\
         \x20   template:\n      metadata: {{annotations: {{{pod_ann}}}}}\n\
         \x20     spec: {{containers: [{{name: c, image: x, resources: {{requests: {{cpu: \"2\"}}}}}}]}}\n"
    )
}

#[test]
fn default_duration_ends_pods_that_carry_none_and_leaves_the_others_alone() {
    let path = temp("borrowed.yaml");
    let docs = [
        NODE.to_string(),
        job_doc("borrowed", ""),
        job_doc("timed", "sim.volcano-rs.io/duration: 2m"),
    ];
    std::fs::write(&path, docs.join("---\n")).unwrap();
    let path = path.to_str().unwrap();

    let run = |extra: &[&str]| -> Value {
        let mut args = vec!["sim", "-f", path, "-o", "json"];
        args.extend_from_slice(extra);
        serde_json::from_str(&ok(volcano(&args))).unwrap()
    };

    let with = run(&["--default-duration", "10m"]);
    let borrowed = job(&with, "ml/borrowed");
    assert_eq!(borrowed["phase"], "Completed");
    let took = borrowed["finishedS"].as_f64().unwrap() - borrowed["startedS"].as_f64().unwrap();
    assert!((600.0..610.0).contains(&took), "ran {took}s");
    let timed = job(&with, "ml/timed");
    let took = timed["finishedS"].as_f64().unwrap() - timed["startedS"].as_f64().unwrap();
    assert!((120.0..130.0).contains(&took), "its own duration: {took}s");

    // Without the flag, the pods without a duration run on until the run ends.
    let without = run(&["--until", "1h"]);
    assert_eq!(job(&without, "ml/borrowed")["phase"], "Running");
    assert!(job(&without, "ml/borrowed")["finishedS"].is_null());
    assert_eq!(job(&without, "ml/timed")["phase"], "Completed");

    let bad = volcano(&["sim", "-f", path, "--default-duration", "soon"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--default-duration"));
}
