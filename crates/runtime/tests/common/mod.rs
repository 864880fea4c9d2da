//! A control plane for the end-to-end tests, and the scheduler and controllers of this crate
//! talking to it through kube-rs. Two tiers: the local control plane (always), and a real
//! kube-apiserver with etcd where `KUBEBUILDER_ASSETS` provides them, with `deploy/` installed
//! and the scheduler and controllers holding only its ServiceAccounts' permissions.

#![allow(dead_code)] // Each test binary uses a different part of this module.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test setup fails loudly by design.

pub mod jobs;
pub mod workloads;

use std::time::Duration;

use kube::Client;
use prometheus_client::registry::Registry;
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use volcano_apiserver::kubelet::{KubeletOptions, Kubelets, NodeSpec};
use volcano_apiserver::{LocalApiServer, ServerOptions};
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_runtime::controllers::ControllerRuntime;
use volcano_runtime::leader::{Elector, Leadership, LeaseConfig, LeaseTimings};
use volcano_runtime::metrics::{ControllerMetrics, SchedulerMetrics};
use volcano_runtime::scheduler::conf::ConfSource;
use volcano_runtime::scheduler::{SchedulerOptions, SchedulerRuntime};
use volcano_runtime::serve::Readiness;
use volcano_runtime::webhook::certs::{CertSource, GENERATED_VALIDITY};
use volcano_runtime::webhook::{WebhookOptions, WebhookServer};
use volcano_testkit::kubelet::{ApiKubelets, KubeletOptions as ApiKubeletOptions};
use volcano_testkit::{Assets, RealControlPlane, install};

/// An API server with nodes and their kubelets.
pub struct Cluster {
    // Dropped last: the real tier's turn is held until the control plane is gone.
    backend: Backend,
    admin: Client,
    scheduler_client: Client,
    controllers_client: Client,
    /// The real tier's webhook server, running in the test process as its Deployment would.
    webhook: Option<Webhook>,
    _turn: Option<tokio::sync::OwnedMutexGuard<()>>,
}

/// A webhook server reached by the API server at `url`, with the admission account's client.
struct Webhook {
    client: Client,
    port: u16,
    running: Option<(watch::Sender<bool>, WebhookServer)>,
}

/// The real tier's turn, taken by each real-tier test of a test binary in turn.
static REAL_TIER: std::sync::LazyLock<std::sync::Arc<tokio::sync::Mutex<()>>> =
    std::sync::LazyLock::new(Default::default);

/// Which API server a test runs against.
enum Backend {
    Local {
        server: LocalApiServer,
        _kubelets: Kubelets,
    },
    Real {
        plane: Box<RealControlPlane>,
        _kubelets: ApiKubelets,
        controller_manager: bool,
    },
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

/// `nodes` nodes of 4 CPUs and 8Gi each.
pub fn node_specs(nodes: usize) -> Vec<NodeSpec> {
    (0..nodes)
        .map(|i| NodeSpec::new(format!("node-{i}")).cpu("4").memory("8Gi"))
        .collect()
}

impl Cluster {
    /// A local server with `nodes` nodes of 4 CPUs and 8Gi each.
    pub async fn start(nodes: usize) -> Cluster {
        Cluster::start_with(nodes, ServerOptions::default()).await
    }

    /// [`Cluster::start`] with server options (write faults, for example).
    pub async fn start_with(nodes: usize, opts: ServerOptions) -> Cluster {
        Cluster::start_with_specs(&node_specs(nodes), opts).await
    }

    /// A local server with these nodes.
    pub async fn start_with_specs(specs: &[NodeSpec], opts: ServerOptions) -> Cluster {
        let server = LocalApiServer::start(opts).await.expect("server starts");
        let kubelets = Kubelets::start(
            server.store(),
            specs,
            KubeletOptions {
                startup_delay: Duration::from_millis(200),
            },
        )
        .await
        .expect("kubelets start");
        let config = kube::Config::new(server.url().parse().expect("url parses"));
        let admin = Client::try_from(config).expect("client builds");
        Cluster {
            _turn: None,
            backend: Backend::Local {
                server,
                _kubelets: kubelets,
            },
            scheduler_client: admin.clone(),
            controllers_client: admin.clone(),
            webhook: None,
            admin,
        }
    }

    /// A real kube-apiserver and etcd with `nodes` nodes, `deploy/` installed, and clients of
    /// the scheduler and the controllers holding their ServiceAccounts' tokens; `None` (the
    /// test skips, saying why) where the binaries are absent.
    pub async fn real(nodes: usize, test: &str) -> Option<Cluster> {
        Cluster::real_with_specs(&node_specs(nodes), test).await
    }

    /// [`Cluster::real`] with these nodes.
    pub async fn real_with_specs(specs: &[NodeSpec], test: &str) -> Option<Cluster> {
        let assets = Assets::or_skip(test)?;
        // One real control plane at a time: two API servers, two etcds and two sets of
        // components on two cores make every timing in the tests a coin toss.
        let turn = REAL_TIER.clone().lock_owned().await;
        // `VOLCANO_TEST_LOG=1 cargo test ... -- --nocapture` shows the runtime's warnings.
        if std::env::var_os("VOLCANO_TEST_LOG").is_some() {
            let _ = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::INFO)
                .with_test_writer()
                .try_init();
        }
        let plane = RealControlPlane::start(&assets)
            .await
            .expect("the real control plane starts");
        let admin = plane.admin().expect("admin client");
        let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy");
        install::install(&admin, &deploy)
            .await
            .expect("deploy/ installs");
        if assets.kube_controller_manager.is_none() {
            // Without kube-controller-manager nobody makes the default ServiceAccount that
            // admission gives pods.
            install::ensure_service_account(&admin, "default", "default")
                .await
                .expect("default service account");
        }
        let token = async |name: &str| {
            install::service_account_token(&admin, "volcano-system", name)
                .await
                .expect("service account token")
        };
        let scheduler_client = plane
            .client_with_token(&token("volcano-scheduler").await, "volcano-scheduler")
            .expect("scheduler client");
        let controllers_client = plane
            .client_with_token(&token("volcano-controllers").await, "volcano-controllers")
            .expect("controllers client");
        let webhook_client = plane
            .client_with_token(&token("volcano-admission").await, "volcano-admission")
            .expect("admission client");
        let kubelets = ApiKubelets::start(admin.clone(), specs, ApiKubeletOptions::default())
            .await
            .expect("kubelets start");
        // The webhook server is stopped and started again on this port.
        let port = volcano_testkit::ports::restartable_port().expect("a free port");
        let mut cluster = Cluster {
            _turn: Some(turn),
            backend: Backend::Real {
                plane: Box::new(plane),
                _kubelets: kubelets,
                controller_manager: assets.kube_controller_manager.is_some(),
            },
            admin,
            scheduler_client,
            controllers_client,
            webhook: Some(Webhook {
                client: webhook_client,
                port,
                running: None,
            }),
        };
        cluster.start_webhook(None).await;
        // As the local server has them from its start (and the scheduler creates them at its
        // own): with the webhook on, a Job naming a queue that does not exist is refused.
        for name in ["root", "default"] {
            let q: volcano_api::scheduling::Queue = serde_json::from_value(json!({
                "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                "metadata": {"name": name}, "spec": {"weight": 1}}))
            .unwrap();
            kube::Api::<volcano_api::scheduling::Queue>::all(cluster.admin.clone())
                .create(&kube::api::PostParams::default(), &q)
                .await
                .expect("the root and default queues are created");
        }
        // The webhook reads queues from its watch, as Volcano's reads them from a lister: until
        // the new queue reaches it, a Job naming it is refused. Tests start once it has.
        let jobs =
            kube::Api::<volcano_api::batch::Job>::namespaced(cluster.admin.clone(), "default");
        let probe: volcano_api::batch::Job =
            serde_json::from_value(job("queue-probe", "default", 1, "1", 1)).unwrap();
        let dry_run = kube::api::PostParams {
            dry_run: true,
            ..Default::default()
        };
        let (admitted, refusal) =
            eventually(30, async || match jobs.create(&dry_run, &probe).await {
                Ok(_) => (true, String::new()),
                Err(e) => (false, e.to_string()),
            })
            .await;
        assert!(
            admitted,
            "a Job in the default queue is admitted: {refusal}"
        );
        Some(cluster)
    }

    /// The URL the API server calls the real tier's webhook server at.
    pub fn webhook_url(&self) -> String {
        let port = self.webhook.as_ref().map_or(0, |w| w.port);
        format!("https://127.0.0.1:{port}")
    }

    /// Starts the real tier's webhook server (with a generated certificate, or `certs`) and
    /// waits until the API server calls it: a dry-run create it must refuse is refused.
    pub async fn start_webhook(&mut self, certs: Option<CertSource>) {
        let url = self.webhook_url();
        let Some(w) = self.webhook.as_mut() else {
            return;
        };
        let certs = certs.unwrap_or(CertSource::Generated {
            names: vec!["127.0.0.1".into()],
            validity: GENERATED_VALIDITY,
        });
        let options = WebhookOptions {
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], w.port)),
            endpoints: volcano_controllers::admission::Endpoint::ALL.to_vec(),
            settings: Default::default(),
            certs,
            url: Some(url),
            check_every: Duration::from_millis(500),
        };
        let (stop_tx, stop) = watch::channel(false);
        // The stopped server's listener may outlive it by a moment.
        let mut tries = 0;
        let server = loop {
            match WebhookServer::start(w.client.clone(), options.clone(), stop.clone()).await {
                Err(volcano_runtime::webhook::WebhookError::Listen { .. }) if tries < 20 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                started => break started.expect("the webhook server starts"),
            }
        };
        w.running = Some((stop_tx, server));
        self.wait_webhook_answers().await;
    }

    /// Waits until the API server's calls reach the webhook server with its current CA.
    pub async fn wait_webhook_answers(&self) {
        let probe = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": "webhook-probe"},
            "spec": {"weight": 1, "guarantee": {"resource": {"cpu": "2"}}}});
        let queue: volcano_api::scheduling::Queue = serde_json::from_value(probe).unwrap();
        let api: kube::Api<volcano_api::scheduling::Queue> = kube::Api::all(self.admin.clone());
        let mut last = String::new();
        let (ok, _) = eventually(30, async || {
            let params = kube::api::PostParams {
                dry_run: true,
                ..Default::default()
            };
            last = match api.create(&params, &queue).await {
                Ok(_) => "admitted".into(),
                Err(e) => e.to_string(),
            };
            (
                last.contains("denied the request: requestBody.spec.deserved.cpu"),
                (),
            )
        })
        .await;
        assert!(ok, "the API server never reached the webhook: {last}");
    }

    /// Stops the real tier's webhook server: the API server's calls then fail.
    pub async fn stop_webhook(&mut self) {
        let Some((stop, server)) = self.webhook.as_mut().and_then(|w| w.running.take()) else {
            return;
        };
        let _ = stop.send(true);
        for t in server.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
    }

    /// A new client of the server, as its administrator.
    pub fn client(&self) -> Client {
        self.admin.clone()
    }

    /// The scheduler's client (in the real tier, with its ServiceAccount's permissions).
    pub fn scheduler_client(&self) -> Client {
        self.scheduler_client.clone()
    }

    /// The controllers' client (in the real tier, with their ServiceAccount's permissions).
    pub fn controllers_client(&self) -> Client {
        self.controllers_client.clone()
    }

    /// Whether this is the real tier.
    pub fn is_real(&self) -> bool {
        matches!(self.backend, Backend::Real { .. })
    }

    /// Whether kube-controller-manager runs (Deployments, garbage collection): only in the
    /// real tier, where its binary is present.
    pub fn has_controller_manager(&self) -> bool {
        matches!(
            self.backend,
            Backend::Real {
                controller_manager: true,
                ..
            }
        )
    }

    /// The local server (of a local-tier test).
    pub fn server(&self) -> &LocalApiServer {
        match &self.backend {
            Backend::Local { server, .. } => server,
            Backend::Real { .. } => panic!("a real-tier test asked for the local server"),
        }
    }

    /// The real control plane (of a real-tier test).
    pub fn plane(&mut self) -> &mut RealControlPlane {
        match &mut self.backend {
            Backend::Real { plane, .. } => plane,
            Backend::Local { .. } => panic!("a local-tier test asked for the real control plane"),
        }
    }

    fn elect(
        &self,
        client: Client,
        lease: &str,
        identity: &str,
        elect: bool,
        stop: &watch::Receiver<bool>,
    ) -> (Leadership, Option<JoinHandle<()>>) {
        if !elect {
            return (Leadership::always(), None);
        }
        let (elector, leadership) = Elector::new(
            client,
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
        let (leader, elector) = self.elect(
            self.scheduler_client.clone(),
            "volcano-scheduler",
            identity,
            elect,
            &stop,
        );
        let rt = SchedulerRuntime::new(
            self.scheduler_client.clone(),
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
            self.controllers_client.clone(),
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

/// Runs an end-to-end scenario in both tiers: `NAME::local` against the local control plane,
/// `NAME::real` against a real API server (skipped, saying so, where there is none).
#[macro_export]
macro_rules! both_tiers {
    ($name:ident, $nodes:expr, $scenario:path) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn local() {
                $scenario($crate::common::Cluster::start($nodes).await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn real() {
                let test = concat!(stringify!($name), "::real");
                if let Some(c) = $crate::common::Cluster::real($nodes, test).await {
                    $scenario(c).await;
                }
            }
        }
    };
}
