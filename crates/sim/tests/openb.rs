//! The openb trace import and the arrival-only experiment, against the shared traces.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use volcano_scheduler::cache::{CacheOptions, build_snapshot};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::plugins::gpu_fragmentation;
use volcano_sim::alloc_vs_load::{self, Experiment, trace_objects};
use volcano_sim::openb::{self, TraceError, TraceNode, TracePod};

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/openb")
}

fn load(trace: &str) -> (Vec<TraceNode>, Vec<TracePod>) {
    let nodes = openb::read_nodes(&traces().join("openb_node_list_gpu_node.csv")).unwrap();
    let pods = openb::read_pods(
        &traces().join(format!("openb_pod_list_{trace}.csv")),
        &nodes,
    )
    .unwrap();
    (nodes, pods)
}

/// The check of fgd-method.md §3.6: on the empty cluster, F / 6,212,000.
fn empty_fragmentation_percent(trace: &str) -> f64 {
    let (nodes, pods) = load(trace);
    let node_refs: Vec<&TraceNode> = nodes.iter().collect();
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let objects = trace_objects(&node_refs, &names, &pods);
    let snap = build_snapshot(&objects, &CacheOptions::default()).unwrap();
    let (f, free) = gpu_fragmentation(&snap);
    assert_eq!(free, 6_212_000, "every GPU is free on the empty cluster");
    100.0 * f / 6_212_000.0
}

#[test]
fn the_gpu_cluster_reads_as_published() {
    let (nodes, pods) = load("default");
    assert_eq!(nodes.len(), 1213);
    assert_eq!(nodes.iter().map(|n| n.gpus).sum::<u32>(), 6212);
    assert_eq!(pods.len(), 8152);
    let requested: u64 = pods.iter().map(TracePod::gpu_total_milli).sum();
    assert_eq!(requested, 6_086_800);
}

#[test]
fn empty_cluster_fragmentation_matches_the_paper() {
    for (trace, want) in [
        ("default", 13.945),
        ("gpuspec33", 35.487),
        ("cpu050", 5.553),
    ] {
        let got = empty_fragmentation_percent(trace);
        assert!((got - want).abs() < 0.01, "{trace}: {got:.3}% vs {want}%");
    }
}

fn fgd_conf() -> SchedulerConf {
    SchedulerConf::parse(
        "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: deviceshare\n  - name: fgd\n",
    )
    .unwrap()
    .0
}

#[test]
fn fgd_follows_the_published_curve_and_best_conf_beats_it() {
    let (nodes, pods) = load("default");
    let curve = |conf: &SchedulerConf| {
        let x = Experiment {
            nodes: &nodes,
            pods: &pods,
            conf,
        };
        alloc_vs_load::run(&x, &[42], 1).unwrap().per_seed[&42].clone()
    };
    let fgd = curve(&fgd_conf());
    assert_eq!(fgd.len(), 131);
    let at = |c: &Vec<Option<f64>>, l: usize| c[l].unwrap();
    // Below saturation every arrival fits.
    assert!((at(&fgd, 50) - 50.0).abs() < 0.5, "{}", at(&fgd, 50));
    // The published FGD mean at 110% load is 95.30 (BestFit's 92.94).
    assert!(
        at(&fgd, 110) > 94.8 && at(&fgd, 110) < 95.8,
        "{}",
        at(&fgd, 110)
    );
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/gpu-packing/best.conf"),
    )
    .unwrap();
    let best = curve(&SchedulerConf::parse(&text).unwrap().0);
    for l in [100, 110, 120, 130] {
        assert!(at(&best, l) > at(&fgd, l) + 0.1, "load {l}: {best:?}");
    }
}

#[test]
fn bad_trace_rows_name_the_file_line_and_column() {
    let dir = std::env::temp_dir().join(format!("openb-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let nodes_csv = dir.join("nodes.csv");
    std::fs::write(
        &nodes_csv,
        "sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,2,T4\nn2,lots,1,1,T4\n",
    )
    .unwrap();
    let e = openb::read_nodes(&nodes_csv).unwrap_err();
    assert!(
        matches!(&e, TraceError::Field { line: 3, column, .. } if column == "cpu_milli"),
        "{e}"
    );
    assert!(e.to_string().contains("nodes.csv:3"), "{e}");

    std::fs::write(
        &nodes_csv,
        "sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,2,T4\n",
    )
    .unwrap();
    let nodes = openb::read_nodes(&nodes_csv).unwrap();
    let pods_csv = dir.join("pods.csv");
    std::fs::write(
        &pods_csv,
        "name,cpu_milli,memory_mib,num_gpu\np1,1000,10,1\n",
    )
    .unwrap();
    let e = openb::read_pods(&pods_csv, &nodes).unwrap_err();
    assert!(e.to_string().contains("column gpu_milli: missing"), "{e}");

    std::fs::write(
        &pods_csv,
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np1,1000,10,1,500,A100|V100\n",
    )
    .unwrap();
    let e = openb::read_pods(&pods_csv, &nodes).unwrap_err();
    assert!(
        e.to_string()
            .contains("no node has a GPU of model A100|V100"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
