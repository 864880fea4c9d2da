//! A real control plane on loopback: etcd, kube-apiserver and, when present,
//! kube-controller-manager, each a child process living in a temporary folder.
//!
//! The API server runs as a cluster is run in production where it matters to us: RBAC is the
//! only authorizer, `OwnerReferencesPermissionEnforcement` is on beside the default admission
//! plugins, ServiceAccount tokens are signed and checked. The administrator authenticates with
//! a static token (group `system:masters`); everything else gets its own ServiceAccount token.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::Client;
use kube::config::{AuthInfo, Config};

use crate::ports::free_port;
use crate::process::Process;
use crate::{Assets, HarnessError};

/// The administrator's bearer token (a test secret, valid only on loopback).
const ADMIN_TOKEN: &str = "volcano-rs-test-admin";

/// The bearer token of user `system:kube-scheduler`, whom Kubernetes' default RBAC binds to the
/// kube-scheduler's roles: kube-scheduler run beside ours is authorized as on a real cluster,
/// not as an administrator (whose requests skip RBAC).
const KUBE_SCHEDULER_TOKEN: &str = "volcano-rs-test-kube-scheduler";

/// How long a component is given to become ready.
const READY_SECS: u64 = 60;

/// What runs in kube-controller-manager: ServiceAccounts for new namespaces, garbage
/// collection of owned objects, namespace deletion, Deployments for PodGroups of ReplicaSet
/// pods, and the PV binder, which makes new volumes Available (kube-scheduler's binder, and
/// ours, only offer Available volumes) and completes the bindings the scheduler starts. Node
/// lifecycle stays off: the test kubelets send no heartbeats.
const CONTROLLERS: &str = "serviceaccount-controller,garbage-collector-controller,\
namespace-controller,deployment-controller,replicaset-controller,\
persistentvolume-binder-controller";

/// A running real control plane. Dropping it kills every process and removes its folder.
#[derive(Debug)]
pub struct RealControlPlane {
    dir: tempfile::TempDir,
    etcd: Process,
    apiserver: Process,
    controller_manager: Option<Process>,
    url: String,
}

fn write(path: &Path, text: &str) -> Result<(), HarnessError> {
    std::fs::write(path, text).map_err(|e| HarnessError::io(format!("write {}", path.display()), e))
}

/// An audit policy file for measurements: where this names one, the API server writes what
/// it was asked, by whom, to `audit.log` in the control plane's folder.
pub const AUDIT_POLICY_VAR: &str = "VOLCANO_AUDIT_POLICY";

/// The API server's audit flags, where [`AUDIT_POLICY_VAR`] names a policy.
fn audit_args(dir: &Path) -> Vec<String> {
    match std::env::var(AUDIT_POLICY_VAR) {
        Ok(policy) if !policy.is_empty() => vec![
            format!("--audit-policy-file={policy}"),
            format!("--audit-log-path={}", dir.join("audit.log").display()),
        ],
        _ => Vec::new(),
    }
}

impl RealControlPlane {
    /// Starts etcd, then the API server, then the controller manager, and waits until the
    /// API server is ready. A free port found may be taken by another process before it is
    /// bound, and an API server gives up on an etcd it could never reach; such a start is
    /// tried again, on other ports, up to three times.
    pub async fn start(assets: &Assets) -> Result<RealControlPlane, HarnessError> {
        let mut tries = 0;
        loop {
            match RealControlPlane::start_once(assets).await {
                Err(HarnessError::NotReady { log, .. })
                    if tries < 2
                        && (log.contains("address already in use")
                            || log.contains("Error while dialing")) =>
                {
                    tries += 1;
                }
                done => return done,
            }
        }
    }

    async fn start_once(assets: &Assets) -> Result<RealControlPlane, HarnessError> {
        let dir = tempfile::Builder::new()
            .prefix("volcano-real-")
            .tempdir()
            .map_err(|e| HarnessError::io("make a folder for the control plane", e))?;
        let path = dir.path().to_path_buf();
        let (etcd_client, etcd_peer, secure) = (free_port()?, free_port()?, free_port()?);

        let etcd = Process::start(
            "etcd",
            &assets.etcd,
            vec![
                format!("--data-dir={}", path.join("etcd").display()),
                format!("--listen-client-urls=http://127.0.0.1:{etcd_client}"),
                format!("--advertise-client-urls=http://127.0.0.1:{etcd_client}"),
                format!("--listen-peer-urls=http://127.0.0.1:{etcd_peer}"),
                format!("--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}"),
                format!("--initial-cluster=default=http://127.0.0.1:{etcd_peer}"),
                // Tests need no durability across a power loss, and fsync dominates on CI.
                "--unsafe-no-fsync".into(),
                "--log-level=warn".into(),
            ],
            path.join("etcd.log"),
        )?;

        let key = rcgen::KeyPair::generate().map_err(|e| HarnessError::Key(e.to_string()))?;
        let (sa_key, sa_pub) = (path.join("sa.key"), path.join("sa.pub"));
        write(&sa_key, &key.serialize_pem())?;
        write(&sa_pub, &key.public_key_pem())?;
        let tokens = path.join("tokens.csv");
        write(
            &tokens,
            &format!(
                "{ADMIN_TOKEN},admin,admin-uid,system:masters\n\
                 {KUBE_SCHEDULER_TOKEN},system:kube-scheduler,kube-scheduler-uid\n"
            ),
        )?;
        let apiserver = Process::start(
            "kube-apiserver",
            &assets.kube_apiserver,
            vec![
                format!("--etcd-servers=http://127.0.0.1:{etcd_client}"),
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                format!("--secure-port={secure}"),
                format!("--cert-dir={}", path.join("certs").display()),
                format!("--token-auth-file={}", tokens.display()),
                "--authorization-mode=RBAC".into(),
                "--enable-admission-plugins=OwnerReferencesPermissionEnforcement".into(),
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
                format!("--service-account-key-file={}", sa_pub.display()),
                format!("--service-account-signing-key-file={}", sa_key.display()),
                "--service-cluster-ip-range=10.96.0.0/16".into(),
                "--allow-privileged=true".into(),
                "--v=1".into(),
            ]
            .into_iter()
            .chain(audit_args(&path))
            .collect(),
            path.join("kube-apiserver.log"),
        )?;
        let url = format!("https://127.0.0.1:{secure}");
        let mut plane = RealControlPlane {
            dir,
            etcd,
            apiserver,
            controller_manager: None,
            url,
        };
        plane.wait_ready(READY_SECS).await?;

        let kubeconfig = plane.kubeconfig_path();
        write(&kubeconfig, &plane.kubeconfig())?;
        if let Some(kcm) = &assets.kube_controller_manager {
            plane.controller_manager = Some(Process::start(
                "kube-controller-manager",
                kcm,
                vec![
                    format!("--kubeconfig={}", kubeconfig.display()),
                    format!("--controllers={CONTROLLERS}"),
                    "--leader-elect=false".into(),
                    "--bind-address=127.0.0.1".into(),
                    format!("--secure-port={}", free_port()?),
                    "--concurrent-gc-syncs=5".into(),
                    "--v=1".into(),
                ],
                path.join("kube-controller-manager.log"),
            )?);
        } else {
            // Nobody else makes the ServiceAccount that admission gives every pod of the
            // default namespace, and without it each pod is refused.
            let admin = plane.admin()?;
            crate::install::ensure_service_account(&admin, "default", "default").await?;
        }
        Ok(plane)
    }

    /// The API server's address.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The folder holding the control plane's data and logs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A kubeconfig of the administrator (for kubectl).
    pub fn kubeconfig(&self) -> String {
        kubeconfig_with_token(&self.url, "admin", ADMIN_TOKEN)
    }

    /// Where [`RealControlPlane::kubeconfig`] is written.
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.dir.path().join("admin.kubeconfig")
    }

    /// A kubeconfig of user `system:kube-scheduler`, for kube-scheduler.
    pub fn kube_scheduler_kubeconfig(&self) -> String {
        kubeconfig_with_token(&self.url, "system:kube-scheduler", KUBE_SCHEDULER_TOKEN)
    }

    /// A client of the administrator.
    pub fn admin(&self) -> Result<Client, HarnessError> {
        self.client_with_token(ADMIN_TOKEN, "volcano-testkit")
    }

    /// A client that authenticates with `token` (a ServiceAccount's, say) and names itself
    /// `agent` (the field manager of its writes).
    pub fn client_with_token(&self, token: &str, agent: &str) -> Result<Client, HarnessError> {
        let url = self
            .url
            .parse()
            .map_err(|e| HarnessError::Invalid(format!("API server address {}: {e}", self.url)))?;
        let mut config = Config::new(url);
        // The API server's certificate is its own self-signed one, made at start.
        config.accept_invalid_certs = true;
        config.auth_info = AuthInfo {
            token: Some(token.to_string().into()),
            ..AuthInfo::default()
        };
        config.read_timeout = Some(Duration::from_secs(30));
        let agent = http::HeaderValue::from_str(agent)
            .map_err(|e| HarnessError::Invalid(format!("user agent {agent:?}: {e}")))?;
        config.headers.push((http::header::USER_AGENT, agent));
        Client::try_from(config).map_err(|e| HarnessError::kube("build a client", e))
    }

    /// Waits until the API server answers `/readyz`.
    async fn wait_ready(&mut self, secs: u64) -> Result<(), HarnessError> {
        let client = self.admin()?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let req = http::Request::get("/readyz")
                .body(Vec::new())
                .map_err(|e| HarnessError::Invalid(e.to_string()))?;
            if let Ok(body) = client.request_text(req).await
                && body.trim() == "ok"
            {
                return Ok(());
            }
            if let Some(status) = self.apiserver.exited() {
                // An API server gives up when etcd never answers, and etcd may have lost its
                // port to another process between `free_port` and its start: its log says so,
                // and `start` tries again on it.
                return Err(HarnessError::NotReady {
                    what: format!("kube-apiserver (exited: {status})"),
                    secs,
                    log: format!(
                        "{}\n--- etcd:\n{}",
                        self.apiserver.log_tail(30),
                        self.etcd.log_tail(10)
                    ),
                });
            }
            if tokio::time::Instant::now() > deadline {
                return Err(HarnessError::NotReady {
                    what: self.apiserver.name().to_string(),
                    secs,
                    log: format!(
                        "{}\n--- etcd:\n{}",
                        self.apiserver.log_tail(30),
                        self.etcd.log_tail(10)
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Stops the API server for `outage`, as a crash or an upgrade would, then starts it again
    /// and waits until it is ready.
    pub async fn api_outage(&mut self, outage: Duration) -> Result<(), HarnessError> {
        self.apiserver.kill().await;
        tokio::time::sleep(outage).await;
        self.apiserver.restart()?;
        self.wait_ready(READY_SECS).await
    }

    /// The tail of the API server's log, for a failing test's message.
    pub fn apiserver_log(&self, lines: usize) -> String {
        self.apiserver.log_tail(lines)
    }
}

/// A kubeconfig for `url` with a bearer token.
pub fn kubeconfig_with_token(url: &str, user: &str, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: real\n  cluster:\n    server: {url}\n    \
         insecure-skip-tls-verify: true\nusers:\n- name: {user}\n  user:\n    token: {token}\n\
         contexts:\n- name: real\n  context:\n    cluster: real\n    user: {user}\n\
         current-context: real\n"
    )
}
