//! The install a platform engineer does, on a real kube-apiserver (the real-cluster tier; skipped,
//! saying so, where `KUBEBUILDER_ASSETS` provides none): `kubectl apply -f deploy/`, the
//! `volcano scheduler` and `volcano controller-manager` binaries run with the tokens of
//! deploy/'s ServiceAccounts, `kubectl apply -f deploy/examples/job.yaml` runs to completion,
//! the writes carry the components' names as field managers, and the default queue stays.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use volcano_apiserver::kubelet::NodeSpec;
use volcano_testkit::control_plane::kubeconfig_with_token;
use volcano_testkit::kubelet::{ApiKubelets, KubeletOptions};
use volcano_testkit::{Assets, RealControlPlane};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    let bin = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string());
    Command::new(bin)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A component process, killed when the test ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn eventually(secs: u64, mut check: impl FnMut() -> (bool, String)) -> (bool, String) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (ok, seen) = check();
        if ok || Instant::now() > deadline {
            return (ok, seen);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_of_deploy_runs_the_example_job_with_the_service_accounts_permissions() {
    let test = "kubectl_apply_of_deploy_runs_the_example_job_with_the_service_accounts_permissions";
    let Some(assets) = Assets::or_skip(test) else {
        return;
    };
    let plane = RealControlPlane::start(&assets).await.unwrap();
    let admin = plane.kubeconfig_path();
    // As written in deploy/README.md. The Deployments' pods stay Pending here (no image, no
    // kube-scheduler); their binaries run below, as processes.
    let applied = kubectl(
        &admin,
        &["apply", "-f", repo().join("deploy").to_str().unwrap()],
    );
    assert!(applied.status.success(), "{}", text(&applied));
    for crd in ["jobs.batch.volcano.sh", "queues.scheduling.volcano.sh"] {
        let out = kubectl(
            &admin,
            &[
                "wait",
                "--for=condition=Established",
                "--timeout=30s",
                &format!("crd/{crd}"),
            ],
        );
        assert!(out.status.success(), "{}", text(&out));
    }
    let _kubelets = ApiKubelets::start(
        plane.admin().unwrap(),
        &[NodeSpec::new("node-0").cpu("4").memory("8Gi")],
        KubeletOptions::default(),
    )
    .await
    .unwrap();

    let dir = plane.dir().to_path_buf();
    let component = |account: &str, args: &[&str]| {
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
    };
    // The webhook server first: queue writes wait for it (failurePolicy Fail). The API server
    // reaches it by URL, as this cluster has no Service network.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("--webhook-url=https://127.0.0.1:{port}");
    let port_arg = format!("--port={port}");
    let _webhook = component(
        "volcano-admission",
        &[
            "webhook-manager",
            "--webhook-namespace=volcano-system",
            "--webhook-service-name=volcano-admission-service",
            &url,
            "--listen-address=127.0.0.1",
            &port_arg,
        ],
    );
    let _controllers = component(
        "volcano-controllers",
        &["controller-manager", "--listen-address", "127.0.0.1:0"],
    );
    let _scheduler = component(
        "volcano-scheduler",
        &[
            "scheduler",
            "--schedule-period",
            "500ms",
            "--listen-address",
            "127.0.0.1:0",
        ],
    );

    let example = repo().join("deploy/examples/job.yaml");
    let (queued, seen) = eventually(20, || {
        let out = kubectl(&admin, &["apply", "-f", example.to_str().unwrap()]);
        (out.status.success(), text(&out))
    })
    .await;
    assert!(
        queued,
        "{seen}\nwebhook log:\n{}",
        std::fs::read_to_string(dir.join("volcano-admission.log")).unwrap_or_default()
    );
    let (done, phase) = eventually(60, || {
        let out = kubectl(
            &admin,
            &[
                "get",
                "vcjob",
                "hello-gang",
                "-o",
                "jsonpath={.status.state.phase}",
            ],
        );
        let phase = text(&out);
        (phase == "Completed", phase)
    })
    .await;
    let logs = |account: &str| {
        std::fs::read_to_string(dir.join(format!("{account}.log"))).unwrap_or_default()
    };
    assert!(
        done,
        "phase {phase}\nscheduler log:\n{}\ncontrollers log:\n{}",
        logs("volcano-scheduler"),
        logs("volcano-controllers")
    );

    // Who wrote what is named: the API server takes the field manager from the user agent.
    let managers = |what: &[&str]| {
        let mut args = vec!["get"];
        args.extend_from_slice(what);
        args.extend([
            "--show-managed-fields",
            "-o",
            "jsonpath={..managedFields[*].manager}",
        ]);
        text(&kubectl(&admin, &args))
    };
    let job = managers(&["vcjob", "hello-gang"]);
    assert!(job.contains("volcano-controllers"), "{job}");
    let queue = managers(&["queue", "default"]);
    assert!(queue.contains("volcano-scheduler"), "{queue}");
    assert!(
        !format!("{job} {queue}").contains("unknown"),
        "{job} {queue}"
    );

    // The webhook refuses what Volcano's refuses, with its words.
    let bad_queue = dir.join("bad-queue.yaml");
    std::fs::write(
        &bad_queue,
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: lost\n\
         spec:\n  weight: 1\n  parent: nowhere\n",
    )
    .unwrap();
    let (refused, seen) = eventually(10, || {
        let out = kubectl(&admin, &["create", "-f", bad_queue.to_str().unwrap()]);
        (!out.status.success(), text(&out))
    })
    .await;
    assert!(refused, "{seen}");
    assert!(
        seen.contains("admission webhook \"validatequeue.volcano.sh\" denied the request: failed to get parent queue nowhere"),
        "{seen}"
    );

    let refused = kubectl(&admin, &["delete", "queue", "default"]);
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("`default` queue can not be deleted"),
        "{}",
        text(&refused)
    );
}
