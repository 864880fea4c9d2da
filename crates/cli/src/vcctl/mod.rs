//! The commands a Volcano user knows from `vcctl`: `volcano job ...`, `volcano queue ...`,
//! `volcano jobflow ...` and `volcano jobtemplate ...`,
//! against any API server. Flags keep vcctl's letters, since users' scripts use them.

use std::future::Future;

use clap::Subcommand;
use volcano_api::bus::BusAction;

use crate::Failure;

mod bus;
pub(crate) mod client;
mod describe;
mod flow;
mod job;
mod job_file;
mod queue;
mod resources;
mod table;

/// The namespace of a command (or a Job file) that names none, as in vcctl (not the
/// kubeconfig's); shared by `job` and `job_file`.
const DEFAULT_NAMESPACE: &str = "default";

/// `volcano job`.
#[derive(Subcommand, Debug)]
#[command(after_help = "\
The API server is found as kubectl finds it: --kubeconfig, else $KUBECONFIG, else
~/.kube/config, else the in-cluster service account. -n is the namespace (default: default).

Examples:
  volcano job run -N train -r 4 -m 4 -R cpu=1,memory=1Gi
  volcano job list --all-namespaces
  volcano job view -N train
  volcano job suspend -N train && volcano job resume -N train
  volcano job delete -N train")]
pub enum JobCommand {
    /// Create a job from flags (one task of identical pods) or from a YAML file (-f).
    Run(job::RunArgs),
    /// List jobs: phase and pod counts.
    List(job::ListArgs),
    /// Describe a job: metadata, spec, status and events.
    View(job::JobRef),
    /// Suspend a job (AbortJob): its pods are deleted, it can be resumed.
    Suspend(job::JobRef),
    /// Resume a suspended job (ResumeJob).
    Resume(job::JobRef),
    /// Delete a job and its pods.
    Delete(job::JobRef),
}

/// `volcano queue`.
#[derive(Subcommand, Debug)]
#[command(after_help = "\
As in vcctl, -n is the queue's NAME (queues have no namespace). The API server is found as
kubectl finds it: --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else in-cluster.

Examples:
  volcano queue create -n research -w 4
  volcano queue list
  volcano queue get -n research
  volcano queue operate -n research -a close
  volcano queue operate -n research -a update -w 8
  volcano queue delete -n research")]
pub enum QueueCommand {
    /// Create a queue.
    Create(queue::CreateArgs),
    /// List queues with their PodGroups per phase.
    List(queue::ListArgs),
    /// Show one queue with its PodGroups per phase.
    Get(queue::QueueRef),
    /// Open or close a queue, or change its weight.
    Operate(queue::OperateArgs),
    /// Delete a queue.
    Delete(queue::QueueRef),
}

/// `volcano jobflow` and `volcano jobtemplate`.
#[derive(Subcommand, Debug)]
#[command(after_help = "\
The API server is found as kubectl finds it: --kubeconfig, else $KUBECONFIG, else
~/.kube/config, else the in-cluster service account. -n is the namespace (default: default).

Examples:
  volcano jobtemplate create -f templates.yaml
  volcano jobflow create -f flow.yaml
  volcano jobflow list --all-namespaces
  volcano jobflow get -N etl
  volcano jobflow describe -N etl -o json
  volcano jobflow delete -N etl")]
pub enum FlowCommand {
    /// Create every object of a YAML file.
    Create(flow::CreateArgs),
    /// List the objects of a namespace (NAME, NAMESPACE, PHASE for flows, AGE).
    List(flow::ListArgs),
    /// Show one object as a row of the list.
    Get(flow::GetArgs),
    /// Print objects whole, as YAML or JSON.
    Describe(flow::DescribeArgs),
    /// Delete an object by name, or every one a YAML file names.
    Delete(flow::DeleteArgs),
}

/// Runs a `volcano jobflow` command.
pub fn run_job_flow(cmd: FlowCommand) -> Result<(), Failure> {
    run_flow::<volcano_api::flow::JobFlow>(cmd)
}

/// Runs a `volcano jobtemplate` command.
pub fn run_job_template(cmd: FlowCommand) -> Result<(), Failure> {
    run_flow::<volcano_api::flow::JobTemplate>(cmd)
}

fn run_flow<K: flow::FlowKind>(cmd: FlowCommand) -> Result<(), Failure> {
    block_on(async move {
        match cmd {
            FlowCommand::Create(args) => flow::create::<K>(&args).await,
            FlowCommand::List(args) => flow::list::<K>(&args).await,
            FlowCommand::Get(args) => flow::get::<K>(&args).await,
            FlowCommand::Describe(args) => flow::describe::<K>(&args).await,
            FlowCommand::Delete(args) => flow::delete::<K>(&args).await,
        }
    })
}

/// Runs a `volcano job` command.
pub fn run_job(cmd: JobCommand) -> Result<(), Failure> {
    block_on(async move {
        match cmd {
            JobCommand::Run(args) => job::run(&args).await,
            JobCommand::List(args) => job::list(&args).await,
            JobCommand::View(args) => job::view(&args).await,
            JobCommand::Suspend(args) => job::command(&args, BusAction::AbortJob).await,
            JobCommand::Resume(args) => job::command(&args, BusAction::ResumeJob).await,
            JobCommand::Delete(args) => job::delete(&args).await,
        }
    })
}

/// Runs a `volcano queue` command.
pub fn run_queue(cmd: QueueCommand) -> Result<(), Failure> {
    block_on(async move {
        match cmd {
            QueueCommand::Create(args) => queue::create(&args).await,
            QueueCommand::List(args) => queue::list(&args).await,
            QueueCommand::Get(args) => queue::get(&args).await,
            QueueCommand::Operate(args) => queue::operate(&args).await,
            QueueCommand::Delete(args) => queue::delete(&args).await,
        }
    })
}

/// One request at a time needs no thread pool: a current-thread runtime starts fastest.
fn block_on(work: impl Future<Output = Result<(), Failure>>) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Internal(anyhow::anyhow!("cannot start the async runtime: {e}")))?;
    // kube-rs logs a failed request itself before returning the error these commands turn
    // into one line; silenced on this thread (which runs every task of the current-thread
    // runtime) so the user reads each failure once.
    tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
        runtime.block_on(work)
    })
}
