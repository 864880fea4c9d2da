//! `volcano load` on a real kube-apiserver (the real-cluster tier; skipped, saying so, where
//! `KUBEBUILDER_ASSETS` provides none), against our scheduler and controller manager run as
//! deploy/ runs them: the nodes it makes take pods, every pod it creates is bound, and its
//! report holds the latency percentiles, the API server's requests by verb and resource, and
//! the processes' CPU and memory. No figure is held to a threshold here: speed is judged by
//! benchmarks, not by tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod real;

use std::path::Path;
use std::process::Command;

use real::{Volcano, eventually, install, kubectl, text};
use serde_json::Value;
use volcano_testkit::{Assets, RealControlPlane};

/// Runs `volcano load <args> -o json` as the administrator and reads its report.
fn load(admin: &Path, args: &[&str], logs: &dyn Fn() -> String) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_volcano"))
        .arg("load")
        .arg("--kubeconfig")
        .arg(admin)
        .args(args)
        .args(["--timeout", "120", "-o", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "volcano load {args:?}: {}\n{}",
        text(&out),
        logs()
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("volcano load printed no JSON ({e}): {}", text(&out)))
}

/// Requests of `verb` on `resource` in the report.
fn requests(report: &Value, verb: &str, resource: &str) -> u64 {
    report["api"]["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["verb"] == verb && r["resource"] == resource)
        .map_or(0, |r| r["count"].as_u64().unwrap())
}

/// What every run reports, whatever arrives.
fn check_common(report: &Value, pods: u64, logs: &dyn Fn() -> String) {
    let p = &report["pods"];
    assert_eq!(p["created"], pods, "{report:#}");
    assert_eq!(p["bound"], pods, "every pod bound: {report:#}\n{}", logs());
    assert_eq!(p["unbound"], 0);
    assert_eq!(p["timed_out"], false);
    let latency = &report["latency"];
    assert_eq!(latency["count"], pods);
    for q in ["p50_ms", "p90_ms", "p99_ms", "max_ms"] {
        assert!(latency[q].as_f64().unwrap() >= 0.0, "{q}: {latency}");
    }
    assert!(latency["p50_ms"].as_f64() <= latency["p99_ms"].as_f64());
    assert!(report["throughput_per_s"].as_f64().unwrap() > 0.0);
    let api = &report["api"];
    assert_eq!(api["available"], true, "the admin reads /metrics: {api}");
    assert!(api["requests_total"].as_u64().unwrap() > 0);
    assert!(
        requests(report, "create", "pods/binding") >= pods,
        "the scheduler's bindings are counted: {api:#}"
    );
    assert!(
        api["cpu_seconds"].as_f64().is_some() && api["cpu_ms_per_bound_pod"].as_f64().is_some()
    );
    // The figures are read once the writes after the bindings have stopped, so every pod's
    // `Scheduled` event is in them, however late the scheduler writes it.
    assert!(
        requests(report, "create", "events") >= pods,
        "each bound pod's event is counted: {api:#}"
    );
    let settle = api["settle_seconds"].as_f64().unwrap();
    assert!((0.0..15.0).contains(&settle), "{api}");
    let processes = report["processes"].as_array().unwrap();
    let names: Vec<&str> = processes
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["scheduler", "controller-manager"]);
    for p in processes {
        assert!(p["rss_peak_bytes"].as_u64().unwrap() > 0, "{p}");
        assert!(p["rss_peak_bytes"].as_u64() >= p["rss_end_bytes"].as_u64());
        assert!(p["cpu_seconds"].as_f64().is_some());
        assert_eq!(p["exited"], false);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volcano_load_binds_every_pod_and_reports_latency_requests_and_process_figures() {
    let test = "volcano_load_binds_every_pod_and_reports_latency_requests_and_process_figures";
    let Some(assets) = Assets::or_skip(test) else {
        return;
    };
    let plane = RealControlPlane::start(&assets).await.unwrap();
    let admin = plane.kubeconfig_path();
    install(&admin);
    let volcano = Volcano::start(&plane);
    let logs = || {
        format!(
            "scheduler log:\n{}\ncontrollers log:\n{}",
            volcano.log("volcano-scheduler"),
            volcano.log("volcano-controllers")
        )
    };
    wait_for_webhooks(&plane, &volcano).await;

    let (controllers, scheduler) = volcano.pids();
    let (controllers, scheduler) = (controllers.to_string(), scheduler.to_string());
    let pids = [
        "--scheduler-pid",
        scheduler.as_str(),
        "--controller-pid",
        controllers.as_str(),
    ];

    // Bare pods: the scheduler binds each under a PodGroup kept in memory; none is created.
    let mut args = vec!["--nodes", "20", "--pods", "60", "--rate", "30"];
    args.extend(pids);
    let bare = load(&admin, &args, &logs);
    eprintln!("bare pods: {bare:#}");
    assert_eq!(bare["workload"], "pods");
    assert_eq!(bare["nodes"]["requested"], 20);
    assert_eq!(bare["nodes"]["created"], 20);
    check_common(&bare, 60, &logs);
    assert!(
        requests(&bare, "create", "pods") >= 60,
        "the pods' creation is counted: {:#}",
        bare["api"]
    );
    assert_eq!(
        requests(&bare, "create", "podgroups"),
        0,
        "a bare pod costs no PodGroup: {:#}",
        bare["api"]
    );
    let nodes = text(&kubectl(
        &admin,
        &["get", "nodes", "-l", "volcano-load/node", "-o", "name"],
    ));
    assert_eq!(nodes.lines().count(), 20, "{nodes}");

    // Gangs of 3: a PodGroup each, all of a gang bound.
    let mut args = vec![
        "--nodes",
        "20",
        "--pods",
        "60",
        "--gang-size",
        "3",
        "--rate",
        "10",
    ];
    args.extend(pids);
    let gangs = load(&admin, &args, &logs);
    eprintln!("gangs: {gangs:#}");
    assert_eq!(gangs["workload"], "gangs");
    assert_eq!(gangs["gang_size"], 3);
    assert_eq!(
        gangs["nodes"]["reused"], 20,
        "the nodes of the first run serve again"
    );
    assert_eq!(gangs["arrivals"]["requested"], 20);
    assert_eq!(gangs["arrivals"]["groups_created"], 20);
    check_common(&gangs, 60, &logs);
    assert!(requests(&gangs, "create", "pods") >= 60);
    assert!(
        requests(&gangs, "create", "podgroups") >= 20,
        "{:#}",
        gangs["api"]
    );

    // Volcano Jobs of 3: the controller manager makes the pods.
    let mut args = vec![
        "--nodes",
        "20",
        "--pods",
        "30",
        "--jobs",
        "--gang-size",
        "3",
        "--rate",
        "5",
    ];
    args.extend(pids);
    let jobs = load(&admin, &args, &logs);
    eprintln!("jobs: {jobs:#}");
    assert_eq!(jobs["workload"], "jobs");
    assert_eq!(jobs["arrivals"]["groups_created"], 10);
    check_common(&jobs, 30, &logs);
    assert!(requests(&jobs, "create", "jobs") >= 10, "{:#}", jobs["api"]);

    // The runs cleaned up after themselves; the nodes stay for the next.
    let (clean, seen) = eventually(60, || {
        let out = kubectl(
            &admin,
            &[
                "get",
                "pods,podgroups.scheduling.volcano.sh,jobs.batch.volcano.sh",
                "-n",
                "load",
                "-l",
                "volcano-load/run",
                "-o",
                "name",
            ],
        );
        (out.status.success() && out.stdout.is_empty(), text(&out))
    })
    .await;
    assert!(clean, "left behind: {seen}");
}

/// Waits until the webhook server admits a PodGroup: PodGroup writes wait for it
/// (failurePolicy Fail), and the first arrival must not be refused for it.
async fn wait_for_webhooks(plane: &RealControlPlane, volcano: &Volcano) {
    let admin = plane.kubeconfig_path();
    let probe = plane.dir().join("probe.yaml");
    std::fs::write(
        &probe,
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata:\n  name: probe\n  \
         namespace: default\nspec:\n  minMember: 1\n",
    )
    .unwrap();
    let (serving, seen) = eventually(30, || {
        let out = kubectl(&admin, &["apply", "-f", probe.to_str().unwrap()]);
        (out.status.success(), text(&out))
    })
    .await;
    assert!(
        serving,
        "{seen}\nwebhook log:\n{}",
        volcano.log("volcano-admission")
    );
    kubectl(&admin, &["delete", "-f", probe.to_str().unwrap()]);
}

/// Not a test but a measurement, run by hand with `--ignored --nocapture` (and `--release`
/// for a scheduler built as shipped): `volcano load` with `VOLCANO_LOAD_ARGS` (default
/// `--nodes 200 --pods 500 --rate 100`) against our scheduler and controllers on the real
/// control plane, its summary printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check: run with --ignored --nocapture"]
async fn measure() {
    let Some(assets) = Assets::or_skip("measure") else {
        return;
    };
    let plane = RealControlPlane::start(&assets).await.unwrap();
    let admin = plane.kubeconfig_path();
    install(&admin);
    let volcano = Volcano::start(&plane);
    wait_for_webhooks(&plane, &volcano).await;
    let (controllers, scheduler) = volcano.pids();
    let load_args = std::env::var("VOLCANO_LOAD_ARGS")
        .unwrap_or_else(|_| "--nodes 200 --pods 500 --rate 100".to_string());
    let out = Command::new(env!("CARGO_BIN_EXE_volcano"))
        .arg("load")
        .arg("--kubeconfig")
        .arg(&admin)
        .args(load_args.split_whitespace())
        .arg(format!("--scheduler-pid={scheduler}"))
        .arg(format!("--controller-pid={controllers}"))
        .output()
        .unwrap();
    println!("volcano load {load_args}\n{}", text(&out));
    keep_logs(&plane);
    assert!(out.status.success());
}

/// With `VOLCANO_MEASURE_LOGS` naming a folder, the control plane's logs (the components', and
/// the API server's audit log where `VOLCANO_AUDIT_POLICY` asked for one) are copied there,
/// to see which component asked what, and when.
fn keep_logs(plane: &RealControlPlane) {
    let Some(to) = std::env::var_os("VOLCANO_MEASURE_LOGS") else {
        return;
    };
    // The audit log is written in batches: let the last one out.
    std::thread::sleep(std::time::Duration::from_secs(2));
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(plane.dir()).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "log") {
            std::fs::copy(&path, Path::new(&to).join(entry.file_name())).unwrap();
        }
    }
}

/// kube-scheduler's figures for the same load, to set ours against: `kube-scheduler` from
/// `KUBEBUILDER_ASSETS` (beside kube-apiserver) on its own real control plane, as user
/// `system:kube-scheduler` (authorized by RBAC, as ours is), its client
/// rate limit raised out of the way (`--kube-api-qps 1000`) as ours has none, and `volcano load
/// --scheduler-name default-scheduler` with `VOLCANO_LOAD_ARGS`. Run by hand, as `measure`.
/// With `VOLCANO_BESIDE` set, deploy/ and our scheduler and controllers run beside it (idle for
/// its pods, but watching them, with the webhooks configured): what Volcano's shape alone costs
/// the API server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check: run with --ignored --nocapture"]
async fn measure_kube_scheduler() {
    let Some(assets) = Assets::or_skip("measure_kube_scheduler") else {
        return;
    };
    let Some(bin) = assets
        .kube_apiserver
        .parent()
        .map(|d| d.join("kube-scheduler"))
        .filter(|p| p.exists())
    else {
        println!("skipped: no kube-scheduler beside kube-apiserver in KUBEBUILDER_ASSETS");
        return;
    };
    let plane = RealControlPlane::start(&assets).await.unwrap();
    let admin = plane.kubeconfig_path();
    let _beside = if std::env::var("VOLCANO_BESIDE").is_ok() {
        install(&admin);
        let volcano = Volcano::start(&plane);
        wait_for_webhooks(&plane, &volcano).await;
        Some(volcano)
    } else {
        None
    };
    let own = plane.dir().join("kube-scheduler.kubeconfig");
    std::fs::write(&own, plane.kube_scheduler_kubeconfig()).unwrap();
    let log = std::fs::File::create(plane.dir().join("kube-scheduler.log")).unwrap();
    let mut scheduler = Command::new(bin)
        .arg(format!("--kubeconfig={}", own.display()))
        .args([
            "--leader-elect=false",
            "--secure-port=0",
            "--kube-api-qps=1000",
            "--kube-api-burst=1000",
        ])
        .stderr(log)
        .spawn()
        .unwrap();
    let load_args = std::env::var("VOLCANO_LOAD_ARGS")
        .unwrap_or_else(|_| "--nodes 200 --pods 500 --rate 100".to_string());
    let out = Command::new(env!("CARGO_BIN_EXE_volcano"))
        .arg("load")
        .arg("--kubeconfig")
        .arg(&admin)
        .args(load_args.split_whitespace())
        .args(["--scheduler-name", "default-scheduler"])
        .arg(format!("--scheduler-pid={}", scheduler.id()))
        .output()
        .unwrap();
    let _ = scheduler.kill();
    let _ = scheduler.wait();
    println!(
        "volcano load {load_args} --scheduler-name default-scheduler\n{}",
        text(&out)
    );
    assert!(out.status.success());
}
