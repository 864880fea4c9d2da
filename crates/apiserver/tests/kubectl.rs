//! The real kubectl against the local server: apply, get (tables, wide, yaml), label, describe,
//! delete. Skipped, with a note, when kubectl is not installed; `KUBECTL=/path/to/kubectl`
//! picks another binary.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use volcano_apiserver::kubeconfig;
use volcano_apiserver::kubelet::{KubeletOptions, Kubelets, NodeSpec};

const JOB: &str = "\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: test-job
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: research
  tasks:
  - replicas: 2
    name: worker
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: busybox:1.36
          command: [sleep, '5']
          resources:
            requests:
              cpu: '1'
";

const QUEUES: &str = "\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: default
spec:
  weight: 1
  reclaimable: true
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: research
spec:
  weight: 2
";

fn find_kubectl() -> Option<PathBuf> {
    if let Some(explicit) = std::env::var_os("KUBECTL") {
        return Some(PathBuf::from(explicit));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|candidate| candidate.is_file())
}

/// Runs kubectl with a 30 s guard; returns its exit success and stdout + stderr.
fn kubectl(bin: &Path, dir: &Path, args: &[&str]) -> (bool, String) {
    let mut child = Command::new(bin)
        .arg("--kubeconfig")
        .arg(dir.join("kubeconfig"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("KUBECACHEDIR", dir.join("cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child
        .try_wait()
        .expect("kubectl can be waited for")
        .is_none()
    {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("kubectl {args:?} did not finish in 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("kubectl output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_get_label_describe_delete() {
    let Some(bin) = find_kubectl() else {
        assert!(
            std::env::var_os("VOLCANO_REQUIRE_KUBECTL").is_none(),
            "VOLCANO_REQUIRE_KUBECTL is set but no kubectl was found (set KUBECTL)"
        );
        eprintln!("note: kubectl not found on PATH; skipping the kubectl smoke test");
        return;
    };
    let t = common::start().await;
    let store = t.server.store();
    let opts = KubeletOptions {
        startup_delay: Duration::from_millis(50),
    };
    let _kubelets = Kubelets::start(store.clone(), &[NodeSpec::new("n1")], opts)
        .await
        .unwrap();
    let dir =
        std::env::temp_dir().join(format!("volcano-apiserver-kubectl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("kubeconfig"), kubeconfig(&t.server.url())).unwrap();
    std::fs::write(dir.join("job.yaml"), JOB).unwrap();
    std::fs::write(dir.join("queues.yaml"), QUEUES).unwrap();
    // What the controllers and the scheduler would have made of the job, in its queue.
    let research = json!({"metadata": {"name": "research"}, "spec": {"weight": 1}});
    store.create("queues", None, research).unwrap();
    let pg =
        json!({"metadata": {"name": "test-job"}, "spec": {"minMember": 2, "queue": "research"}});
    store.create("podgroups", Some("default"), pg).unwrap();
    let pod = json!({"metadata": {"name": "test-job-worker-0"},
        "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "busybox"}]}});
    store.create("pods", Some("default"), pod).unwrap();

    let run = |args: Vec<&'static str>| {
        let (bin, dir) = (bin.clone(), dir.clone());
        tokio::task::spawn_blocking(move || kubectl(&bin, &dir, &args))
    };
    let check = |(ok, out): (bool, String), wants: &[&str]| {
        assert!(ok, "kubectl failed:\n{out}");
        for want in wants {
            assert!(out.contains(want), "missing {want:?} in:\n{out}");
        }
        out
    };

    let applied = run(vec!["apply", "-f", "queues.yaml", "-f", "job.yaml"])
        .await
        .unwrap();
    check(
        applied,
        &[
            "queue.scheduling.volcano.sh/default configured",
            "job.batch.volcano.sh/test-job created",
        ],
    );
    let again = run(vec!["apply", "-f", "queues.yaml", "-f", "job.yaml"])
        .await
        .unwrap();
    check(
        again,
        &[
            "queue.scheduling.volcano.sh/research unchanged",
            // kubectl sends the task list as written, without the defaults admission added;
            // admission defaults it again, so the write is accepted and changes nothing.
            "job.batch.volcano.sh/test-job configured",
        ],
    );
    common::within(10, async {
        while store
            .get("pods", Some("default"), "test-job-worker-0")
            .unwrap()["status"]["phase"]
            != "Running"
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let all = run(vec!["get", "vcjob,pg,queue,pods"]).await.unwrap();
    check(
        all,
        &[
            "job.batch.volcano.sh/test-job",
            "podgroup.scheduling.volcano.sh/test-job",
            "queue.scheduling.volcano.sh/research",
            "pod/test-job-worker-0",
            "MINAVAILABLE",
            "Running",
        ],
    );
    let wide = run(vec!["get", "pods", "-o", "wide"]).await.unwrap();
    check(wide, &["NODE", "n1", "10.244.0."]);
    let yaml = run(vec!["get", "queue", "default", "-o", "yaml"])
        .await
        .unwrap();
    check(yaml, &["kind: Queue", "name: default", "weight: 1"]);
    let labelled = run(vec!["label", "queue", "research", "team=ml"])
        .await
        .unwrap();
    check(labelled, &["labeled"]);
    let selected = run(vec!["get", "queues", "-l", "team=ml", "-o", "name"])
        .await
        .unwrap();
    let selected = check(selected, &["queue.scheduling.volcano.sh/research"]);
    assert!(!selected.contains("/default"), "{selected}");
    let described = run(vec!["describe", "vcjob", "test-job"]).await.unwrap();
    check(described, &["Name:", "test-job", "Min Available:"]);
    let (ok, deleted) = run(vec!["delete", "-f", "job.yaml", "-f", "queues.yaml"])
        .await
        .unwrap();
    // The default queue stays, as Volcano's queue webhook keeps it.
    assert!(!ok, "deleting the default queue succeeded:\n{deleted}");
    for want in [
        "\"test-job\" deleted",
        "\"research\" deleted",
        "admission webhook \"validatequeue.volcano.sh\" denied the request",
        "`default` queue can not be deleted",
    ] {
        assert!(deleted.contains(want), "missing {want:?} in:\n{deleted}");
    }
    let none = run(vec!["get", "vcjob"]).await.unwrap();
    check(none, &["No resources found"]);

    let _ = std::fs::remove_dir_all(&dir);
    t.server.shutdown().await;
}

const GPU_POD: &str = "\
apiVersion: v1
kind: Pod
metadata:
  name: gpu
spec:
  containers:
  - name: main
    image: busybox:1.36
    resources:
      requests:
        nvidia.com/gpu: '1'
";

const MISSPELT_JOB: &str = "\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: misspelt
spec:
  minAvaliable: 1
  queue: default
  tasks:
  - replicas: 1
    name: worker
    template:
      spec:
        containers:
        - name: main
          image: busybox:1.36
";

/// What a real API server refuses, kubectl shows from the local one too: each refused field,
/// unknown fields under kubectl's strict validation, and why a simulated pod has no logs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_shows_the_refusals_of_a_real_server() {
    let Some(bin) = find_kubectl() else {
        eprintln!("note: kubectl not found on PATH; skipping the kubectl refusal test");
        return;
    };
    let t = common::start().await;
    let store = t.server.store();
    let opts = KubeletOptions {
        startup_delay: Duration::from_millis(50),
    };
    let _kubelets = Kubelets::start(store.clone(), &[NodeSpec::new("n1").gpus(1)], opts)
        .await
        .unwrap();
    let dir = std::env::temp_dir().join(format!(
        "volcano-apiserver-kubectl-refusals-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("kubeconfig"), kubeconfig(&t.server.url())).unwrap();
    std::fs::write(dir.join("gpu.yaml"), GPU_POD).unwrap();
    std::fs::write(dir.join("job.yaml"), MISSPELT_JOB).unwrap();
    let run = |args: Vec<&'static str>| {
        let (bin, dir) = (bin.clone(), dir.clone());
        tokio::task::spawn_blocking(move || kubectl(&bin, &dir, &args))
    };
    let refused = |(ok, out): (bool, String), wants: &[&str]| {
        assert!(!ok, "kubectl succeeded:\n{out}");
        for want in wants {
            assert!(out.contains(want), "missing {want:?} in:\n{out}");
        }
    };

    let gpu = run(vec!["apply", "-f", "gpu.yaml"]).await.unwrap();
    refused(
        gpu,
        &[
            "The Pod \"gpu\" is invalid",
            "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
        ],
    );
    let strict = run(vec!["apply", "-f", "job.yaml"]).await.unwrap();
    refused(
        strict,
        &[
            "Job in version \"v1alpha1\" cannot be handled as a Job: strict decoding error: unknown field \"spec.minAvaliable\"",
        ],
    );
    assert!(store.get("jobs", Some("default"), "misspelt").is_err());
    let (ok, warned) = run(vec!["apply", "--validate=warn", "-f", "job.yaml"])
        .await
        .unwrap();
    assert!(ok, "{warned}");
    assert!(
        warned.contains("Warning: unknown field \"spec.minAvaliable\""),
        "{warned}"
    );
    let job = store.get("jobs", Some("default"), "misspelt").unwrap();
    assert!(job["spec"].get("minAvaliable").is_none(), "{job}");

    let pod = json!({"metadata": {"name": "sim"},
        "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "busybox"}]}});
    store.create("pods", Some("default"), pod).unwrap();
    let logs = run(vec!["logs", "sim"]).await.unwrap();
    refused(
        logs,
        &["volcano up runs no containers: pod default/sim is simulated, it has no logs"],
    );
    common::within(10, async {
        while store.get("pods", Some("default"), "sim").unwrap()["status"]["phase"] != "Running" {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let exec = run(vec!["exec", "sim", "--", "ls"]).await.unwrap();
    refused(exec, &["volcano up runs no containers: pod default/sim"]);
    // kubectl waits until the kubelet has stopped the pod and confirmed the deletion.
    let (ok, deleted) = run(vec!["delete", "pod", "sim"]).await.unwrap();
    assert!(ok && deleted.contains("pod \"sim\" deleted"), "{deleted}");
    assert!(store.get("pods", Some("default"), "sim").is_err());

    let _ = std::fs::remove_dir_all(&dir);
    t.server.shutdown().await;
}

const STORAGE: &str = "\
apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv1
spec:
  capacity:
    storage: 10Gi
  accessModes: [ReadWriteOnce]
  storageClassName: local
  hostPath:
    path: /mnt/pv1
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: team
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local
  resources:
    requests:
      storage: 1Gi
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata:
  name: n1
spec:
  drivers:
  - name: ebs.csi.aws.com
    nodeID: i-1
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_lists_and_binds_volumes_claims_classes_and_csinodes() {
    let Some(bin) = find_kubectl() else {
        eprintln!("note: kubectl not found on PATH; skipping the kubectl storage test");
        return;
    };
    let t = common::start().await;
    let dir = std::env::temp_dir().join(format!(
        "volcano-apiserver-kubectl-storage-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("kubeconfig"), kubeconfig(&t.server.url())).unwrap();
    std::fs::write(dir.join("storage.yaml"), STORAGE).unwrap();
    let run = |args: Vec<&'static str>| {
        let (bin, dir) = (bin.clone(), dir.clone());
        tokio::task::spawn_blocking(move || kubectl(&bin, &dir, &args))
    };
    let check = |(ok, out): (bool, String), wants: &[&str]| {
        assert!(ok, "kubectl failed:\n{out}");
        for want in wants {
            assert!(out.contains(want), "missing {want:?} in:\n{out}");
        }
    };
    check(
        run(vec!["apply", "-f", "storage.yaml"]).await.unwrap(),
        &[
            "namespace/team created",
            "storageclass.storage.k8s.io/local created",
            "persistentvolume/pv1 created",
            "persistentvolumeclaim/data created",
            "csinode.storage.k8s.io/n1 created",
        ],
    );
    check(
        run(vec!["get", "pv,pvc,sc,csinode,ns", "-A"])
            .await
            .unwrap(),
        &[
            "persistentvolume/pv1",
            "10Gi",
            "RWO",
            "Retain",
            "persistentvolumeclaim/data",
            "storageclass.storage.k8s.io/local",
            "WaitForFirstConsumer",
            "csinode.storage.k8s.io/n1",
            "namespace/team",
        ],
    );
    let bind = r#"{"spec":{"volumeName":"pv1"},"metadata":{"annotations":{"pv.kubernetes.io/bind-completed":"yes"}}}"#;
    check(
        run(vec![
            "patch", "pvc", "data", "-n", "team", "--type", "merge", "-p", bind,
        ])
        .await
        .unwrap(),
        &["persistentvolumeclaim/data patched"],
    );
    check(
        run(vec![
            "get",
            "pvc",
            "data",
            "-n",
            "team",
            "-o",
            "jsonpath={.spec.volumeName}",
        ])
        .await
        .unwrap(),
        &["pv1"],
    );
    check(
        run(vec!["delete", "pv", "pv1"]).await.unwrap(),
        &["persistentvolume \"pv1\" deleted"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}
