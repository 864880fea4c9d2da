//! `volcano bench` as a user runs it: the JSON report of a small workload, and bad flags.

use std::process::Command;

fn volcano(args: &[&str]) -> std::process::Output {
    match Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(args)
        .output()
    {
        Ok(out) => out,
        Err(e) => panic!("cannot run volcano: {e}"),
    }
}

#[test]
fn the_json_report_has_the_figures_and_the_workload() {
    let out = volcano(&[
        "bench",
        "--nodes",
        "20",
        "--jobs",
        "10",
        "--gang",
        "3",
        "--running",
        "30",
        "--gpu",
        "0.5",
        "--seed",
        "3",
        "-o",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = match serde_json::from_slice(&out.stdout) {
        Ok(v) => v,
        Err(e) => panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)),
    };
    for field in [
        "pods_per_second",
        "sessions",
        "session_ms_p50",
        "session_ms_p99",
        "peak_rss_bytes",
    ] {
        assert!(r[field].is_number(), "{field} missing in {r}");
    }
    assert_eq!(r["nodes"], 20);
    assert_eq!(r["jobs"], 10);
    assert_eq!(r["gang"], 3);
    assert_eq!(r["running"], 30);
    assert_eq!(r["seed"], 3);
    assert_eq!(r["pods_bound"], 30);
    assert_eq!(r["jobs_placed"], 10);
    assert!(r["peak_rss_bytes"].as_u64().is_some_and(|b| b > 0));
}

#[test]
fn a_gpu_share_above_one_is_refused() {
    let out = volcano(&["bench", "--gpu", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--gpu"));
}

#[test]
fn the_topology_shape_builds_three_tiers_of_hyper_nodes() {
    let out = volcano(&[
        "bench",
        "--nodes",
        "64",
        "--topology",
        "leaf:8,spine:4,zone:2",
        "--jobs",
        "4",
        "--gang",
        "8",
        "--topology-mode",
        "hard",
        "--topology-tier",
        "1",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(
            "HyperNodes: 8 leaf (8 members each), 2 spine (4 members each), 1 zone (2 members each)"
        ),
        "{text}"
    );
    assert!(text.contains("networkTopology: hard up to tier 1 on every pending PodGroup"));
    assert!(text.contains("jobs inside one tier-1 HyperNode:"), "{text}");
}

#[test]
fn a_topology_tier_above_the_tiers_is_refused() {
    let out = volcano(&[
        "bench",
        "--topology",
        "leaf:8",
        "--topology-mode",
        "hard",
        "--topology-tier",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--topology-tier"));
    let out = volcano(&["bench", "--topology-mode", "hard"]);
    assert_eq!(out.status.code(), Some(2));
}
