//! `volcano up`: a local control plane in one process. The API server of `volcano-apiserver`
//! with simulated nodes, and the scheduler and controllers of `volcano-runtime` talking to it
//! through kube-rs, exactly as they talk to a real cluster.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use prometheus_client::registry::Registry;
use volcano_apiserver::kubelet::{KubeletOptions, Kubelets, NodeSpec};
use volcano_apiserver::{LocalApiServer, ServerOptions, kubeconfig};
use volcano_runtime::controllers::ControllerRuntime;
use volcano_runtime::leader::Leadership;
use volcano_runtime::metrics::{ControllerMetrics, SchedulerMetrics};
use volcano_runtime::scheduler::conf::ConfSource;
use volcano_runtime::scheduler::{SchedulerOptions, SchedulerRuntime};
use volcano_runtime::serve::{Readiness, serve};
use volcano_runtime::{shutdown_signal, stop_channel};

use crate::Failure;
use crate::runtime::{identity, manager_options, parse_duration};
use volcano_runtime::controllers::hypernode_config::ControllerConfigMap;

/// Flags of `volcano up`.
#[derive(clap::Args, Debug)]
pub struct UpArgs {
    /// Where the API server listens (plain HTTP; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: SocketAddr,
    /// Where to write the kubeconfig for kubectl and `volcano job/queue`.
    #[arg(long = "kubeconfig-out", default_value = "volcano.kubeconfig")]
    pub kubeconfig_out: PathBuf,
    /// Simulated nodes.
    #[arg(long, default_value_t = 4)]
    pub nodes: u32,
    /// CPUs of each node.
    #[arg(long = "node-cpu", default_value = "8")]
    pub node_cpu: String,
    /// Memory of each node.
    #[arg(long = "node-memory", default_value = "32Gi")]
    pub node_memory: String,
    /// GPUs (`nvidia.com/gpu`) of each node.
    #[arg(long = "node-gpus", default_value_t = 0)]
    pub node_gpus: u32,
    /// Time from a pod's bind to Running.
    #[arg(long = "pod-startup", default_value = "1s", value_parser = parse_duration)]
    pub pod_startup: Duration,
    /// volcano-scheduler.conf (re-read when it changes); Volcano's default without it.
    #[arg(long = "scheduler-conf")]
    pub scheduler_conf: Option<PathBuf>,
    /// Time between scheduling sessions.
    #[arg(long = "schedule-period", default_value = "1s", value_parser = parse_duration)]
    pub schedule_period: Duration,
    /// Where the scheduler's and controllers' `/metrics` are served, if anywhere.
    #[arg(long = "listen-address")]
    pub listen_address: Option<SocketAddr>,
    /// Refuse every n-th write of pods, PodGroups and Job and Queue status (409 or 500), to
    /// watch the scheduler and controllers retry (0: never).
    #[arg(long = "refuse-every-nth-write", default_value_t = 0)]
    pub refuse_every_nth_write: u32,
    /// Run no scheduler inside: schedule with `volcano scheduler --kubeconfig ...` instead.
    #[arg(long = "no-scheduler")]
    pub no_scheduler: bool,
    /// Run no controllers inside: run `volcano controller-manager --kubeconfig ...` instead.
    #[arg(long = "no-controllers")]
    pub no_controllers: bool,
}

/// Writes `text` to `path` whole: a reader never sees half a kubeconfig.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Serves until interrupted.
pub fn run(args: &UpArgs) -> Result<(), Failure> {
    let conf = match &args.scheduler_conf {
        Some(p) => ConfSource::file(p.clone()).map_err(|e| Failure::Input(e.to_string()))?,
        None => ConfSource::builtin(),
    };
    for (flag, value) in [
        ("--node-cpu", &args.node_cpu),
        ("--node-memory", &args.node_memory),
    ] {
        volcano_api::quantity::parse_milli(value)
            .map_err(|e| Failure::Input(format!("{flag} {value:?}: {e}")))?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Internal(anyhow::anyhow!("cannot start the async runtime: {e}")))?;
    rt.block_on(async {
        let server = LocalApiServer::start(ServerOptions {
            listen: args.listen,
            refuse_every_nth_write: args.refuse_every_nth_write,
            ..Default::default()
        })
        .await
        .map_err(|e| Failure::Input(format!("--listen {}: {e}", args.listen)))?;
        let url = server.url();
        let nodes: Vec<NodeSpec> = (0..args.nodes)
            .map(|i| {
                NodeSpec::new(format!("node-{i}"))
                    .cpu(args.node_cpu.clone())
                    .memory(args.node_memory.clone())
                    .gpus(args.node_gpus)
            })
            .collect();
        let kubelets = Kubelets::start(
            server.store(),
            &nodes,
            KubeletOptions {
                startup_delay: args.pod_startup,
            },
        )
        .await
        .map_err(|e| Failure::Internal(anyhow::anyhow!("cannot register the nodes: {e}")))?;

        let config = kube::Config::new(url.parse().map_err(|e| {
            Failure::Internal(anyhow::anyhow!(
                "the server address {url} is not a URL: {e}"
            ))
        })?);
        let client = kube::Client::try_from(config)
            .map_err(|e| Failure::Internal(anyhow::anyhow!("cannot build a client: {e}")))?;
        let (trigger, stop) = stop_channel();
        let mut registry = Registry::default();
        let sched_metrics = SchedulerMetrics::register(&mut registry);
        let ctl_metrics = ControllerMetrics::register(&mut registry);
        let ready = Readiness::default();
        if let Some(addr) = args.listen_address {
            serve(addr, registry, ready.clone(), stop.clone())
                .await
                .map_err(|e| Failure::Input(format!("--listen-address {addr}: {e}")))?;
        }
        let id = identity();
        let scheduler = SchedulerRuntime::new(
            client.clone(),
            SchedulerOptions {
                scheduler_names: vec!["volcano".to_string()],
                default_queue: "default".to_string(),
                schedule_period: args.schedule_period,
                conf,
                percentage_nodes_to_find: None,
                bind_concurrency: 16,
                identity: id.clone(),
            },
            sched_metrics,
        );
        let controllers = ControllerRuntime::new(
            client,
            manager_options(&["volcano".to_string()]),
            &id,
            ctl_metrics,
        )
        // As the controller-manager's default: the scheduler keeps a bare pod's PodGroup.
        .with_bare_pod_groups(false)
        // As in a cluster: HyperNode label discovery as the volcano-controller-configmap
        // ConfigMap of volcano-system says, once it is applied.
        .with_hyper_node_controller(Some(ControllerConfigMap::from_env()));
        let s = (!args.no_scheduler).then(|| {
            tokio::spawn(scheduler.run(Leadership::always(), ready.clone(), stop.clone()))
        });
        let c = (!args.no_controllers).then(|| {
            tokio::spawn(controllers.run(Leadership::always(), Readiness::default(), stop))
        });

        write_atomically(&args.kubeconfig_out, &kubeconfig(&url)).map_err(|e| {
            Failure::Input(format!(
                "--kubeconfig-out {}: {e}",
                args.kubeconfig_out.display()
            ))
        })?;
        let shown = std::fs::canonicalize(&args.kubeconfig_out)
            .unwrap_or_else(|_| args.kubeconfig_out.clone());
        println!(
            "volcano up: API server at {url}, {} node(s) of {} CPU, {} memory{}",
            args.nodes,
            args.node_cpu,
            args.node_memory,
            if args.node_gpus > 0 {
                format!(", {} GPU", args.node_gpus)
            } else {
                String::new()
            }
        );
        println!("kubeconfig written to {}", shown.display());
        println!("  export KUBECONFIG={}", shown.display());
        println!("  kubectl apply -f examples/up/job.yaml && kubectl get vcjob,pg,pods");
        println!("Ctrl-C stops it.");

        shutdown_signal().await;
        eprintln!("volcano up: stopping");
        let _ = trigger.send(true);
        for task in [s, c].into_iter().flatten() {
            let _ = task.await;
        }
        kubelets.stop();
        server.shutdown().await;
        Ok(())
    })
}
