//! What the real-cluster tests share: kubectl against the test API server, the install of
//! deploy/, and the `volcano` components run as processes with the tokens of deploy/'s
//! ServiceAccounts, so RBAC is exercised as in a cluster.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use volcano_testkit::RealControlPlane;
use volcano_testkit::control_plane::kubeconfig_with_token;

/// The repository's root, where deploy/ is.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs kubectl (`$KUBECTL`, else `kubectl` from PATH) with `kubeconfig`.
pub fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    let bin = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string());
    Command::new(bin)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs")
}

/// A command's stdout then stderr.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A component process, killed when the test ends.
pub struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `check` every 250 ms until it says yes or `secs` pass; gives its last answer.
pub async fn eventually(secs: u64, mut check: impl FnMut() -> (bool, String)) -> (bool, String) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (ok, seen) = check();
        if ok || Instant::now() > deadline {
            return (ok, seen);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `kubectl apply -f deploy/` as deploy/README.md says, then waits for Volcano's CRDs. The
/// Deployments' pods stay Pending here (no image, no kube-scheduler); [`Volcano::start`]
/// runs their binaries as processes.
pub fn install(admin: &Path) {
    let applied = kubectl(
        admin,
        &["apply", "-f", repo().join("deploy").to_str().unwrap()],
    );
    assert!(applied.status.success(), "{}", text(&applied));
    for crd in [
        "jobs.batch.volcano.sh",
        "queues.scheduling.volcano.sh",
        "podgroups.scheduling.volcano.sh",
    ] {
        let out = kubectl(
            admin,
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=30s",
                &format!("crd/{crd}"),
            ],
        );
        assert!(out.status.success(), "{}", text(&out));
    }
}

/// The webhook server, the controller manager and the scheduler, each with its
/// ServiceAccount's token, logging to `<account>.log` in the control plane's folder.
pub struct Volcano {
    dir: PathBuf,
    #[allow(dead_code)] // Only real_load samples the processes.
    pids: (u32, u32),
    _processes: Vec<Killed>,
}

impl Volcano {
    /// Starts the three components, the webhook server first: queue writes wait for it
    /// (failurePolicy Fail). The API server reaches it by URL, as this cluster has no
    /// Service network.
    pub fn start(plane: &RealControlPlane) -> Volcano {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let url = format!("--webhook-url=https://127.0.0.1:{port}");
        let port_arg = format!("--port={port}");
        // The paths deploy/ serves, as its webhook-manager Deployment lists them.
        let deployed = std::fs::read_to_string(repo().join("deploy/60-admission.yaml")).unwrap();
        let enabled = deployed
            .lines()
            .map(str::trim)
            .find_map(|l| {
                l.strip_prefix("- ")
                    .filter(|a| a.starts_with("--enabled-admission="))
            })
            .expect("deploy/60-admission.yaml passes --enabled-admission")
            .to_string();
        let webhook = component(
            plane,
            "volcano-admission",
            &[
                "webhook-manager",
                &enabled,
                "--webhook-namespace=volcano-system",
                "--webhook-service-name=volcano-admission-service",
                &url,
                "--listen-address=127.0.0.1",
                &port_arg,
            ],
        );
        let controllers = component(
            plane,
            "volcano-controllers",
            &["controller-manager", "--listen-address", "127.0.0.1:0"],
        );
        let scheduler = component(
            plane,
            "volcano-scheduler",
            &[
                "scheduler",
                "--schedule-period",
                "500ms",
                "--listen-address",
                "127.0.0.1:0",
            ],
        );
        Volcano {
            dir: plane.dir().to_path_buf(),
            pids: (controllers.0.id(), scheduler.0.id()),
            _processes: vec![webhook, controllers, scheduler],
        }
    }

    /// What the component running as `account` logged so far.
    pub fn log(&self, account: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{account}.log"))).unwrap_or_default()
    }

    /// The process ids of the controller manager and the scheduler, for `volcano load`'s
    /// process figures.
    #[allow(dead_code)] // Only real_load samples the processes.
    pub fn pids(&self) -> (u32, u32) {
        self.pids
    }
}

/// Runs `volcano <args>` with a kubeconfig holding a token of the ServiceAccount `account`
/// in volcano-system.
fn component(plane: &RealControlPlane, account: &str, args: &[&str]) -> Killed {
    let admin = plane.kubeconfig_path();
    let dir = plane.dir();
    let token = kubectl(
        &admin,
        &[
            "-n",
            "volcano-system",
            "create",
            "token",
            account,
            "--duration=2h",
        ],
    );
    assert!(token.status.success(), "{}", text(&token));
    let kc = dir.join(format!("{account}.kubeconfig"));
    let token = String::from_utf8_lossy(&token.stdout).trim().to_string();
    std::fs::write(&kc, kubeconfig_with_token(plane.url(), account, &token)).unwrap();
    Killed(
        Command::new(env!("CARGO_BIN_EXE_volcano"))
            .args(args)
            .arg("--kubeconfig")
            .arg(&kc)
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(dir.join(format!("{account}.log"))).unwrap(),
            ))
            .spawn()
            .unwrap(),
    )
}
