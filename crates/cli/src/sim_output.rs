//! What `volcano sim` shows people: a progress bar on stderr while it runs, and a summary
//! table when it is done.

use std::fmt::Write;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressDrawTarget, ProgressStyle};
use volcano_sim::metrics::{SimMetrics, Stats, WaitedRecord};
use volcano_sim::simulate::Progress;
use volcano_sim::simulate::duration::Human;

/// Runs shorter than this (wall-clock) show no bar: it would only flicker.
const SHOW_AFTER: Duration = Duration::from_millis(500);
/// The bar is redrawn at most this often.
const REDRAW_EVERY: Duration = Duration::from_millis(100);

/// A progress bar on stderr, shown only on a terminal and only once a run takes a while.
pub struct ProgressBar {
    bar: Option<indicatif::ProgressBar>,
    started: Instant,
    last: Instant,
    terminal: bool,
}

impl ProgressBar {
    /// A bar not yet shown.
    pub fn new() -> Self {
        let now = Instant::now();
        ProgressBar {
            bar: None,
            started: now,
            last: now,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    /// Shows how far the run has come: virtual time against where it stops at the latest.
    pub fn update(&mut self, p: &Progress) {
        if !self.terminal || self.last.elapsed() < REDRAW_EVERY {
            return;
        }
        self.last = Instant::now();
        if self.bar.is_none() && self.started.elapsed() >= SHOW_AFTER {
            let style = ProgressStyle::with_template("{bar:30} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            let bar =
                indicatif::ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr())
                    .with_style(style);
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            // Towards `--until` when there is one; else the run lasts until the jobs finish.
            let frac = match p.until {
                Some(end) => p.now.as_secs_f64() / end.as_secs_f64().max(1e-9),
                None => p.finished as f64 / p.jobs.max(1) as f64,
            };
            bar.set_position((frac.clamp(0.0, 1.0) * 1000.0) as u64);
            bar.set_message(format!(
                "virtual {} | {}/{} jobs finished",
                Human(Duration::from_secs(p.now.as_secs())),
                p.finished,
                p.jobs
            ));
        }
    }

    /// Takes the bar off the screen.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

fn secs(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        Human(Duration::from_secs(s.round() as u64)).to_string()
    }
}

fn stats_line(s: &Stats, unit: impl Fn(f64) -> String) -> String {
    if s.count == 0 {
        return "-".to_string();
    }
    format!(
        "mean {}  p50 {}  p90 {}  p99 {}  max {}  (n={})",
        unit(s.mean),
        unit(s.p50),
        unit(s.p90),
        unit(s.p99),
        unit(s.max),
        s.count
    )
}

/// The summary table.
pub fn text(m: &SimMetrics) -> String {
    let s = &m.summary;
    let mut out = String::new();
    let mut row = |k: &str, v: String| {
        let _ = writeln!(out, "{k:<14}{v}");
    };
    row("simulated", secs(s.simulated_s));
    row(
        "jobs",
        format!(
            "{} submitted, {} completed, {} failed, {} unfinished",
            s.jobs, s.completed, s.failed, s.unfinished
        ),
    );
    row("makespan", secs(s.makespan_s));
    row("wait", stats_line(&s.wait_s, secs));
    row("completion", stats_line(&s.completion_s, secs));
    row("pods bound", s.pods_bound.to_string());
    row("evictions", s.evictions.to_string());
    row(
        "sessions",
        format!(
            "{}  latency {}",
            s.sessions,
            stats_line(&s.session_ms, |v| format!("{v:.2}ms"))
        ),
    );
    let utilisation: Vec<String> = m
        .resources
        .iter()
        .map(|r| {
            let v = s.mean_utilisation.get(r).copied().unwrap_or(0.0);
            format!("{r} {:.1}%", v * 100.0)
        })
        .collect();
    row("utilisation", utilisation.join("  "));
    if !m.queues.is_empty() {
        out.push_str("\nqueue          mean allocated  mean deserved  jobs\n");
        for q in &m.queues {
            let n = m.timeline.len().max(1) as f64;
            let (alloc, deserved) = m.timeline.iter().fold((0.0, 0.0), |(a, d), sample| {
                let share = sample.queues.get(q);
                (
                    a + share.map_or(0.0, |x| x.allocated),
                    d + share.map_or(0.0, |x| x.deserved),
                )
            });
            let jobs = m.jobs.iter().filter(|j| &j.queue == q).count();
            let _ = writeln!(
                out,
                "{q:<14} {:>14.1}% {:>13.1}%  {jobs}",
                alloc / n * 100.0,
                deserved / n * 100.0
            );
        }
    }
    topology(&mut out, m);
    why_waited(&mut out, m);
    why_failed(&mut out, m);
    if let Some(f) = &m.faults {
        let i = &f.injected;
        let _ = writeln!(
            out,
            "\nfaults (seed {})  controller crashes {}, scheduler crashes {}, conflicts {}, \
             bind failures {}, status failures {}, duplicated watch events {}, reordered batches {}, \
             nodes vanished {}, nodes shrunk {}, foreign pods {}",
            f.seed,
            i.controller_crashes,
            i.scheduler_crashes,
            i.conflicts,
            i.bind_failures,
            i.status_failures,
            i.duplicated_watch_events,
            i.reordered_batches,
            i.nodes_vanished,
            i.nodes_shrunk,
            i.foreign_pods
        );
        if f.violations.is_empty() {
            out.push_str("invariants    all held\n");
        } else {
            let _ = writeln!(out, "invariants    {} broken:", f.violations.len());
            for v in &f.violations {
                let _ = writeln!(out, "  {v}");
            }
        }
    }
    out.trim_end().to_string()
}

/// With HyperNodes: the tiers, the gangs kept inside one tier-1 domain, the waits of jobs
/// with a network topology, and the free GPUs (or CPU) no waiting gang can use.
fn topology(out: &mut String, m: &SimMetrics) {
    let Some(t) = &m.topology else {
        return;
    };
    let tiers: Vec<String> = t
        .tiers()
        .iter()
        .map(|(tier, name, n)| {
            let name = if name.is_empty() {
                format!("tier {tier}")
            } else {
                name.clone()
            };
            format!("{n} {name}")
        })
        .collect();
    let _ = writeln!(out, "\nnetwork topology: HyperNodes {}", tiers.join(", "));
    let mut row = |k: &str, v: String| {
        let _ = writeln!(out, "{k:<14}{v}");
    };
    row(
        "gangs",
        format!(
            "{} of {} that ran stayed inside one tier-1 domain",
            t.gangs_in_one_tier1_domain, t.gangs_ran
        ),
    );
    if t.topology_jobs > 0 {
        row(
            "topology jobs",
            format!(
                "{}  wait {}  under NetworkTopology {}",
                t.topology_jobs,
                stats_line(&t.topology_wait_s, secs),
                secs(t.network_topology_wait_s)
            ),
        );
    }
    let unit = if t.resource == "cpu" { "CPU" } else { "GPUs" };
    let stranded = match t.smallest_waiting_gang {
        Some(need) => format!(
            "{} free {unit} in tier-1 domains too small for the {} waiting gang(s) (smallest needs {})",
            t.stranded, t.gangs_waiting, need
        ),
        None => format!("none: no gang waiting for {unit} at the end"),
    };
    row("stranded", stranded);
}

/// Jobs that waited less than this in all are counted, not listed: nearly every job waits a
/// few seconds while its pods are created, bound and started, and a line for each would hide
/// the jobs that really waited. The JSON and the report list them all.
pub const BRIEF_WAIT_S: f64 = 10.0;

/// Each job that waited under a why-pending message for [`BRIEF_WAIT_S`] or more, longest wait
/// first: the total, and the message it spent longest under as the scheduler wrote it on the
/// PodGroup (the JSON and the report list every message); then how many waited briefly.
fn why_waited(out: &mut String, m: &SimMetrics) {
    let mut waited: Vec<(&str, f64, &WaitedRecord, usize)> = m
        .jobs
        .iter()
        .filter_map(|j| {
            let longest = j
                .waited
                .iter()
                .max_by(|a, b| a.seconds.total_cmp(&b.seconds))?;
            let total = j.waited.iter().map(|w| w.seconds).sum::<f64>();
            Some((j.name.as_str(), total, longest, j.waited.len() - 1))
        })
        .collect();
    if waited.is_empty() {
        return;
    }
    let brief = waited.iter().filter(|w| w.1 < BRIEF_WAIT_S).count();
    waited.retain(|w| w.1 >= BRIEF_WAIT_S);
    waited.sort_by(|a, b| b.1.total_cmp(&a.1));
    let width = waited.iter().map(|w| w.0.len()).max().unwrap_or(0).max(3);
    let _ = writeln!(
        out,
        "\nWhy jobs waited (longest first; every message in -o json)"
    );
    if !waited.is_empty() {
        let _ = writeln!(out, "{:<width$}  {:>9}  reason", "job", "waited");
    }
    for (name, total, longest, others) in waited {
        let more = match others {
            0 => String::new(),
            1 => " (+1 other message)".to_string(),
            n => format!(" (+{n} other messages)"),
        };
        let _ = writeln!(
            out,
            "{name:<width$}  {:>9}  {}{more}",
            secs(total),
            longest.reason
        );
    }
    if brief > 0 {
        let jobs = if brief == 1 { "job" } else { "jobs" };
        let _ = writeln!(
            out,
            "(and {brief} {jobs} that waited under {}s each)",
            BRIEF_WAIT_S
        );
    }
}

/// Each job that failed: what failed it (a pod's exit, a lost node, an eviction) and the
/// phases the job controller took it through.
fn why_failed(out: &mut String, m: &SimMetrics) {
    let failed: Vec<_> = m
        .jobs
        .iter()
        .filter_map(|j| j.failure.as_ref().map(|f| (j, f)))
        .collect();
    if failed.is_empty() {
        return;
    }
    let width = failed
        .iter()
        .map(|(j, _)| j.name.len())
        .max()
        .unwrap_or(0)
        .max(3);
    let _ = writeln!(
        out,
        "\nWhy jobs failed\n{:<width$}  {:<10}  {:<10}  {:>4}  detail",
        "job", "phase", "reason", "exit"
    );
    for (j, f) in failed {
        let exit = f
            .exit_code
            .map_or_else(|| "-".to_string(), |c| c.to_string());
        let _ = writeln!(
            out,
            "{:<width$}  {:<10}  {:<10}  {exit:>4}  {}",
            j.name, j.phase, f.reason, f.message
        );
    }
}
