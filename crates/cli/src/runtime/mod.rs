//! `volcano scheduler` and `volcano controller-manager`: the runtime of `volcano-runtime`, with
//! Volcano's flags.

use std::path::Path;
use std::time::Duration;

use kube::Client;
use prometheus_client::registry::Registry;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_runtime::controllers::ControllerRuntime;
use volcano_runtime::controllers::hypernode_config::ControllerConfigMap;
use volcano_runtime::leader::{Elector, Leadership, LeaseConfig, LeaseTimings};
use volcano_runtime::metrics::{ControllerMetrics, SchedulerMetrics};
use volcano_runtime::scheduler::conf::ConfSource;
use volcano_runtime::scheduler::{SchedulerOptions, SchedulerRuntime};
use volcano_runtime::serve::{Readiness, serve};
use volcano_runtime::ssh_keys::OsSshKeys;
use volcano_runtime::{Stop, shutdown_signal, stop_channel};

use crate::Failure;

pub mod flags;
#[cfg(test)]
mod flags_tests;
pub mod shared_flags;
pub mod webhook_flags;

pub use flags::{CommonArgs, ControllerManagerArgs, SchedulerArgs};
pub use shared_flags::{GoAddress, SharedArgs, warn_ignored};
pub use webhook_flags::WebhookManagerArgs;

/// Volcano's controllers that volcano-rs runs (under other names), which cannot be disabled.
const OUR_CONTROLLERS: [&str; 3] = ["job-controller", "pg-controller", "queue-controller"];

/// A Go-style duration flag (`1s`, `500ms`, `1m30s`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    volcano_controllers::time::parse_duration(s)
        .ok_or_else(|| format!("{s:?} is not a duration (examples: 1s, 500ms, 1m30s)"))
}

/// A client from `--kubeconfig`, or inferred (environment, home, in-cluster), with the API
/// server's address overridden by `master` (Volcano's `--master`), that names itself
/// `component` (the API server takes the field manager of its writes and the user agent of its
/// audit lines from this). No read timeout: watches stay open for minutes.
pub async fn client_for(
    kubeconfig: Option<&Path>,
    master: Option<&str>,
    component: &str,
) -> Result<Client, Failure> {
    let mut config = crate::vcctl::client::load_config(kubeconfig).await?;
    if let Some(master) = master.filter(|m| !m.is_empty()) {
        config.cluster_url = master
            .parse()
            .map_err(|e| Failure::Input(format!("--master {master:?}: {e}")))?;
    }
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
            namespace: common.lease_namespace().to_string(),
            name: common
                .leader_elect_resource_name
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| lease.to_string()),
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

/// Serves `/metrics`, `/healthz` and `/readyz` on `--listen-address` (unless empty), and
/// health also on `--healthz-address` with `--enable-healthz`; errors name the flag and address,
/// so two components left on one default port are told apart.
async fn serve_endpoints(
    listen: &GoAddress,
    common: &CommonArgs,
    registry: Registry,
    ready: Readiness,
    stop: &Stop,
) -> Result<(), Failure> {
    let healthz = common.healthz_serving(listen);
    if let Some(addr) = listen.addr {
        let (bound, _) = serve(addr, registry, ready.clone(), stop.clone())
            .await
            .map_err(|e| bind_failure("--listen-address", listen, e))?;
        tracing::info!(address = %bound, "serving /metrics, /healthz, /readyz (--listen-address)");
    }
    if let Some(h) = healthz.and_then(|h| h.addr.map(|a| (h, a))) {
        // The health server's registry is empty: metrics are scraped on --listen-address.
        let (bound, _) = serve(h.1, Registry::default(), ready, stop.clone())
            .await
            .map_err(|e| bind_failure("--healthz-address", h.0, e))?;
        tracing::info!(address = %bound, "serving /healthz, /readyz (--healthz-address)");
    }
    Ok(())
}

fn bind_failure(flag: &str, addr: &GoAddress, e: std::io::Error) -> Failure {
    let resolved = addr.addr.map(|a| a.to_string()).unwrap_or_default();
    Failure::Input(format!(
        "{flag} {addr} ({resolved}): {e}; another process may serve there: give this \
         component another {flag} (127.0.0.1:0 picks a free port)"
    ))
}

/// What every component does first: print the version for `--version` (true: stop there), or
/// name once the flags it accepted without effect.
pub fn preamble(component: &str, shared: &SharedArgs, ignored: &[&str]) -> bool {
    if shared.print_version() {
        println!("volcano-rs {}", env!("CARGO_PKG_VERSION"));
        return true;
    }
    warn_ignored(component, ignored, &shared.not_flags);
    false
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
    if preamble(
        "volcano-scheduler",
        &args.common.shared,
        &args.ignored_flags(),
    ) {
        return Ok(());
    }
    tracing::debug!(?args, "volcano-scheduler: flags in force");
    let conf = match &args.scheduler_conf {
        Some(p) => ConfSource::file(p.clone()).map_err(|e| Failure::Input(e.to_string()))?,
        None => ConfSource::builtin(),
    };
    runtime()?.block_on(async {
        let client = client_for(
            args.common.kubeconfig.as_deref(),
            args.common.shared.master.as_deref(),
            "volcano-scheduler",
        )
        .await?;
        let (trigger, stop) = stop_channel();
        let id = identity();
        let mut registry = Registry::default();
        let metrics = SchedulerMetrics::register(&mut registry);
        let ready = Readiness::default();
        serve_endpoints(
            &args.listen_address,
            &args.common,
            registry,
            ready.clone(),
            &stop,
        )
        .await?;
        let (leader, elector) = elect(&client, &args.common, "volcano-scheduler", &id, &stop);
        let rt = SchedulerRuntime::new(
            client,
            SchedulerOptions {
                scheduler_names: args.common.scheduler_names.clone(),
                default_queue: args.default_queue.clone(),
                schedule_period: args.schedule_period,
                conf,
                percentage_nodes_to_find: args.percentage(),
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
    args.check_controllers().map_err(Failure::Input)?;
    if preamble(
        "volcano-controllers",
        &args.common.shared,
        &args.ignored_flags(),
    ) {
        return Ok(());
    }
    tracing::debug!(?args, "volcano-controllers: flags in force");
    log_controllers(&args.controllers);
    runtime()?.block_on(async {
        let client = client_for(
            args.common.kubeconfig.as_deref(),
            args.common.shared.master.as_deref(),
            "volcano-controllers",
        )
        .await?;
        let (trigger, stop) = stop_channel();
        let id = identity();
        let mut registry = Registry::default();
        let metrics = ControllerMetrics::register(&mut registry);
        let ready = Readiness::default();
        serve_endpoints(
            &args.listen_address,
            &args.common,
            registry,
            ready.clone(),
            &stop,
        )
        .await?;
        let (leader, elector) = elect(&client, &args.common, "volcano-controllers", &id, &stop);
        let mut options = manager_options(&args.common.scheduler_names);
        options.retry.max_retries = Some(args.max_retries());
        let mut rt = ControllerRuntime::new(client, options, &id, metrics)
            .with_bare_pod_groups(args.pod_groups_for_bare_pods);
        if hyper_node_controller_enabled(&args.controllers) {
            rt = rt.with_hyper_node_controller(Some(ControllerConfigMap::from_env()));
        } else {
            tracing::info!(
                "--controllers disables hyperNode-controller: HyperNodes are left alone"
            );
        }
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

/// Volcano's name of the HyperNode controller in `--controllers`.
const HYPER_NODE_CONTROLLER: &str = "hyperNode-controller";

/// Whether the HyperNode controller runs: unless `--controllers` leaves it out (Volcano's chart
/// passes `-hyperNode-controller` when its HyperNode controller runs standalone or is off).
fn hyper_node_controller_enabled(asked: &[String]) -> bool {
    asked.is_empty() || controller_enabled(asked, HYPER_NODE_CONTROLLER)
}

/// Whether Volcano's `--controllers` list enables `name`: `-name` disables it, `name` or
/// `+name` enables it, and otherwise `*` decides.
fn controller_enabled(asked: &[String], name: &str) -> bool {
    let named = |prefix: &str| asked.iter().any(|c| *c == format!("{prefix}{name}"));
    if named("-") {
        return false;
    }
    named("+") || named("") || asked.iter().any(|c| c == "*")
}

/// Says what `--controllers` asked: volcano-rs' controllers run together, so asking to disable
/// one of them is warned about; Volcano's others (gc, jobflow, cronjob, hyperNode, sharding...)
/// do not exist here.
fn log_controllers(asked: &[String]) {
    if asked.is_empty() {
        return;
    }
    let list = asked.join(",");
    let disables_ours = OUR_CONTROLLERS
        .iter()
        .any(|name| !controller_enabled(asked, name));
    if disables_ours {
        tracing::warn!(
            "--controllers={list}: volcano-rs cannot disable its job, podgroup and queue \
             controllers; all of them run"
        );
    } else {
        tracing::info!(
            "--controllers={list}: volcano-rs runs its job, podgroup, queue and command controllers"
        );
    }
}
