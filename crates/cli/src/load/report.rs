//! The report of a load run: one JSON object (`--output json`) or a summary for people. The
//! fields are described on [`Report`], which is what the JSON holds.

use std::fmt::Write;

use serde::Serialize;

use super::apimetrics::RequestCount;
use super::nodes::NodesReport;
use super::procstat::Usage;
use super::stats::Latency;

/// Rows of requests the summary shows (the JSON holds them all).
const TOP_REQUESTS: usize = 12;

/// The report of a run. Times are from this machine's clock; latency is from the instant an
/// arrival's first create request was sent (a bare pod's, a gang's PodGroup's, a Job's) to the
/// first watch event showing the pod's `spec.nodeName`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The run's id: every object it wrote carries the label `volcano-load/run=<run>`.
    pub run: String,
    /// The namespace of the pods.
    pub namespace: String,
    /// `spec.schedulerName` of the pods and Jobs.
    pub scheduler_name: String,
    /// What arrived: `pods`, `gangs` (a PodGroup and its pods) or `jobs` (Volcano Jobs).
    pub workload: String,
    /// Pods of each gang or Job (1 for bare pods).
    pub gang_size: u32,
    /// The nodes: asked for, created, updated, reused, and the seconds it took.
    pub nodes: NodesReport,
    /// How the arrivals went.
    pub arrivals: ArrivalsReport,
    /// What became of the pods.
    pub pods: PodsReport,
    /// Creation-to-binding latency of the bound pods; absent when none was bound.
    pub latency: Option<Latency>,
    /// Pods bound per second between the first and the last binding.
    pub throughput_per_s: Option<f64>,
    /// Seconds from the last arrival to the last binding.
    pub drain_seconds: Option<f64>,
    /// What the API server did during the run (from its `/metrics`).
    pub api: ApiReport,
    /// CPU and memory of the processes given by `--scheduler-pid`, `--controller-pid` and
    /// `--apiserver-pid`, over the run.
    pub processes: Vec<Usage>,
    /// The first distinct errors of create requests.
    pub errors: Vec<String>,
}

/// The arrivals.
#[derive(Debug, Clone, Serialize)]
pub struct ArrivalsReport {
    /// Arrivals asked for (pods, gangs or Jobs).
    pub requested: usize,
    /// Arrivals per second asked for.
    pub target_rate: f64,
    /// Arrivals per second achieved, between the first and the last.
    pub achieved_rate: Option<f64>,
    /// Seconds from the first arrival to the last.
    pub seconds: f64,
    /// PodGroups or Jobs the server accepted (0 for bare pods).
    pub groups_created: usize,
    /// PodGroups or Jobs it refused.
    pub groups_failed: usize,
}

/// The pods.
#[derive(Debug, Clone, Serialize)]
pub struct PodsReport {
    /// Pods created (for Jobs: accepted Jobs times their size, which the controllers make).
    pub created: usize,
    /// Pods refused by the server (or not sent, their PodGroup or Job refused).
    pub failed: usize,
    /// Pods of the run the watch saw.
    pub seen: usize,
    /// Pods bound.
    pub bound: usize,
    /// Pods created but not bound when the run ended.
    pub unbound: usize,
    /// Whether the run stopped waiting at `--timeout` with pods unbound.
    pub timed_out: bool,
}

/// The API server's figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ApiReport {
    /// Whether `/metrics` could be read before and after the run.
    pub available: bool,
    /// Why not, when it could not.
    pub error: Option<String>,
    /// All requests served during the run (everyone's, not only this command's).
    pub requests_total: u64,
    /// Requests by verb (kubectl's word) and resource (`pods/binding`), most first.
    pub requests: Vec<RequestCount>,
    /// CPU seconds the API server used during the run.
    pub cpu_seconds: Option<f64>,
    /// That per bound pod, in milliseconds.
    pub cpu_ms_per_bound_pod: Option<f64>,
    /// How long after the last binding the figures were read: once the writes (events,
    /// status) had stopped, at most 10 s.
    pub settle_seconds: Option<f64>,
}

fn mib(bytes: u64) -> String {
    // Memory sizes stay far below 2^52 bytes, where the conversion is exact.
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn opt(x: Option<f64>, unit: &str) -> String {
    x.map_or_else(|| "-".to_string(), |x| format!("{x}{unit}"))
}

impl Report {
    /// The summary for people.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let what = match self.workload.as_str() {
            "pods" => "bare pods".to_string(),
            w => format!("{w} of {}", self.gang_size),
        };
        let _ = writeln!(
            out,
            "volcano load: {} {what} at {}/s on {} nodes, scheduler {:?}, namespace {} (run {})",
            self.arrivals.requested,
            self.arrivals.target_rate,
            self.nodes.requested,
            self.scheduler_name,
            self.namespace,
            self.run
        );
        let n = &self.nodes;
        let _ = writeln!(
            out,
            "  nodes       {} ready in {} s ({} created, {} updated, {} reused)",
            n.requested, n.seconds, n.created, n.updated, n.reused
        );
        let a = &self.arrivals;
        let _ = writeln!(
            out,
            "  arrivals    {} in {} s: {} per second",
            a.requested,
            a.seconds,
            opt(a.achieved_rate, "")
        );
        let p = &self.pods;
        let _ = writeln!(
            out,
            "  pods        {} created, {} failed, {} bound, {} unbound{}",
            p.created,
            p.failed,
            p.bound,
            p.unbound,
            if p.timed_out { " at the timeout" } else { "" }
        );
        if let Some(l) = &self.latency {
            let _ = writeln!(
                out,
                "  latency     p50 {} ms, p90 {} ms, p99 {} ms, max {} ms (mean {} ms)",
                l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms, l.mean_ms
            );
        }
        if p.bound > 0 {
            let _ = writeln!(
                out,
                "  throughput  {} pods bound per second; drain {} after the last arrival",
                opt(self.throughput_per_s, ""),
                opt(self.drain_seconds, " s")
            );
        }
        self.api_text(&mut out);
        for u in &self.processes {
            let _ = writeln!(
                out,
                "  {:<11} pid {}: CPU {:.2} s; RSS {} at start, {} at end, {} peak{}",
                u.name,
                u.pid,
                u.cpu_seconds,
                mib(u.rss_start_bytes),
                mib(u.rss_end_bytes),
                mib(u.rss_peak_bytes),
                if u.exited {
                    " (exited during the run)"
                } else {
                    ""
                }
            );
        }
        for e in &self.errors {
            let _ = writeln!(out, "  error       {e}");
        }
        out
    }

    fn api_text(&self, out: &mut String) {
        let api = &self.api;
        if !api.available {
            let why = api.error.as_deref().unwrap_or("unknown");
            let _ = writeln!(out, "  api server  no figures: {why}");
            return;
        }
        let _ = writeln!(
            out,
            "  api server  CPU {} ({} per bound pod); {} requests (read {} after the last binding, once writes stopped)",
            opt(api.cpu_seconds.map(|s| (s * 100.0).round() / 100.0), " s"),
            opt(api.cpu_ms_per_bound_pod, " ms"),
            api.requests_total,
            opt(api.settle_seconds, " s")
        );
        for r in api.requests.iter().take(TOP_REQUESTS) {
            let _ = writeln!(out, "    {:>8}  {} {}", r.count, r.verb, r.resource);
        }
        if api.requests.len() > TOP_REQUESTS {
            let rest: u64 = api
                .requests
                .iter()
                .skip(TOP_REQUESTS)
                .map(|r| r.count)
                .sum();
            let _ = writeln!(out, "    {rest:>8}  (other)");
        }
    }
}
