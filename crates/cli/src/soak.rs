//! `volcano sim soak`: churn for a long virtual time, sampled minute by minute.

use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_sim::soak::{self, SoakError, SoakReport, SoakSpec};

use crate::{Failure, Format};

/// Flags of `volcano sim soak`.
#[derive(clap::Args, Debug)]
pub struct SoakArgs {
    /// Volcano Jobs in the cluster, two running pods each.
    #[arg(long, default_value_t = 1_000)]
    pub jobs: u32,
    /// Pod phase changes per virtual minute, each with a PodGroup phase change.
    #[arg(long, default_value_t = 20_000)]
    pub pods_per_minute: u32,
    /// Virtual minutes to run.
    #[arg(long, default_value_t = 60)]
    pub minutes: u32,
    /// Percent of the controllers' writes answered by a conflict (one write in ⌊100/p⌋).
    #[arg(long, default_value_t = 10)]
    pub conflicts: u32,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: Format,
}

/// Runs `volcano sim soak`.
pub fn run(args: &SoakArgs) -> Result<(), Failure> {
    let spec = SoakSpec {
        jobs: args.jobs,
        pods_per_minute: args.pods_per_minute,
        minutes: args.minutes,
        conflict_percent: args.conflicts,
    };
    let opts = ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    };
    let report = soak::run(&spec, opts).map_err(|e| match e {
        SoakError::Spec(msg) => Failure::Input(msg),
        other => Failure::Internal(other.into()),
    })?;
    crate::output::print_report(args.output, &report, text)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn text(r: &SoakReport) -> String {
    let s = &r.spec;
    let mut out = format!(
        "soak: {} jobs ({} objects), {} pod changes a minute for {} minutes, {}% of writes conflicting\n",
        s.jobs, r.objects, s.pods_per_minute, s.minutes, s.conflict_percent
    );
    out += "minute  writes     conflicts  job-queue peak  queue-queue peak  job-queue now  sessions  RSS MiB\n";
    for m in &r.samples {
        out += &format!(
            "{:>6}  {:>9}  {:>9}  {:>14}  {:>16}  {:>13}  {:>8}  {:>7.1}\n",
            m.minute,
            m.writes,
            m.conflicts,
            m.job_queue_peak,
            m.queue_queue_peak,
            m.job_queue_now,
            m.sessions,
            mib(m.rss_bytes)
        );
    }
    out += &format!(
        "resident memory: {:.1} MiB after the first minute, {:.1} MiB at the end ({:+.1}%)\n",
        mib(r.rss_after_first_minute_bytes),
        mib(r.rss_at_end_bytes),
        r.rss_growth_percent
    );
    out
}
