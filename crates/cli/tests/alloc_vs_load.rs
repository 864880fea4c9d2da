//! `volcano sim alloc-vs-load` from outside: bad trace files give exit status 2 with the file,
//! line and column; a tiny trace gives the JSON contract.

// Test helpers outside #[test] functions: a failure to write a temp file is a broken test machine.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NODES: &str =
    "sn,cpu_milli,memory_mib,gpu,model\nn1,32000,131072,2,T4\nn2,32000,131072,1,P100\n";

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("volcano-avl-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(nodes: &Path, pods: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(["sim", "alloc-vs-load", "--nodes"])
        .arg(nodes)
        .arg("--pods")
        .arg(pods)
        .args(extra)
        .output()
        .unwrap()
}

fn expect_bad(name: &str, nodes: &str, pods: &str, parts: &[&str]) {
    let d = dir(name);
    let (n, p) = (d.join("nodes.csv"), d.join("pods.csv"));
    std::fs::write(&n, nodes).unwrap();
    std::fs::write(&p, pods).unwrap();
    let out = run(&n, &p, &["--seeds", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
    assert!(out.stdout.is_empty(), "{name}: nothing on stdout");
    for part in parts {
        assert!(stderr.contains(part), "{name}: {part:?} not in {stderr}");
    }
}

#[test]
fn bad_traces_name_file_line_and_column() {
    expect_bad(
        "non-numeric",
        NODES,
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,12x,100,1,500\n",
        &["pods.csv:2", "column cpu_milli", "\"12x\""],
    );
    expect_bad(
        "missing-field",
        NODES,
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,100,1\n",
        &["pods.csv:2", "column gpu_milli: missing"],
    );
    expect_bad(
        "unknown-model",
        NODES,
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np1,1000,100,1,500,A100\n",
        &["pods.csv:2", "pod p1", "gpu_spec", "A100"],
    );
    expect_bad(
        "bad-node",
        "sn,cpu_milli,memory_mib,gpu,model\nn1,32000,-5,2,T4\n",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,100,1,500\n",
        &["nodes.csv:2", "column memory_mib"],
    );
    let d = dir("missing-file");
    let out = run(&d.join("nope.csv"), &d.join("nope2.csv"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.csv"));
    let n = d.join("nodes.csv");
    std::fs::write(&n, NODES).unwrap();
    let out = run(&n, &n, &["--seeds", "5-1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--seeds"));
}

#[test]
fn a_tiny_trace_gives_the_curve_contract() {
    let d = dir("tiny");
    let (n, p) = (d.join("nodes.csv"), d.join("pods.csv"));
    std::fs::write(&n, NODES).unwrap();
    // 3 GPUs: two whole-GPU pods and shares; the 80% share cannot join a 50% one.
    std::fs::write(
        &p,
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n\
         a,1000,100,1,1000,\nb,1000,100,1,500,T4\nc,1000,100,1,800,\nd,1000,100,0,0,\n",
    )
    .unwrap();
    let out = run(&n, &p, &["--seeds", "1-2", "-o", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["loads"].as_array().unwrap().len(), 131);
    assert_eq!(v["mean"].as_array().unwrap().len(), 131);
    let per_seed = v["per_seed"].as_object().unwrap();
    assert_eq!(per_seed.keys().collect::<Vec<_>>(), ["1", "2"]);
    // Nothing is ever allocated beyond what the cluster has.
    for x in v["mean"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x.as_f64())
    {
        assert!((0.0..=100.0).contains(&x), "{x}");
    }
    let again = run(&n, &p, &["--seeds", "1-2", "-o", "json"]);
    assert_eq!(out.stdout, again.stdout, "same seeds, same bytes");
}
