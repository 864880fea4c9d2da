//! The pod watch of the scheduler and of the controller-manager is protobuf on a real
//! kube-apiserver (the real-cluster tier; skipped, saying so, where `KUBEBUILDER_ASSETS`
//! provides none): a pod with every field either reads set reads the same from the server's
//! protobuf as from its JSON, and the watch brings a new pod, a change and a deletion. With
//! `VOLCANO_WRITE_FIXTURES=<dir>` it writes the pod in both encodings there, as the unit
//! tests' fixtures.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::header;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use tokio::sync::mpsc;
use volcano_api::k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use volcano_api::k8s_openapi::api::node::v1::RuntimeClass;
use volcano_api::k8s_openapi::api::scheduling::v1::PriorityClass;
use volcano_runtime::mirror::{Kind, Update};
use volcano_runtime::reflect::{self, PodView};
use volcano_testkit::{Assets, RealControlPlane};

/// A pod setting each field the scheduler reads, in each shape it comes in.
fn rich_pod(owner_uid: &str) -> Pod {
    let selector = json!({"matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]});
    let term = json!({"labelSelector": selector, "topologyKey": "kubernetes.io/hostname",
        "namespaces": ["default"], "namespaceSelector": {"matchLabels": {"team": "x"}},
        "matchLabelKeys": ["pod-template-hash"]});
    let node_term = json!({
        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1", "z2"]}],
        "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n9"]}]});
    let claim_spec = json!({"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
        "resources": {"requests": {"storage": "1Gi"}},
        "selector": {"matchLabels": {"disk": "ssd"}}});
    serde_json::from_value(json!({
        "metadata": {
            "name": "rich", "namespace": "default",
            "labels": {"app": "web", "tier": "a", "pod-template-hash": "h1"},
            "annotations": {"scheduling.k8s.io/group-name": "rich",
                "kubectl.kubernetes.io/last-applied-configuration": "{}"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": owner_uid, "controller": true, "blockOwnerDeletion": false}],
            "finalizers": ["volcano.sh/test-keep"],
        },
        "spec": {
            "schedulerName": "volcano",
            "runtimeClassName": "with-overhead",
            "priorityClassName": "batch-never-preempts",
            "nodeSelector": {"disk": "ssd"},
            "schedulingGates": [{"name": "wait"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [node_term]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": node_term}],
                },
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [term],
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 3, "podAffinityTerm": term}],
                },
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [term],
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 7, "podAffinityTerm": term}],
                },
            },
            "tolerations": [
                {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "flaky", "operator": "Equal", "value": "yes", "effect": "NoExecute",
                 "tolerationSeconds": 30},
            ],
            "topologySpreadConstraints": [{"maxSkew": 2, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector, "minDomains": 2,
                "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": "Ignore",
                "matchLabelKeys": ["pod-template-hash"]}],
            "initContainers": [{"name": "sidecar", "image": "busybox", "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "100m"}}}],
            "containers": [
                {"name": "main", "image": "busybox", "env": [{"name": "A", "value": "b"}],
                 "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP", "name": "http"},
                           {"containerPort": 9090}],
                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                               "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}},
                {"name": "helper", "image": "busybox",
                 "resources": {"requests": {"cpu": "250m"}}},
            ],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-rich", "readOnly": true}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                    "metadata": {"labels": {"kind": "scratch"}}, "spec": claim_spec}}},
                {"name": "secrets", "csi": {"driver": "secrets.example.com", "readOnly": true,
                    "fsType": "ext4", "volumeAttributes": {"store": "vault"},
                    "nodePublishSecretRef": {"name": "creds"}}},
                {"name": "tmp", "emptyDir": {}},
            ],
        },
    }))
    .unwrap()
}

/// The pod as the API server answers a GET in `accept`.
async fn get(client: &Client, accept: &str) -> Vec<u8> {
    let request = http::Request::get("/api/v1/namespaces/default/pods/rich")
        .header(header::ACCEPT, accept)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(request).await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    response.into_body().collect_bytes().await.unwrap().to_vec()
}

/// What the log says, for the watch's own word on its encoding.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The next pod update about `name` that `ok` accepts, within ten seconds.
async fn next_about(
    rx: &mut mpsc::Receiver<Update>,
    name: &str,
    ok: impl Fn(&watcher::Event<Pod>) -> bool,
) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while let Ok(Some(update)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        if let Update::Pod(ev) = update {
            let about = match &ev {
                watcher::Event::Apply(p)
                | watcher::Event::InitApply(p)
                | watcher::Event::Delete(p) => p.metadata.name.as_deref() == Some(name),
                _ => false,
            };
            if about && ok(&ev) {
                return true;
            }
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_watched_in_protobuf_reads_as_in_json() {
    let Some(assets) = Assets::or_skip("a_pod_watched_in_protobuf_reads_as_in_json") else {
        return;
    };
    let log = Log::default();
    let writer = log.clone();
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .try_init();
    let plane = RealControlPlane::start(&assets).await.unwrap();
    let client = plane.admin().unwrap();
    let post = PostParams::default();
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    if accounts.get_opt("default").await.unwrap().is_none() {
        let sa = serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
        accounts.create(&post, &sa).await.unwrap();
    }
    let runtime: RuntimeClass = serde_json::from_value(json!({
        "metadata": {"name": "with-overhead"}, "handler": "runc",
        "overhead": {"podFixed": {"cpu": "50m", "memory": "64Mi"}}}))
    .unwrap();
    Api::<RuntimeClass>::all(client.clone())
        .create(&post, &runtime)
        .await
        .unwrap();
    let class: PriorityClass = serde_json::from_value(json!({
        "metadata": {"name": "batch-never-preempts"}, "value": 1000,
        "preemptionPolicy": "Never"}))
    .unwrap();
    Api::<PriorityClass>::all(client.clone())
        .create(&post, &class)
        .await
        .unwrap();
    let owner: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "owner", "namespace": "default"}}))
            .unwrap();
    let owner = Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&post, &owner)
        .await
        .unwrap();

    // The watch starts before the pod exists, so the pod comes to it as watch events.
    let (tx, mut rx) = mpsc::channel(1024);
    let mut watchers = reflect::watch(&client, &[Kind::Pod], PodView::Scheduler, &tx);
    // The controller-manager's watch, beside it.
    let (tx, mut controllers_rx) = mpsc::channel(1024);
    watchers.extend(reflect::watch(
        &client,
        &[Kind::Pod],
        PodView::Controllers,
        &tx,
    ));
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let uid = owner.metadata.uid.clone().unwrap();
    pods.create(&post, &rich_pod(&uid)).await.unwrap();
    assert!(
        next_about(&mut rx, "rich", |_| true).await,
        "the new pod came through the watch"
    );
    // A status as the scheduler leaves an unschedulable pod, container statuses as a kubelet
    // writes them, and a deletion waiting on a finalizer, so that every field the scheduler
    // and the controllers read is set.
    let at = "2026-11-28T00:00:00Z";
    let container = |name: &str, ready: bool, restarts: i32, state: serde_json::Value| {
        json!({"name": name, "ready": ready, "restartCount": restarts, "image": "busybox",
            "imageID": "docker.io/library/busybox@sha256:1", "started": ready, "state": state,
            "lastState": {"terminated": {"exitCode": 137, "signal": 9, "reason": "Error",
                "message": "killed", "startedAt": at, "finishedAt": at,
                "containerID": "containerd://1"}}})
    };
    let mut helper = container(
        "helper",
        false,
        0,
        json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}}),
    );
    // As a kubelet writes a container that has not restarted.
    helper["lastState"] = json!({});
    let status = json!({"status": {"nominatedNodeName": "n1", "startTime": at, "conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/3 nodes are available", "lastTransitionTime": at}],
        "containerStatuses": [
            container("main", true, 2, json!({"running": {"startedAt": at}})),
            helper],
        "initContainerStatuses": [
            container("sidecar", false, 1, json!({"terminated": {"exitCode": 0,
                "reason": "Completed", "startedAt": at, "finishedAt": at}}))]}});
    pods.patch_status("rich", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    pods.delete("rich", &DeleteParams::default()).await.unwrap();

    let (json, protobuf) = (
        get(&client, "application/json").await,
        get(&client, "application/vnd.kubernetes.protobuf").await,
    );
    if let Some(dir) = std::env::var_os("VOLCANO_WRITE_FIXTURES") {
        // How the unit tests' copies (`tests/fixtures/rich-pod.*`) are made.
        let dir = std::path::Path::new(&dir);
        std::fs::write(dir.join("rich-pod.json"), &json).unwrap();
        std::fs::write(dir.join("rich-pod.pb"), &protobuf).unwrap();
    }
    let json_pod = reflect::read::<Pod>(&json).unwrap();
    let from_json = PodView::Scheduler.keep(json_pod.clone());
    let from_protobuf = reflect::read_protobuf_pod(&protobuf, PodView::Scheduler).unwrap();
    assert_eq!(from_protobuf, from_json);

    // The controller-manager's view reads the same from both, container statuses and all.
    let for_controllers = reflect::read_protobuf_pod(&protobuf, PodView::Controllers).unwrap();
    assert_eq!(for_controllers, PodView::Controllers.keep(json_pod));
    let statuses = for_controllers.status.as_ref().unwrap();
    let main = &statuses.container_statuses.as_ref().unwrap()[0];
    assert_eq!((main.ready, main.restart_count), (true, 2));
    let running = main.state.as_ref().and_then(|s| s.running.as_ref());
    assert!(running.is_some_and(|r| r.started_at.is_some()));
    let helper = &statuses.container_statuses.as_ref().unwrap()[1];
    let waiting = helper.state.as_ref().and_then(|s| s.waiting.as_ref());
    assert_eq!(
        waiting.and_then(|w| w.reason.as_deref()),
        Some("CrashLoopBackOff")
    );
    let sidecar = &statuses.init_container_statuses.as_ref().unwrap()[0];
    assert_eq!(sidecar.restart_count, 1);
    assert!(
        sidecar
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .is_some_and(|t| t.exit_code == 0 && t.finished_at.is_some())
    );
    // Both readings hold what was set: equal because both read it, not because both lost it.
    let spec = from_protobuf.spec.as_ref().unwrap();
    assert!(from_protobuf.metadata.deletion_timestamp.is_some());
    assert_eq!(
        from_protobuf
            .metadata
            .owner_references
            .as_ref()
            .map(Vec::len),
        Some(1)
    );
    assert!(
        spec.affinity
            .as_ref()
            .is_some_and(|a| a.pod_anti_affinity.is_some())
    );
    assert_eq!(
        spec.volumes.as_ref().map(Vec::len),
        Some(3),
        "all but emptyDir"
    );
    assert_eq!(spec.containers.len(), 2);
    assert_eq!(
        spec.containers[0].ports.as_ref().map(Vec::len),
        Some(1),
        "the host port"
    );
    assert!(spec.overhead.is_some() && spec.topology_spread_constraints.is_some());
    let status = from_protobuf.status.as_ref().unwrap();
    assert_eq!(status.nominated_node_name.as_deref(), Some("n1"));
    assert_eq!(status.conditions.as_ref().map(Vec::len), Some(1));

    // The watch brought the change and the deletion as the GET reads them.
    for (watch, rx, want) in [
        ("the controllers'", &mut controllers_rx, &for_controllers),
        ("the scheduler's", &mut rx, &from_json),
    ] {
        let now = |e: &watcher::Event<Pod>| matches!(e, watcher::Event::Apply(p) if p == want);
        assert!(
            next_about(rx, "rich", now).await,
            "{watch} watch brought the pod as it now is"
        );
    }
    let release = json!({"metadata": {"finalizers": null}});
    pods.patch("rich", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .unwrap();
    assert!(
        next_about(&mut rx, "rich", |e| matches!(e, watcher::Event::Delete(_))).await,
        "the deletion came through the watch"
    );
    for w in watchers {
        w.abort();
    }
    let said = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
    assert!(said.contains("watching pods in protobuf"), "{said}");
}
