//! Volcano's Helm chart starts volcano-rs: the command lines its templates
//! (`installer/helm/chart/volcano/templates/{scheduler,controllers,admission}.yaml`) render with
//! the chart's default values, and with the values users commonly set, start the scheduler and
//! the controller-manager against `volcano up` (health answers, the process runs on), and parse
//! for the webhook-manager. Only the paths and ports that would collide on one machine are
//! changed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use volcano_scheduler::conf::DEFAULT_SCHEDULER_CONF;

/// The chart's scheduler args with its default values (release `volcano` in `volcano-system`).
/// `2>&1` is passed as an argument: a container's args are not run by a shell. `CONF` stands
/// for `/volcano.scheduler/volcano-scheduler.conf`.
const CHART_SCHEDULER: &[&str] = &[
    "--logtostderr",
    "--scheduler-conf=CONF",
    "--enable-healthz=true",
    "--enable-metrics=true",
    "--leader-elect=false",
    "--kube-api-qps=2000",
    "--kube-api-burst=2000",
    "--schedule-period=1s",
    "--node-worker-threads=20",
    "-v=3",
    "2>&1",
];

/// The same template with the values users set: a scheduler name, leader election, pprof,
/// plugins, feature gates, provisioners, sharding.
const CHART_SCHEDULER_VALUES: &[&str] = &[
    "--logtostderr",
    "--scheduler-conf=CONF",
    "--scheduler-name=volcano",
    "--enable-healthz=true",
    "--enable-metrics=true",
    "--enable-pprof=true",
    "--leader-elect=true",
    "--leader-elect-resource-namespace=volcano-system",
    "--kube-api-qps=3000",
    "--kube-api-burst=3000",
    "--schedule-period=500ms",
    "--node-worker-threads=40",
    "--percentage-nodes-to-find=30",
    "--plugins-dir=/plugins",
    "--feature-gates=PodDisruptionBudgetsSupport=true",
    "--ignored-provisioners=rancher.io/local-path,hostpath.csi.k8s.io",
    "--scheduler-sharding-mode=none",
    "-v=5",
    "2>&1",
];

/// The chart's controller-manager args with its default values.
const CHART_CONTROLLERS: &[&str] = &[
    "--logtostderr",
    "--enable-healthz=true",
    "--enable-metrics=true",
    "--leader-elect=false",
    "--kube-api-qps=50",
    "--kube-api-burst=100",
    "--worker-threads=3",
    "--worker-threads-for-gc=5",
    "--worker-threads-for-podgroup=5",
    "--sharding-configmap=volcano-sharding-configmap",
    "--sharding-configmap-namespace=volcano-system",
    "-v=4",
    "2>&1",
];

/// The same template with users' values (HyperNode controller standalone, a scheduler name,
/// leader election).
const CHART_CONTROLLERS_VALUES: &[&str] = &[
    "--logtostderr",
    "--enable-healthz=true",
    "--leader-elect=true",
    "--scheduler-name=volcano",
    "--leader-elect-resource-namespace=volcano-system",
    "--kube-api-qps=100",
    "--kube-api-burst=200",
    "--worker-threads=10",
    "--worker-threads-for-gc=2",
    "--worker-threads-for-podgroup=10",
    "--controllers=*,-sharding-controller,-hyperNode-controller",
    "-v=2",
    "2>&1",
];

/// The chart's webhook-manager args with its default values.
const CHART_WEBHOOK: &[&str] = &[
    "--enabled-admission=/jobs/mutate,/jobs/validate,/podgroups/validate,/queues/mutate,/queues/validate,/hypernodes/validate,/cronjobs/validate",
    "--tls-cert-file=/admission.local.config/certificates/tls.crt",
    "--tls-private-key-file=/admission.local.config/certificates/tls.key",
    "--ca-cert-file=/admission.local.config/certificates/ca.crt",
    "--admission-conf=/admission.local.config/configmap/volcano-admission.conf",
    "--webhook-namespace=volcano-system",
    "--webhook-service-name=volcano-admission-service",
    "--enable-healthz=true",
    "--logtostderr",
    "--port=8443",
    "-v=4",
    "2>&1",
];

/// A child process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A local control plane without scheduler and controllers, in its own directory.
struct Plane {
    _up: Killed,
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Drop for Plane {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn plane(name: &str) -> Plane {
    let dir = std::env::temp_dir().join(format!("volcano-helm-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let up = Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(["up", "--listen", "127.0.0.1:0", "--nodes", "1"])
        .args(["--no-scheduler", "--no-controllers"])
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let plane = Plane {
        _up: Killed(up),
        dir,
        kubeconfig,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !plane.kubeconfig.exists() {
        assert!(Instant::now() < deadline, "volcano up wrote no kubeconfig");
        std::thread::sleep(Duration::from_millis(50));
    }
    plane
}

/// The chart's args with the configuration path made real.
fn chart_args(args: &[&str], conf: &Path) -> Vec<String> {
    let conf = conf.to_str().unwrap();
    args.iter().map(|a| a.replace("CONF", conf)).collect()
}

/// The address a component logged for `flag` (`... (--healthz-address) address=127.0.0.1:N`).
fn logged_address(log: &str, flag: &str) -> Option<String> {
    let line = log.lines().find(|l| l.contains(&format!("({flag})")))?;
    let at = line.find("address=")? + "address=".len();
    Some(line[at..].split_whitespace().next()?.to_string())
}

/// The status line of `GET path`, or nothing while the server does not answer.
fn get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.lines().next().map(str::to_string)
}

/// The counters of work a component reports in `/metrics`: sessions (or periods skipped while
/// not leading) for the scheduler, turns for the controllers.
const WORK_COUNTERS: [&str; 3] = [
    "volcano_snapshots_total",
    "volcano_sessions_standby_total",
    "volcano_controller_turns_total",
];

/// The sum of the [`WORK_COUNTERS`] a component at `addr` exposes, or nothing while it does
/// not answer.
fn work_done(addr: &str) -> Option<u64> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let body = out.split_once("\r\n\r\n")?.1;
    let total = body
        .lines()
        .filter(|l| {
            let name = l.split(['{', ' ']).next().unwrap_or_default();
            WORK_COUNTERS.contains(&name)
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>();
    Some(total as u64)
}

/// Starts `volcano <component> <args>` with free ports, and waits until its health answers
/// on both the listen and the healthz address, then checks it runs on; returns its log.
fn starts(plane: &Plane, component: &str, args: &[String], tag: &str) -> String {
    let log_path = plane.dir.join(format!("{tag}.log"));
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_volcano"))
            .arg(component)
            .args(args)
            .arg("--kubeconfig")
            .arg(&plane.kubeconfig)
            // Volcano's defaults (:8080, :8081, :11251) would collide between tests.
            .args([
                "--listen-address=127.0.0.1:0",
                "--healthz-address=127.0.0.1:0",
            ])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .unwrap(),
    );
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut answered = Vec::new();
    while answered.len() < 2 {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!("{tag}: exited ({status}) at start:\n{}", log());
        }
        assert!(
            Instant::now() < deadline,
            "{tag}: health never answered:\n{}",
            log()
        );
        answered.clear();
        for flag in ["--listen-address", "--healthz-address"] {
            let status = logged_address(&log(), flag).and_then(|a| get(&a, "/healthz"));
            if status.is_some_and(|s| s.contains(" 200")) {
                answered.push(flag);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Ready once its watches listed: it talks to the API server with these flags.
    let listen = logged_address(&log(), "--listen-address").unwrap();
    while !get(&listen, "/readyz").is_some_and(|s| s.contains(" 200")) {
        assert!(Instant::now() < deadline, "{tag}: never ready:\n{}", log());
        std::thread::sleep(Duration::from_millis(100));
    }
    // Runs on: it did work through the API server (a session, or a controller's turn) and is
    // still there a second after it became ready. A component that never works fails here.
    let ready_at = Instant::now();
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!("{tag}: exited ({status}):\n{}", log());
        }
        let worked = work_done(&listen).is_some_and(|n| n > 0);
        if worked && ready_at.elapsed() >= Duration::from_secs(1) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{tag}: no session or controller turn in its metrics:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = log();
    assert!(!log.contains("unexpected argument"), "{tag}:\n{log}");
    log
}

#[test]
fn the_charts_scheduler_command_lines_start_the_scheduler() {
    let plane = plane("scheduler");
    let conf = plane.dir.join("volcano-scheduler.conf");
    std::fs::write(&conf, DEFAULT_SCHEDULER_CONF).unwrap();
    let log = starts(
        &plane,
        "scheduler",
        &chart_args(CHART_SCHEDULER, &conf),
        "defaults",
    );
    // One line names what was accepted without effect; another the shell redirection.
    let ignored: Vec<&str> = log.lines().filter(|l| l.contains("ignored:")).collect();
    assert_eq!(ignored.len(), 1, "{log}");
    for flag in [
        "--logtostderr",
        "--kube-api-qps",
        "--kube-api-burst",
        "--node-worker-threads",
    ] {
        assert!(ignored[0].contains(flag), "{flag}: {}", ignored[0]);
    }
    assert!(!ignored[0].contains("--enable-metrics"), "{}", ignored[0]);
    assert!(log.contains("not flags") && log.contains("2>&1"), "{log}");
    // -v=3: volcano-rs' debug lines are on.
    assert!(log.contains("DEBUG"), "{log}");

    let log = starts(
        &plane,
        "scheduler",
        &chart_args(CHART_SCHEDULER_VALUES, &conf),
        "values",
    );
    for flag in [
        "--plugins-dir",
        "--feature-gates",
        "--ignored-provisioners",
        "--enable-pprof",
    ] {
        assert!(log.contains(flag), "{flag}:\n{log}");
    }
}

#[test]
fn the_charts_controller_manager_command_lines_start_the_controllers() {
    let plane = plane("controllers");
    let args: Vec<String> = CHART_CONTROLLERS.iter().map(|a| a.to_string()).collect();
    let log = starts(&plane, "controller-manager", &args, "defaults");
    let ignored: Vec<&str> = log.lines().filter(|l| l.contains("ignored:")).collect();
    assert_eq!(ignored.len(), 1, "{log}");
    for flag in ["--worker-threads-for-gc", "--sharding-configmap-namespace"] {
        assert!(ignored[0].contains(flag), "{flag}: {}", ignored[0]);
    }
    let args: Vec<String> = CHART_CONTROLLERS_VALUES
        .iter()
        .map(|a| a.to_string())
        .collect();
    let log = starts(&plane, "controller-manager", &args, "values");
    assert!(
        log.contains("--controllers=*,-sharding-controller"),
        "{log}"
    );
    // -v=2: info only.
    assert!(!log.contains("DEBUG"), "{log}");
}

/// A CA and a serving certificate signed by it, as PEM files in `dir` (what the chart mounts
/// from its `volcano-admission-secret`).
fn write_certificates(dir: &Path) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let names = vec!["volcano-admission-service.volcano-system.svc".to_string()];
    let cert = rcgen::CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
    std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("ca.crt"), ca_cert.pem()).unwrap();
}

#[test]
fn the_charts_webhook_manager_command_line_starts_the_webhook_server() {
    let plane = plane("webhook");
    write_certificates(&plane.dir);
    let certs = plane.dir.to_str().unwrap();
    let args: Vec<String> = CHART_WEBHOOK
        .iter()
        .map(|a| a.replace("/admission.local.config/certificates", certs))
        // The chart's 8443 would collide between tests.
        .map(|a| {
            if a == "--port=8443" {
                "--port=0".to_string()
            } else {
                a
            }
        })
        .collect();
    let log_path = plane.dir.join("webhook.log");
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_volcano"))
            .arg("webhook-manager")
            .args(&args)
            .arg("--kubeconfig")
            .arg(&plane.kubeconfig)
            .arg("--healthz-address=127.0.0.1:0")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .unwrap(),
    );
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(30);
    // Ready once it has listed the queues: it serves with the chart's certificates and talks
    // to the API server.
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!("exited ({status}) at start:\n{}", log());
        }
        assert!(Instant::now() < deadline, "never ready:\n{}", log());
        let ready = logged_address(&log(), "--healthz-address")
            .and_then(|a| get(&a, "/readyz"))
            .is_some_and(|s| s.contains(" 200"));
        if ready {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(child.0.try_wait().unwrap().is_none(), "exited:\n{}", log());
    let log = log();
    assert!(
        log.contains("serving admission webhooks over HTTPS"),
        "{log}"
    );
    assert!(!log.contains("unexpected argument"), "{log}");
    // Every path of the chart's default list is served (HyperNodes' too).
    assert!(!log.contains("not served"), "{log}");
}

#[test]
fn a_port_in_use_is_named_with_its_flag() {
    let plane = plane("clash");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    for (component, flag) in [
        ("scheduler", "--listen-address"),
        ("controller-manager", "--healthz-address"),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_volcano"));
        cmd.arg(component)
            .arg("--kubeconfig")
            .arg(&plane.kubeconfig)
            .arg("--leader-elect=false");
        if flag == "--listen-address" {
            cmd.arg(format!("--listen-address={addr}"));
        } else {
            cmd.args(["--listen-address=127.0.0.1:0", "--enable-healthz"])
                .arg(format!("--healthz-address={addr}"));
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{component}: {err}");
        assert!(
            err.contains(&format!("{flag} {addr}")),
            "{component}: {err}"
        );
        assert!(!err.contains("panicked"), "{component}: {err}");
    }
}
