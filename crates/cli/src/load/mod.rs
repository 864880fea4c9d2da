//! `volcano load`: the scheduler measured end to end on a real API server. It makes nodes
//! (no kubelet behind them), then pods arriving at a steady rate (bare pods, gangs of a
//! PodGroup and its pods, or Volcano Jobs), and reports creation-to-binding latency, the
//! throughput, the API server's requests and CPU (from its `/metrics`), and the CPU and
//! memory of the processes named. It measures any scheduler that binds the pods:
//! `--scheduler-name default-scheduler` gives kube-scheduler's figures.
//!
//! The run owns what it writes: every object carries `volcano-load/run=<id>` and is deleted
//! at the end (unless `--keep`); nodes are kept for the next run unless `--delete-nodes`.

mod apimetrics;
mod arrivals;
mod bindings;
mod drive;
mod nodes;
mod objects;
mod procstat;
mod report;
mod stats;

use std::path::PathBuf;

use volcano_api::{keys, quantity};

use crate::{Failure, Format};
use arrivals::{Plan, Workload};
use objects::Shapes;

/// Flags of `volcano load`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
The API server is found as kubectl finds it: --kubeconfig, else $KUBECONFIG, else
~/.kube/config. The identity needs to write nodes (and their status), pods, PodGroups and
Jobs, and to read /metrics for the API server's figures. The load nodes have no kubelet: where
a node lifecycle controller runs, it marks them NotReady after its grace period (40 s by
default), so measure on a control plane without one (the real-cluster test tier, `volcano up`);
a later run finds them stale and sets them Ready again.

JSON (--output json), one object:
  run, namespace, scheduler_name, workload (pods|gangs|jobs), gang_size
  nodes        {requested, created, updated, reused, seconds}
  arrivals     {requested, target_rate, achieved_rate, seconds, groups_created, groups_failed}
  pods         {created, failed, seen, bound, unbound, timed_out}
  latency      {count, p50_ms, p90_ms, p99_ms, max_ms, mean_ms}   (null: nothing bound)
  throughput_per_s, drain_seconds
  api          {available, error, requests_total, requests: [{verb, resource, count}],
                cpu_seconds, cpu_ms_per_bound_pod, settle_seconds}
  processes    [{name, pid, cpu_seconds, rss_start_bytes, rss_end_bytes, rss_peak_bytes,
                 samples, exited}]
  errors       [first distinct create errors]
Latency runs from the instant an arrival's first create request is sent (a pod's, a gang's
PodGroup's, a Job's) to the first watch event that shows the pod's spec.nodeName.

Examples:
  volcano load --nodes 1000 --pods 10000 --rate 100 --scheduler-pid $(pgrep -f 'volcano scheduler')
  volcano load --nodes 1000 --pods 5000 --gang-size 5 --rate 20 -o json
  volcano load --pods 2000 --rate 100 --scheduler-name default-scheduler")]
pub struct LoadArgs {
    /// Kubeconfig file [default: $KUBECONFIG, then ~/.kube/config, then in-cluster].
    #[arg(short = 'k', long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Nodes `load-node-<i>` to have (made if missing; 0: use the cluster's nodes as they are).
    #[arg(long, default_value_t = 1000)]
    pub nodes: usize,
    /// CPU of each node.
    #[arg(long = "node-cpu", default_value = "32")]
    pub node_cpu: String,
    /// Memory of each node.
    #[arg(long = "node-memory", default_value = "256Gi")]
    pub node_memory: String,
    /// Pods each node takes.
    #[arg(long = "node-pods", default_value_t = 110)]
    pub node_pods: u32,
    /// Pods to create in all (with --gang-size, a multiple of it).
    #[arg(long, default_value_t = 1000)]
    pub pods: usize,
    /// Arrivals per second: pods, or gangs (Jobs) with --gang-size.
    #[arg(long, default_value_t = 100.0)]
    pub rate: f64,
    /// Pods per gang: each arrival is a PodGroup (minMember this) and its pods.
    #[arg(long = "gang-size", value_parser = clap::value_parser!(u32).range(1..))]
    pub gang_size: Option<u32>,
    /// Arrivals are Volcano Jobs (one task, --gang-size replicas, all needed); the
    /// controller-manager makes their pods.
    #[arg(long)]
    pub jobs: bool,
    /// `spec.schedulerName` of the pods (`default-scheduler` measures kube-scheduler).
    #[arg(long = "scheduler-name", default_value = keys::DEFAULT_SCHEDULER_NAME)]
    pub scheduler_name: String,
    /// CPU each pod requests.
    #[arg(long = "pod-cpu", default_value = "100m")]
    pub pod_cpu: String,
    /// Memory each pod requests.
    #[arg(long = "pod-memory", default_value = "128Mi")]
    pub pod_memory: String,
    /// Namespace of the pods (created if missing).
    #[arg(short = 'n', long, default_value = "load")]
    pub namespace: String,
    /// Seconds to wait for the last bindings after the last arrival.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Keep the pods, PodGroups and Jobs of the run.
    #[arg(long)]
    pub keep: bool,
    /// Delete the load nodes at the end.
    #[arg(long = "delete-nodes")]
    pub delete_nodes: bool,
    /// Process id of the scheduler, for its CPU and memory (read from /proc on this machine).
    #[arg(long = "scheduler-pid")]
    pub scheduler_pid: Option<u32>,
    /// Process id of the controller manager.
    #[arg(long = "controller-pid")]
    pub controller_pid: Option<u32>,
    /// Process id of the API server (its CPU is read from /metrics too, where allowed).
    #[arg(long = "apiserver-pid")]
    pub apiserver_pid: Option<u32>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: Format,
}

impl LoadArgs {
    /// The run the flags ask for, refusing flags that cannot make one.
    fn plan(&self) -> Result<Plan, Failure> {
        let bad = |m: String| Failure::Input(m);
        if !(self.rate.is_finite() && self.rate > 0.0) {
            return Err(bad(format!(
                "--rate {}: must be a positive number",
                self.rate
            )));
        }
        for (flag, value) in [("--node-cpu", &self.node_cpu), ("--pod-cpu", &self.pod_cpu)] {
            quantity::parse_milli(value).map_err(|e| bad(format!("{flag} {value:?}: {e}")))?;
        }
        for (flag, value) in [
            ("--node-memory", &self.node_memory),
            ("--pod-memory", &self.pod_memory),
        ] {
            quantity::parse_value(value).map_err(|e| bad(format!("{flag} {value:?}: {e}")))?;
        }
        for (flag, pid) in [
            ("--scheduler-pid", self.scheduler_pid),
            ("--controller-pid", self.controller_pid),
            ("--apiserver-pid", self.apiserver_pid),
        ] {
            if let Some(pid) = pid
                && procstat::read(pid).is_none()
            {
                return Err(bad(format!(
                    "{flag} {pid}: cannot read /proc/{pid}/stat and /proc/{pid}/status \
                     (no such process on this machine?)"
                )));
            }
        }
        let workload = match (self.gang_size, self.jobs) {
            (None, false) => Workload::Pods,
            (Some(n), false) => Workload::Gangs(n),
            (n, true) => Workload::Jobs(n.unwrap_or(1)),
        };
        let size = workload.pods_per_arrival();
        if !self.pods.is_multiple_of(size) {
            return Err(bad(format!(
                "--pods {} is not a multiple of --gang-size {size}",
                self.pods
            )));
        }
        Ok(Plan {
            run: run_id(),
            workload,
            count: self.pods / size,
            rate: self.rate,
            shapes: Shapes {
                node_cpu: self.node_cpu.clone(),
                node_memory: self.node_memory.clone(),
                node_pods: self.node_pods,
                pod_cpu: self.pod_cpu.clone(),
                pod_memory: self.pod_memory.clone(),
                scheduler_name: self.scheduler_name.clone(),
            },
        })
    }
}

/// A short id, unique enough between runs of one cluster: milliseconds of the clock in
/// base 36 (the last six digits turn over every 25 days).
fn run_id() -> String {
    let mut ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut id = Vec::new();
    for _ in 0..6 {
        id.push(digits[(ms % 36) as usize]);
        ms /= 36;
    }
    id.reverse();
    String::from_utf8_lossy(&id).into_owned()
}

/// Runs `volcano load`.
pub fn run(args: &LoadArgs) -> Result<(), Failure> {
    let plan = args.plan()?;
    // Arrivals, the watch and the samplers run side by side; two workers keep a slow create
    // answer from delaying the watch's timestamps.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Internal(anyhow::anyhow!("cannot start the async runtime: {e}")))?;
    let report = runtime.block_on(drive::drive(args, &plan))?;
    let out = match args.output {
        Format::Json => {
            serde_json::to_string_pretty(&report).map_err(|e| Failure::Internal(e.into()))? + "\n"
        }
        Format::Text => report.text(),
    };
    print!("{out}");
    Ok(())
}
