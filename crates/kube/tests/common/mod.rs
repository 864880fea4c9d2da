//! A local control plane for the end-to-end tests: the API server, simulated nodes, and the
//! scheduler and controllers of this crate, talking to it through kube-rs.

#![allow(dead_code)] // Each test binary uses a different part of this module.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test setup fails loudly by design.

use std::time::Duration;

use kube::Client;
use prometheus_client::registry::Registry;
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use volcano_apiserver::kubelet::{KubeletOptions, Kubelets, NodeSpec};
use volcano_apiserver::{LocalApiServer, ServerOptions};
use volcano_controllers::job::plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_kube::controllers::ControllerRuntime;
use volcano_kube::leader::{Elector, Leadership, LeaseConfig, LeaseTimings};
use volcano_kube::metrics::{ControllerMetrics, SchedulerMetrics};
use volcano_kube::scheduler::conf::ConfSource;
use volcano_kube::scheduler::{SchedulerOptions, SchedulerRuntime};
use volcano_kube::serve::Readiness;

/// The API server with nodes and their kubelets.
pub struct Cluster {
    pub server: LocalApiServer,
    pub kubelets: Kubelets,
}

/// A component running until stopped.
pub struct Running<M> {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
    elector: Option<JoinHandle<()>>,
    pub metrics: M,
    pub ready: Readiness,
    pub leader: Leadership,
}

impl<M> Running<M> {
    /// Stops the component as SIGTERM would, and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
        if let Some(e) = self.elector {
            let _ = tokio::time::timeout(Duration::from_secs(10), e).await;
        }
    }

    /// Kills the component without a goodbye (no lease release), as a crash would.
    pub fn kill(self) {
        self.task.abort();
        if let Some(e) = self.elector {
            e.abort();
        }
    }
}

/// Short election timings, so failover tests take seconds.
pub fn fast_lease() -> LeaseTimings {
    LeaseTimings {
        lease_duration: Duration::from_millis(1500),
        renew_deadline: Duration::from_millis(1000),
        retry_period: Duration::from_millis(200),
    }
}

impl Cluster {
    /// A server with `nodes` nodes of 4 CPUs and 8Gi each.
    pub async fn start(nodes: usize) -> Cluster {
        Cluster::start_with(nodes, ServerOptions::default()).await
    }

    /// [`Cluster::start`] with server options (write faults, for example).
    pub async fn start_with(nodes: usize, opts: ServerOptions) -> Cluster {
        let server = LocalApiServer::start(opts).await.expect("server starts");
        let specs: Vec<NodeSpec> = (0..nodes)
            .map(|i| NodeSpec::new(format!("node-{i}")).cpu("4").memory("8Gi"))
            .collect();
        let kubelets = Kubelets::start(
            server.store(),
            &specs,
            KubeletOptions {
                startup_delay: Duration::from_millis(200),
            },
        )
        .await
        .expect("kubelets start");
        Cluster { server, kubelets }
    }

    /// A new client of the server.
    pub fn client(&self) -> Client {
        let config = kube::Config::new(self.server.url().parse().expect("url parses"));
        Client::try_from(config).expect("client builds")
    }

    fn elect(
        &self,
        lease: &str,
        identity: &str,
        elect: bool,
        stop: &watch::Receiver<bool>,
    ) -> (Leadership, Option<JoinHandle<()>>) {
        if !elect {
            return (Leadership::always(), None);
        }
        let (elector, leadership) = Elector::new(
            self.client(),
            LeaseConfig {
                namespace: "volcano-system".into(),
                name: lease.into(),
                identity: identity.into(),
                timings: fast_lease(),
            },
        );
        (leadership, Some(tokio::spawn(elector.run(stop.clone()))))
    }

    /// Starts a scheduler named `identity`, with leader election if `elect`.
    pub fn scheduler(&self, identity: &str, elect: bool) -> Running<SchedulerMetrics> {
        self.scheduler_with(identity, elect, ConfSource::builtin())
    }

    /// [`Cluster::scheduler`] with a configuration.
    pub fn scheduler_with(
        &self,
        identity: &str,
        elect: bool,
        conf: ConfSource,
    ) -> Running<SchedulerMetrics> {
        let (stop_tx, stop) = watch::channel(false);
        let mut registry = Registry::default();
        let metrics = SchedulerMetrics::register(&mut registry);
        let ready = Readiness::default();
        let (leader, elector) = self.elect("volcano-scheduler", identity, elect, &stop);
        let rt = SchedulerRuntime::new(
            self.client(),
            SchedulerOptions {
                scheduler_names: vec!["volcano".into()],
                default_queue: "default".into(),
                schedule_period: Duration::from_millis(200),
                conf,
                percentage_nodes_to_find: None,
                bind_concurrency: 8,
                identity: identity.into(),
            },
            metrics.clone(),
        );
        let l = leader.clone();
        let r = ready.clone();
        let task = tokio::spawn(async move {
            rt.run(l, r, stop).await.expect("scheduler runs");
        });
        Running {
            stop: stop_tx,
            task,
            elector,
            metrics,
            ready,
            leader,
        }
    }

    /// Starts the controllers.
    pub fn controllers(&self, identity: &str) -> Running<ControllerMetrics> {
        let (stop_tx, stop) = watch::channel(false);
        let mut registry = Registry::default();
        let metrics = ControllerMetrics::register(&mut registry);
        let ready = Readiness::default();
        let rt = ControllerRuntime::new(
            self.client(),
            ManagerOptions {
                retry: RetryPolicy::default(),
                scheduler_names: vec!["volcano".into()],
                ssh_keys: Box::new(PlaceholderSshKeys),
            },
            identity,
            metrics.clone(),
        );
        let leader = Leadership::always();
        let (l, r) = (leader.clone(), ready.clone());
        let task = tokio::spawn(async move {
            rt.run(l, r, stop).await.expect("controllers run");
        });
        Running {
            stop: stop_tx,
            task,
            elector: None,
            metrics,
            ready,
            leader,
        }
    }
}

/// A Volcano Job of `replicas` pods asking `cpu` each, that sleep `secs` seconds.
pub fn job(name: &str, queue: &str, replicas: i32, cpu: &str, secs: u32) -> serde_json::Value {
    json!({
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": "volcano",
            "queue": queue,
            "minAvailable": replicas,
            "tasks": [{
                "name": "worker",
                "replicas": replicas,
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "main",
                        "image": "busybox:1.36",
                        "command": ["sleep", secs.to_string()],
                        "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}},
                    }],
                }},
            }],
        },
    })
}

/// Polls `check` every 100 ms for at most `secs` seconds; the last value if it never held.
pub async fn eventually<T>(secs: u64, mut check: impl AsyncFnMut() -> (bool, T)) -> (bool, T) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let (ok, v) = check().await;
        if ok || tokio::time::Instant::now() > deadline {
            return (ok, v);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
