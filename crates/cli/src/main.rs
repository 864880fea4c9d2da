//! The `volcano` command. Thin: it parses flags and calls the crates.
//!
//! Exit status: 0 when the command ran, 2 for bad input (with one message naming the file,
//! document, object and field), 1 for an internal error.

mod alloc_vs_load;
mod bench;
mod crds;
mod load;
mod output;
mod runtime;
mod schedule;
mod sim;
mod sim_output;
mod soak;
#[cfg(feature = "local-cluster")]
mod up;
mod vcctl;
mod webhook;

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use clap::{Parser, Subcommand, ValueEnum};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// volcano-rs: a Volcano-compatible batch scheduler.
#[derive(Parser)]
#[command(name = "volcano", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Schedule a scenario (Kubernetes YAML) and print what Volcano would decide.
    Schedule(ScheduleArgs),
    /// Simulate a workload over virtual time: the controllers, kubelets and scheduling sessions.
    Sim(Box<SimCommand>),
    /// Run the scheduler against a Kubernetes API server.
    Scheduler(Box<runtime::SchedulerArgs>),
    /// Run the controllers (Jobs, PodGroups, Queues, Commands) against a Kubernetes API server.
    ControllerManager(Box<runtime::ControllerManagerArgs>),
    /// Serve Volcano's admission webhooks (Jobs, Queues, PodGroups, Pods, CronJobs, JobFlows)
    /// over HTTPS.
    WebhookManager(Box<runtime::WebhookManagerArgs>),
    /// Print the CustomResourceDefinitions of Volcano's kinds, as YAML.
    Crds(crds::CrdsArgs),
    /// Volcano Jobs on a cluster: run, list, view, suspend, resume, delete (as vcctl).
    #[command(subcommand)]
    Job(vcctl::JobCommand),
    /// Queues on a cluster: create, list, get, operate, delete (as vcctl).
    #[command(subcommand)]
    Queue(vcctl::QueueCommand),
    /// JobFlows on a cluster: create, list, get, describe, delete (as vcctl).
    #[command(subcommand)]
    Jobflow(vcctl::FlowCommand),
    /// JobTemplates on a cluster: create, list, get, describe, delete (as vcctl).
    #[command(subcommand)]
    Jobtemplate(vcctl::FlowCommand),
    /// A local control plane in one process: API server, simulated nodes, scheduler and
    /// controllers; writes a kubeconfig for kubectl.
    #[cfg(feature = "local-cluster")]
    Up(Box<up::UpArgs>),
    /// Not in this build: the local control plane (cargo feature `local-cluster`).
    #[cfg(not(feature = "local-cluster"))]
    Up(NoLocalCluster),
    /// Time scheduling sessions over a synthetic cluster held in memory.
    Bench(Box<bench::BenchArgs>),
    /// Load a cluster: nodes, then pods, gangs or Jobs at a steady rate; report
    /// creation-to-binding latency, throughput, API requests and process CPU and memory.
    Load(Box<load::LoadArgs>),
}

/// `volcano sim`: a run of a scenario or a generated workload, or one of its experiments.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SimCommand {
    #[command(subcommand)]
    experiment: Option<SimExperiment>,
    #[command(flatten)]
    run: sim::SimArgs,
}

/// Experiments of `volcano sim`.
#[derive(Subcommand, Debug)]
enum SimExperiment {
    /// The arrival-only GPU allocation experiment (FGD, ATC'23): allocated GPU share against
    /// arrived load.
    AllocVsLoad(alloc_vs_load::AllocVsLoadArgs),
    /// A running cluster under steady churn for a long virtual time, with conflicting writes:
    /// work-queue lengths and resident memory, minute by minute.
    Soak(soak::SoakArgs),
}

/// `volcano up` in a build without the local control plane: any flags, and a refusal that
/// says why, rather than clap's "unrecognized subcommand".
#[cfg(not(feature = "local-cluster"))]
#[derive(clap::Args, Debug)]
struct NoLocalCluster {
    /// `volcano up`'s flags, ignored.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    _flags: Vec<String>,
}

#[cfg(not(feature = "local-cluster"))]
impl NoLocalCluster {
    fn run(&self) -> Result<(), Failure> {
        Err(Failure::Input(
            "this build of volcano has no local control plane: `volcano up` needs the cargo \
             feature `local-cluster` (a default feature; this binary was built without it)"
                .to_string(),
        ))
    }
}

/// Output format.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum Format {
    /// One JSON object (the stable contract of SCENARIO.md).
    Json,
    /// A summary for people.
    Text,
}

/// Flags of `volcano schedule`.
#[derive(clap::Args, Debug)]
pub struct ScheduleArgs {
    /// Scenario file or directory (every *.yaml in it); repeatable.
    #[arg(short = 'f', long = "file", required = true)]
    pub files: Vec<PathBuf>,
    /// Scheduler configuration (volcano-scheduler.conf, or a ConfigMap holding one); overrides
    /// the scenario's ConfigMap.
    #[arg(long)]
    pub conf: Option<PathBuf>,
    /// Number of sessions to run (default: until a session changes nothing, at most 10).
    #[arg(long)]
    pub sessions: Option<u32>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: Format,
}

/// An error with the exit status it deserves.
pub enum Failure {
    /// Bad input: exit 2.
    Input(String),
    /// Anything else: exit 1.
    Internal(anyhow::Error),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let service_level = match &cli.command {
        Command::Scheduler(a) => Some(a.common.shared.log_level()),
        Command::ControllerManager(a) => Some(a.common.shared.log_level()),
        Command::WebhookManager(a) => Some(a.shared.log_level()),
        #[cfg(feature = "local-cluster")]
        Command::Up(_) => Some(tracing::Level::INFO),
        _ => None,
    };
    if let Some(level) = service_level {
        // A service logs what it does, with times, every line: a condition that comes back
        // an hour later is news. `-v` raises volcano-rs' own lines only: the libraries' debug
        // output (HTTP, TLS) would drown them.
        let filter = Targets::new()
            .with_default(LevelFilter::INFO)
            .with_target("volcano", level);
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_max_level(level)
            .with_target(false)
            .finish()
            .with(filter)
            .init();
    } else {
        let once = OncePerLine::default();
        tracing_subscriber::fmt()
            .with_writer(move || once.clone())
            .with_max_level(tracing::Level::WARN)
            .with_target(false)
            .without_time()
            .init();
    }
    let result = match cli.command {
        Command::Schedule(args) => schedule::run(&args),
        Command::Sim(cmd) => match cmd.experiment {
            Some(SimExperiment::AllocVsLoad(args)) => alloc_vs_load::run(&args),
            Some(SimExperiment::Soak(args)) => soak::run(&args),
            None => sim::run(&cmd.run),
        },
        Command::Scheduler(args) => runtime::run_scheduler(&args),
        Command::ControllerManager(args) => runtime::run_controller_manager(&args),
        // The webhook's preamble is run here, so its run function needs not repeat it.
        Command::WebhookManager(args) => {
            let ignored = args.ignored_flags();
            if runtime::preamble("volcano-webhook-manager", &args.shared, &ignored) {
                Ok(())
            } else {
                webhook::run(&args)
            }
        }
        Command::Crds(args) => crds::run(&args),
        Command::Job(cmd) => vcctl::run_job(cmd),
        Command::Queue(cmd) => vcctl::run_queue(cmd),
        Command::Jobflow(cmd) => vcctl::run_job_flow(cmd),
        Command::Jobtemplate(cmd) => vcctl::run_job_template(cmd),
        #[cfg(feature = "local-cluster")]
        Command::Up(args) => up::run(&args),
        #[cfg(not(feature = "local-cluster"))]
        Command::Up(absent) => absent.run(),
        Command::Bench(args) => bench::run(&args),
        Command::Load(args) => load::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Input(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Internal(e)) => {
            eprintln!("internal error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// stderr for log lines, each distinct line written once: a condition that lasts (a node out
/// of sync) is logged by every session, and a simulation runs thousands of them.
#[derive(Clone, Default)]
struct OncePerLine(Arc<Mutex<HashSet<Vec<u8>>>>);

impl Write for OncePerLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The formatter hands over one whole event per write; a poisoned set logs everything.
        let fresh = self
            .0
            .lock()
            .map_or(true, |mut seen| seen.insert(buf.to_vec()));
        if fresh {
            std::io::stderr().write_all(buf)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
