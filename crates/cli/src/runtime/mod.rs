//! `volcano scheduler` and `volcano controller-manager`: the runtime of `volcano-kube`, with
//! Volcano's flags.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::Client;
use prometheus_client::registry::Registry;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_kube::controllers::ControllerRuntime;
use volcano_kube::leader::{Elector, Leadership, LeaseConfig, LeaseTimings};
use volcano_kube::metrics::{ControllerMetrics, SchedulerMetrics};
use volcano_kube::scheduler::conf::ConfSource;
use volcano_kube::scheduler::{SchedulerOptions, SchedulerRuntime};
use volcano_kube::serve::{Readiness, serve};
use volcano_kube::ssh_keys::OsSshKeys;
use volcano_kube::{Stop, shutdown_signal, stop_channel};

use crate::Failure;

pub mod webhook_flags;

pub use webhook_flags::WebhookManagerArgs;

/// Connection and election flags both components take.
#[derive(clap::Args, Debug, Clone)]
pub struct CommonArgs {
    /// Path to a kubeconfig; without it, `KUBECONFIG`, `~/.kube/config` or the in-cluster
    /// service account are used.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Pods naming one of these schedulers are handled (repeatable).
    #[arg(long = "scheduler-name", default_value = "volcano")]
    pub scheduler_names: Vec<String>,
    /// Where `/metrics`, `/healthz` and `/readyz` are served.
    #[arg(long = "listen-address")]
    pub listen_address: Option<SocketAddr>,
    /// Elect a leader among replicas through a Lease (`--leader-elect=false` for one replica).
    #[arg(long = "leader-elect", default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// Namespace of the Lease.
    #[arg(long = "lock-object-namespace", default_value = "volcano-system")]
    pub lock_object_namespace: String,
    /// How long a lease holds without renewal.
    #[arg(long = "leader-elect-lease-duration", default_value = "15s", value_parser = parse_duration)]
    pub lease_duration: Duration,
    /// How long a leader acts without a successful renewal.
    #[arg(long = "leader-elect-renew-deadline", default_value = "10s", value_parser = parse_duration)]
    pub renew_deadline: Duration,
    /// Time between election attempts.
    #[arg(long = "leader-elect-retry-period", default_value = "2s", value_parser = parse_duration)]
    pub retry_period: Duration,
}

/// Flags of `volcano scheduler`.
#[derive(clap::Args, Debug)]
pub struct SchedulerArgs {
    /// Connection and election.
    #[command(flatten)]
    pub common: CommonArgs,
    /// volcano-scheduler.conf (re-read when it changes); Volcano's default without it.
    #[arg(long = "scheduler-conf")]
    pub scheduler_conf: Option<PathBuf>,
    /// Time between scheduling sessions.
    #[arg(long = "schedule-period", default_value = "1s", value_parser = parse_duration)]
    pub schedule_period: Duration,
    /// Queue of PodGroups that name none.
    #[arg(long = "default-queue", default_value = "default")]
    pub default_queue: String,
    /// Share of nodes (1-100) a task's search stops at once that many fit.
    #[arg(long = "percentage-nodes-to-find", value_parser = clap::value_parser!(u8).range(1..=100))]
    pub percentage_nodes_to_find: Option<u8>,
    /// Binds and evictions in flight at most.
    #[arg(long = "bind-concurrency", default_value_t = 16)]
    pub bind_concurrency: usize,
}

/// Flags of `volcano controller-manager`.
#[derive(clap::Args, Debug)]
pub struct ControllerManagerArgs {
    /// Connection and election.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// A Go-style duration flag (`1s`, `500ms`, `1m30s`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    volcano_controllers::time::parse_duration(s)
        .ok_or_else(|| format!("{s:?} is not a duration (examples: 1s, 500ms, 1m30s)"))
}

/// A client from `--kubeconfig`, or inferred (environment, home, in-cluster), that names
/// itself `component` (the API server takes the field manager of its writes and the user
/// agent of its audit lines from this). No read timeout: watches stay open for minutes.
pub async fn client(kubeconfig: Option<&Path>, component: &str) -> Result<Client, Failure> {
    let mut config = crate::vcctl::client::load_config(kubeconfig).await?;
    let agent = format!("{component}/{} (volcano-rs)", env!("CARGO_PKG_VERSION"));
    let agent = http::HeaderValue::from_str(&agent)
        .map_err(|e| Failure::Internal(anyhow::anyhow!("user agent {agent:?}: {e}")))?;
    config.headers.push((http::header::USER_AGENT, agent));
    Client::try_from(config)
        .map_err(|e| Failure::Internal(anyhow::anyhow!("cannot build a Kubernetes client: {e}")))
}

/// This replica's identity: the host name (the pod name in a cluster) and a unique suffix.
pub fn identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| "volcano".to_string());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{host}_{:x}{:05x}", std::process::id(), nanos & 0xfffff)
}

/// Starts the election (or none), returning the leadership and the elector's task.
pub fn elect(
    client: &Client,
    common: &CommonArgs,
    lease: &str,
    identity: &str,
    stop: &Stop,
) -> (Leadership, Option<tokio::task::JoinHandle<()>>) {
    if !common.leader_elect {
        return (Leadership::always(), None);
    }
    let (elector, leadership) = Elector::new(
        client.clone(),
        LeaseConfig {
            namespace: common.lock_object_namespace.clone(),
            name: lease.to_string(),
            identity: identity.to_string(),
            timings: LeaseTimings {
                lease_duration: common.lease_duration,
                renew_deadline: common.renew_deadline,
                retry_period: common.retry_period,
            },
        },
    );
    let handle = tokio::spawn(elector.run(stop.clone()));
    (leadership, Some(handle))
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Internal(anyhow::anyhow!("cannot start the async runtime: {e}")))
}

/// Serves metrics if asked; errors name the address.
async fn metrics_server(
    addr: Option<SocketAddr>,
    registry: Registry,
    ready: Readiness,
    stop: &Stop,
) -> Result<(), Failure> {
    if let Some(addr) = addr {
        let (bound, _) = serve(addr, registry, ready, stop.clone())
            .await
            .map_err(|e| Failure::Input(format!("--listen-address {addr}: {e}")))?;
        tracing::info!(address = %bound, "serving /metrics, /healthz, /readyz");
    }
    Ok(())
}

/// Waits for SIGTERM or Ctrl-C, then stops the component (which finishes what is in flight)
/// and the elector (which releases the lease).
async fn until_signal<E>(
    run: tokio::task::JoinHandle<E>,
    trigger: tokio::sync::watch::Sender<bool>,
    elector: Option<tokio::task::JoinHandle<()>>,
) {
    shutdown_signal().await;
    tracing::warn!("stopping: finishing the work in flight and releasing the lease");
    let _ = trigger.send(true);
    let _ = run.await;
    if let Some(e) = elector {
        let _ = e.await;
    }
}

/// Runs the scheduler until it is told to stop.
pub fn run_scheduler(args: &SchedulerArgs) -> Result<(), Failure> {
    let conf = match &args.scheduler_conf {
        Some(p) => ConfSource::file(p.clone()).map_err(|e| Failure::Input(e.to_string()))?,
        None => ConfSource::builtin(),
    };
    runtime()?.block_on(async {
        let client = client(args.common.kubeconfig.as_deref(), "volcano-scheduler").await?;
        let (trigger, stop) = stop_channel();
        let id = identity();
        let mut registry = Registry::default();
        let metrics = SchedulerMetrics::register(&mut registry);
        let ready = Readiness::default();
        metrics_server(args.common.listen_address, registry, ready.clone(), &stop).await?;
        let (leader, elector) = elect(&client, &args.common, "volcano-scheduler", &id, &stop);
        let rt = SchedulerRuntime::new(
            client,
            SchedulerOptions {
                scheduler_names: args.common.scheduler_names.clone(),
                default_queue: args.default_queue.clone(),
                schedule_period: args.schedule_period,
                conf,
                percentage_nodes_to_find: args.percentage_nodes_to_find,
                bind_concurrency: args.bind_concurrency,
                identity: id,
            },
            metrics,
        );
        let run = tokio::spawn(rt.run(leader, ready, stop));
        until_signal(run, trigger, elector).await;
        Ok(())
    })
}

/// Runs the controllers until they are told to stop.
pub fn run_controller_manager(args: &ControllerManagerArgs) -> Result<(), Failure> {
    runtime()?.block_on(async {
        let client = client(args.common.kubeconfig.as_deref(), "volcano-controllers").await?;
        let (trigger, stop) = stop_channel();
        let id = identity();
        let mut registry = Registry::default();
        let metrics = ControllerMetrics::register(&mut registry);
        let ready = Readiness::default();
        metrics_server(args.common.listen_address, registry, ready.clone(), &stop).await?;
        let (leader, elector) = elect(&client, &args.common, "volcano-controllers", &id, &stop);
        let rt = ControllerRuntime::new(
            client,
            manager_options(&args.common.scheduler_names),
            &id,
            metrics,
        );
        let run = tokio::spawn(rt.run(leader, ready, stop));
        until_signal(run, trigger, elector).await;
        Ok(())
    })
}

/// The controllers' settings for these scheduler names.
pub fn manager_options(scheduler_names: &[String]) -> ManagerOptions {
    ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: scheduler_names.to_vec(),
        ssh_keys: Box::new(OsSshKeys),
    }
}
