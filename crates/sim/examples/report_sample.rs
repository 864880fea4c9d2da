//! Renders the HTML report of a made-up day on a GPU cluster, to look at the report without
//! running a simulation: `cargo run -p volcano-sim --example report_sample [-- OUT.html]`
//! (default `target/report-sample.html`).

use std::collections::BTreeMap;
use std::f64::consts::PI;
use std::path::PathBuf;
use std::process::ExitCode;

use volcano_sim::metrics::{
    EvictionRecord, JobRecord, QueueShare, Sample, SimMetrics, Stats, Summary,
};
use volcano_sim::report::render_html;

/// Stats of a list of values (nearest-rank percentiles).
fn stats(values: &mut [f64]) -> Stats {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let at = |p: f64| {
        let rank = ((p * n as f64).ceil() as usize).clamp(1, n.max(1));
        values.get(rank - 1).copied().unwrap_or(0.0)
    };
    Stats {
        count: n as u64,
        mean: values.iter().sum::<f64>() / n.max(1) as f64,
        p50: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
        max: values.last().copied().unwrap_or(0.0),
    }
}

/// A day: load follows the daytime, GPU use lags it, three queues trade shares.
fn sample() -> SimMetrics {
    let day = 86_400.0;
    let hour_load = |t: f64| 0.5 + 0.45 * (2.0 * PI * (t / 3600.0 - 14.0) / 24.0).cos();
    let timeline: Vec<Sample> = (0..=1440)
        .map(|i| {
            let t = f64::from(i) * 60.0;
            let load = hour_load(t);
            let wobble = 0.05 * (t / 900.0).sin();
            let queues: BTreeMap<String, QueueShare> = [
                ("research", 0.5, 0.55 * load + wobble),
                ("production", 0.33, 0.30 + 0.1 * (t / 7200.0).cos()),
                ("interactive", 0.17, 0.12 * load),
            ]
            .into_iter()
            .map(|(q, deserved, allocated)| {
                (
                    q.to_string(),
                    QueueShare {
                        allocated: allocated.clamp(0.0, 1.0),
                        deserved,
                    },
                )
            })
            .collect();
            Sample {
                t_s: t,
                pending_jobs: (40.0 * (load - 0.4).max(0.0) + 3.0 * wobble.abs() * 20.0) as u32,
                running_jobs: (10.0 + 35.0 * load) as u32,
                running_pods: (30.0 + 120.0 * load) as u32,
                utilisation: [
                    ("cpu", 0.25 + 0.5 * load),
                    ("memory", 0.2 + 0.4 * load),
                    ("nvidia.com/gpu", (0.35 + 0.6 * load + wobble).min(1.0)),
                ]
                .into_iter()
                .map(|(r, u)| (r.to_string(), u))
                .collect(),
                queues,
            }
        })
        .collect();
    let queues = ["research", "production", "interactive"];
    let jobs: Vec<JobRecord> = (0..300u32)
        .map(|i| {
            let submitted = day * f64::from(i) / 300.0;
            let wait = 30.0 + 4000.0 * hour_load(submitted).powi(3) * f64::from(i % 7) / 7.0;
            let run = 300.0 * (1.0 + f64::from((i * 37) % 23));
            let finished = (i % 29 != 0).then_some(submitted + wait + run);
            JobRecord {
                name: format!("{}/train-{i:04}", queues[i as usize % 3]),
                queue: queues[i as usize % 3].to_string(),
                pods: 1 + i % 8,
                submitted_s: submitted,
                started_s: Some(submitted + wait),
                finished_s: finished,
                phase: if finished.is_some() {
                    "Completed"
                } else {
                    "Running"
                }
                .to_string(),
                wait_s: Some(wait),
                completion_s: finished.map(|f| f - submitted),
                ..Default::default()
            }
        })
        .collect();
    let mut waits: Vec<f64> = jobs.iter().filter_map(|j| j.wait_s).collect();
    let mut completions: Vec<f64> = jobs.iter().filter_map(|j| j.completion_s).collect();
    let mut sessions: Vec<f64> = (0..86_400)
        .map(|i| 0.4 + f64::from(i % 97) / 40.0)
        .collect();
    let completed = completions.len() as u64;
    SimMetrics {
        summary: Summary {
            simulated_s: day,
            makespan_s: day + 5400.0,
            sessions: sessions.len() as u64,
            jobs: jobs.len() as u64,
            completed,
            failed: 0,
            unfinished: jobs.len() as u64 - completed,
            pods_bound: 1350,
            evictions: 2,
            wait_s: stats(&mut waits),
            completion_s: stats(&mut completions),
            session_ms: stats(&mut sessions),
            mean_utilisation: [("cpu", 0.5), ("memory", 0.4), ("nvidia.com/gpu", 0.71)]
                .into_iter()
                .map(|(r, u)| (r.to_string(), u))
                .collect(),
        },
        resources: vec![
            "cpu".to_string(),
            "memory".to_string(),
            "nvidia.com/gpu".to_string(),
        ],
        queues: queues.iter().map(|q| q.to_string()).collect(),
        jobs,
        timeline,
        evictions: vec![
            EvictionRecord {
                t_s: 50_400.0,
                pod: "research/train-0101-worker-0".to_string(),
                reason: "reclaimed by queue production".to_string(),
            },
            EvictionRecord {
                t_s: 50_460.0,
                pod: "research/train-0101-worker-1".to_string(),
                reason: "reclaimed by queue production".to_string(),
            },
        ],
        session_ms: Vec::new(),
        faults: None,
        ..Default::default()
    }
}

fn main() -> ExitCode {
    let out = std::env::args().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/report-sample.html"),
        PathBuf::from,
    );
    let html = render_html(&sample(), "gpu-day (made-up sample)");
    match std::fs::write(&out, html) {
        Ok(()) => {
            println!("{}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}
