//! `volcano sim`: a scenario (or a generated workload) over virtual time: load, check, run the
//! simulation, print its figures, write the report.

use std::path::{Path, PathBuf};
use std::time::Duration;

use volcano_api::Scenario;
use volcano_api::scenario::{LoadError, load_paths, queue_warnings};
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_scheduler::conf::DEFAULT_SCHEDULER_CONF;
use volcano_sim::faults::FaultPlan;
use volcano_sim::generate::{self, GenerateSpec};
use volcano_sim::metrics::SimMetrics;
use volcano_sim::simulate::{self, SimOptions, duration};

use crate::schedule::{admit_jobs, configuration};
use crate::sim_output::{self, ProgressBar};
use crate::{Failure, Format, output};

/// Flags of `volcano sim`.
#[derive(clap::Args, Debug)]
pub struct SimArgs {
    /// Scenario file or directory (every *.yaml in it); repeatable. Exactly one of -f and
    /// --generate.
    #[arg(short = 'f', long = "file")]
    pub files: Vec<PathBuf>,
    /// Scheduler configuration (volcano-scheduler.conf, or a ConfigMap holding one).
    #[arg(long)]
    pub conf: Option<PathBuf>,
    /// Virtual time between scheduling sessions (a session runs only when something changed).
    #[arg(long, default_value = "1s", value_parser = positive_duration)]
    pub schedule_period: Duration,
    /// Virtual time from a pod's binding to its running.
    #[arg(long, default_value = "1s", value_parser = any_duration)]
    pub pod_startup: Duration,
    /// Run until this virtual time (default: until every job has finished).
    #[arg(long, value_parser = positive_duration)]
    pub until: Option<Duration>,
    /// Never run beyond this virtual time.
    #[arg(long, default_value = "30d", value_parser = positive_duration)]
    pub max_time: Duration,
    /// Virtual time between samples of utilisation, queue shares and pending jobs.
    #[arg(long, default_value = "60s", value_parser = positive_duration)]
    pub sample_every: Duration,
    /// Seed of the workload generator (--generate).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output format: a summary table, or the measurements as one JSON object.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: Format,
    /// Also write an HTML report of the run to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Generate the workload from this specification instead of reading -f
    /// (`--generate help` lists the keys).
    #[arg(long)]
    pub generate: Option<String>,
    /// Put the wall-clock session latencies in the JSON too. Without it they are 0 there, so
    /// the JSON depends on the input alone (the text summary and the report always have them).
    #[arg(long)]
    pub timings: bool,
    /// Inject faults and check the invariants after every step: `key=value,...` over
    /// defaults that use every fault (`--faults seed=7`; `--faults none,conflict=10%` for one).
    /// Keys: seed, controller-crash, scheduler-crash, conflict, bind-failure, status-failure,
    /// duplicate-watch, reorder-watch, node-vanish, node-shrink, foreign-pods, window.
    /// A broken invariant is reported and exits 1.
    #[arg(long, value_parser = fault_plan)]
    pub faults: Option<FaultPlan>,
    /// How long a pod runs when neither it, its Job nor its PodGroup has a
    /// `sim.volcano-rs.io/duration` or `fail-after` (a scenario borrowed from a cluster).
    /// Without it such a pod runs until something ends it.
    #[arg(long, value_parser = positive_duration)]
    pub default_duration: Option<Duration>,
}

fn fault_plan(text: &str) -> Result<FaultPlan, String> {
    FaultPlan::parse(text).map_err(|e| e.to_string())
}

/// The metrics with every wall-clock figure (session latency) set to 0, their count kept.
fn without_timings(m: &volcano_sim::metrics::SimMetrics) -> volcano_sim::metrics::SimMetrics {
    let mut m = m.clone();
    m.session_ms.iter_mut().for_each(|v| *v = 0.0);
    m.summary.session_ms = volcano_sim::metrics::Stats {
        count: m.summary.session_ms.count,
        ..Default::default()
    };
    m
}

fn any_duration(text: &str) -> Result<Duration, String> {
    duration::parse(text).map_err(|e| e.to_string())
}

fn positive_duration(text: &str) -> Result<Duration, String> {
    match any_duration(text)? {
        d if d.is_zero() => Err("must be more than zero".to_string()),
        d => Ok(d),
    }
}

/// Runs the simulation.
pub fn run(args: &SimArgs) -> Result<(), Failure> {
    if args.generate.as_deref() == Some("help") {
        print!("{}", generate::HELP);
        return Ok(());
    }
    let (mut scenario, title) = workload(args)?;
    admit_jobs(&mut scenario)?;
    for warning in queue_warnings(&scenario.objects) {
        tracing::warn!("{warning}");
    }
    let conf = configuration(args.conf.as_deref(), &scenario)?;
    let conf_text = configuration_text(args.conf.as_deref(), &scenario)?;
    let opts = SimOptions {
        schedule_period: args.schedule_period,
        pod_startup: args.pod_startup,
        until: args.until,
        max_time: args.max_time,
        sample_every: args.sample_every,
        timings: true,
        faults: args.faults.clone(),
        check_snapshots: false,
        default_duration: args.default_duration,
    };
    let controllers = ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    };
    let mut bar = ProgressBar::new();
    let result = simulate::simulate(
        scenario.objects,
        &scenario.sources,
        &conf,
        &opts,
        controllers,
        &mut |p| bar.update(p),
    );
    bar.finish();
    let mut metrics = result.map_err(|e| {
        if e.is_input() {
            Failure::Input(e.to_string())
        } else {
            Failure::Internal(e.into())
        }
    })?;
    metrics.seed = args.seed;
    metrics.scheduler_conf = conf_text;
    if let Some(path) = &args.report {
        write_report(path, &metrics, &title)?;
    }
    let text = match args.output {
        Format::Json if args.timings => {
            serde_json::to_string_pretty(&metrics).map_err(|e| Failure::Internal(e.into()))?
        }
        Format::Json => serde_json::to_string_pretty(&without_timings(&metrics))
            .map_err(|e| Failure::Internal(e.into()))?,
        Format::Text => sim_output::text(&metrics),
    };
    output::print(&text)?;
    match metrics.faults.as_ref().map(|f| f.violations.as_slice()) {
        Some([first, rest @ ..]) => Err(Failure::Internal(anyhow::anyhow!(
            "{} invariant(s) broken under faults; the first: {first}",
            rest.len() + 1
        ))),
        _ => Ok(()),
    }
}

/// The scenario to run and a title for the report: the files, or a generated workload.
fn workload(args: &SimArgs) -> Result<(Scenario, String), Failure> {
    match (&args.generate, args.files.is_empty()) {
        (Some(_), false) => Err(Failure::Input(
            "give either -f FILE or --generate SPEC, not both".to_string(),
        )),
        (None, true) => Err(Failure::Input(
            "give a scenario with -f FILE, or a workload with --generate SPEC".to_string(),
        )),
        (Some(spec_text), true) => {
            let spec: GenerateSpec = spec_text
                .parse()
                .map_err(|e| Failure::Input(format!("--generate: {e}")))?;
            let objects = generate::generate(&spec, args.seed);
            let scenario = Scenario {
                objects,
                ..Default::default()
            };
            Ok((
                scenario,
                format!("generated {spec_text} (seed {})", args.seed),
            ))
        }
        (None, false) => {
            let scenario =
                load_paths(&args.files).map_err(|e: LoadError| Failure::Input(e.to_string()))?;
            let names: Vec<String> = args.files.iter().map(|p| p.display().to_string()).collect();
            Ok((scenario, names.join(", ")))
        }
    }
}

/// The text of the scheduler configuration in use, as given (a `--conf` file, the scenario's
/// ConfigMap) or Volcano's default, so a run's output says what it ran under.
fn configuration_text(path: Option<&Path>, scenario: &Scenario) -> Result<String, Failure> {
    if let Some(path) = path {
        return std::fs::read_to_string(path).map_err(|e| {
            Failure::Input(format!(
                "{}: cannot read the scheduler configuration: {e}",
                path.display()
            ))
        });
    }
    Ok(match &scenario.scheduler_conf {
        Some(c) => c.text.clone(),
        None => DEFAULT_SCHEDULER_CONF.to_string(),
    })
}

/// Writes the HTML report; a path that cannot be written is the user's to fix (exit 2).
fn write_report(path: &Path, metrics: &SimMetrics, title: &str) -> Result<(), Failure> {
    let html = volcano_sim::report::render_html(metrics, title);
    std::fs::write(path, html).map_err(|e| {
        Failure::Input(format!(
            "--report {}: cannot write the report: {e}",
            path.display()
        ))
    })
}
