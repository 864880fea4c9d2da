//! Controller load: 20,000 PodGroup updates a minute (with as many pod phase changes), one
//! write in three answered by a conflict. Prints the work queues' peaks and the process's
//! peak memory.
//!
//! `cargo run --release -p volcano-sim --example controller_churn [JOBS]`

use std::time::{Duration, Instant as WallClock};

use volcano_controllers::admission;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::time::Instant;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_sim::Cluster;
use volcano_sim::churn::{self, Churn};

fn options() -> ManagerOptions {
    ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    }
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let jobs: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1000);
    let mut text = String::from(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"1000\", memory: 1Ti, pods: \"100000\"}}\n",
    );
    for i in 0..jobs {
        text.push_str(&format!(
            "---\napiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: j{i}, namespace: default}}\nspec:\n  tasks:\n  - name: w\n    replicas: 2\n    template: {{spec: {{containers: [{{name: c, image: x, resources: {{requests: {{cpu: 100m}}}}}}]}}}}\n"
        ));
    }
    let mut scenario = volcano_api::scenario::load_str(std::path::Path::new("churn.yaml"), &text)?;
    for j in &mut scenario.objects.jobs {
        admission::default_job(j);
    }
    let mut cluster = Cluster::new(scenario.objects, options(), Instant(Duration::from_secs(1)));
    cluster.settle()?;
    let start = WallClock::now();
    let report = churn::run(
        cluster.store.into_objects(),
        options(),
        Churn {
            updates: 20_000,
            over: Duration::from_secs(60),
            conflict_every: 3,
        },
    );
    let took = start.elapsed();
    println!("{report:#?}");
    println!("wall time: {took:.2?}");
    if let Some(kib) = peak_rss_kib() {
        println!("peak RSS (VmHWM): {} MiB", kib / 1024);
    }
    Ok(())
}
