//! Kubelet tests on paused tokio time: the durations are simulated, the tests take no time.

use std::time::Duration;

use serde_json::{Value, json};

use volcano_api::lifecycle::{DURATION, FAIL_AFTER};

use super::*;
use crate::shared::{SharedOptions, Watch};

fn pod(name: &str, node: &str, command: Value, annotations: Value) -> Value {
    json!({"metadata": {"name": name, "annotations": annotations},
           "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox", "command": command}]}})
}

async fn start() -> (SharedStore, Kubelets, Watch) {
    let store = SharedStore::new(SharedOptions::default());
    let watch = store
        .watch(
            "pods",
            None,
            Selectors::default(),
            Some(store.resource_version()),
        )
        .unwrap();
    let nodes = [NodeSpec::new("n1"), NodeSpec::new("n2").gpus(8)];
    let kubelets = Kubelets::start(store.clone(), &nodes, KubeletOptions::default())
        .await
        .unwrap();
    (store, kubelets, watch)
}

/// The phases a pod goes through, as seen by a watch, until it reaches `last`.
async fn phases_until(watch: &mut Watch, name: &str, last: &str) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(event) = watch.next().await {
        if meta_str(&event.object, "name") != name {
            continue;
        }
        let phase = event.object["status"]["phase"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if seen.last() != Some(&phase) {
            seen.push(phase.clone());
        }
        if phase == last {
            break;
        }
    }
    seen
}

#[tokio::test(start_paused = true)]
async fn sleep_pod_runs_then_succeeds() {
    let (store, _kubelets, mut watch) = start().await;
    assert_eq!(
        store.get("nodes", None, "n2").unwrap()["status"]["capacity"]["nvidia.com/gpu"],
        "8"
    );
    let t0 = tokio::time::Instant::now();
    store
        .create(
            "pods",
            Some("default"),
            pod("p", "n1", json!(["sh", "-c", "sleep 5"]), json!({})),
        )
        .unwrap();
    assert_eq!(
        phases_until(&mut watch, "p", "Succeeded").await,
        ["Pending", "Running", "Succeeded"]
    );
    assert_eq!(t0.elapsed().as_secs(), 6);
    let p = store.get("pods", Some("default"), "p").unwrap();
    assert_eq!(p["status"]["podIP"], "10.244.0.2");
    assert_eq!(p["status"]["hostIP"], "10.0.0.1");
    assert_eq!(
        p["status"]["containerStatuses"][0]["state"]["terminated"]["reason"],
        "Completed"
    );
}

#[tokio::test(start_paused = true)]
async fn annotations_decide_the_end() {
    let (store, _kubelets, mut watch) = start().await;
    let ann = json!({FAIL_AFTER: "30s", DURATION: "1m"});
    store
        .create(
            "pods",
            Some("default"),
            pod("f", "n2", json!(["sleep", "1"]), ann),
        )
        .unwrap();
    let t0 = tokio::time::Instant::now();
    assert_eq!(
        phases_until(&mut watch, "f", "Failed").await,
        ["Pending", "Running", "Failed"]
    );
    assert_eq!(t0.elapsed().as_secs(), 31);
    let f = store.get("pods", Some("default"), "f").unwrap();
    assert_eq!(
        f["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        1
    );
}

#[tokio::test(start_paused = true)]
async fn other_nodes_and_endless_pods() {
    let (store, _kubelets, mut watch) = start().await;
    store
        .create(
            "pods",
            Some("default"),
            pod("foreign", "elsewhere", json!(["sleep", "1"]), json!({})),
        )
        .unwrap();
    store
        .create(
            "pods",
            Some("default"),
            pod("server", "n1", json!(["nginx"]), json!({})),
        )
        .unwrap();
    assert_eq!(
        phases_until(&mut watch, "server", "Running").await,
        ["Pending", "Running"]
    );
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let phase = |n: &str| store.get("pods", Some("default"), n).unwrap()["status"]["phase"].clone();
    assert_eq!(phase("server"), "Running");
    assert_eq!(phase("foreign"), "Pending");
    // Deleting a running pod stops its kubelet task without errors.
    store.delete("pods", Some("default"), "server").unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
}

#[tokio::test(start_paused = true)]
async fn a_pod_bound_later_starts() {
    let (store, _kubelets, mut watch) = start().await;
    store
        .create(
            "pods",
            Some("default"),
            pod("late", "", json!(["sleep", "2"]), json!({})),
        )
        .unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    store.bind("default", "late", "n2").unwrap();
    assert_eq!(
        phases_until(&mut watch, "late", "Succeeded").await,
        ["Pending", "Running", "Succeeded"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_deleted_running_pod_is_stopped_then_removed_by_its_kubelet() {
    let (store, _kubelets, mut watch) = start().await;
    // Would succeed after 5 s if it were not deleted.
    store
        .create(
            "pods",
            Some("default"),
            pod("p", "n1", json!(["sleep", "5"]), json!({})),
        )
        .unwrap();
    phases_until(&mut watch, "p", "Running").await;
    let t0 = tokio::time::Instant::now();
    let marked = store.delete("pods", Some("default"), "p").unwrap();
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
    let mut seen = Vec::new();
    let watching = async {
        while let Some(event) = watch.next().await {
            let terminating = !meta_str(&event.object, "deletionTimestamp").is_empty();
            seen.push((event.change, terminating));
            if event.change == ChangeType::Deleted {
                break;
            }
        }
    };
    // Without a kubelet to confirm, the pod would stay; a minute of simulated time says so.
    let _ = tokio::time::timeout(Duration::from_secs(60), watching).await;
    assert_eq!(
        seen,
        [(ChangeType::Modified, true), (ChangeType::Deleted, true)],
        "the pod is marked, then deleted, and never finishes in between"
    );
    assert_eq!(t0.elapsed(), DEFAULT_TERMINATION);
    assert!(store.get("pods", Some("default"), "p").is_err());
}

#[tokio::test(start_paused = true)]
async fn a_pod_on_a_node_without_kubelet_stays_terminating() {
    let (store, _kubelets, _watch) = start().await;
    store
        .create(
            "pods",
            Some("default"),
            pod("away", "elsewhere", json!(["sleep", "5"]), json!({})),
        )
        .unwrap();
    store.delete("pods", Some("default"), "away").unwrap();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let away = store.get("pods", Some("default"), "away").unwrap();
    assert!(!meta_str(&away, "deletionTimestamp").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_duration_in_days_is_read_as_volcano_sim_reads_it() {
    let (store, _kubelets, mut watch) = start().await;
    let t0 = tokio::time::Instant::now();
    store
        .create(
            "pods",
            Some("default"),
            pod("day", "n1", json!(["sleep", "5"]), json!({DURATION: "1d"})),
        )
        .unwrap();
    assert_eq!(
        phases_until(&mut watch, "day", "Succeeded").await,
        ["Pending", "Running", "Succeeded"]
    );
    assert_eq!(t0.elapsed().as_secs(), 86_400 + 1);
}

#[tokio::test(start_paused = true)]
async fn a_bad_duration_is_read_as_unset_and_the_pod_runs_on() {
    let (store, _kubelets, mut watch) = start().await;
    // Neither is refused on create: the kubelet reads a value it cannot parse as absent, so
    // `sleep 5` ends the first pod and nothing ends the second.
    let bad = json!({DURATION: "10"});
    store
        .create(
            "pods",
            Some("default"),
            pod("sleeps", "n1", json!(["sleep", "5"]), bad.clone()),
        )
        .unwrap();
    store
        .create(
            "pods",
            Some("default"),
            pod("serves", "n2", json!(["nginx"]), bad),
        )
        .unwrap();
    let t0 = tokio::time::Instant::now();
    assert_eq!(
        phases_until(&mut watch, "sleeps", "Succeeded").await,
        ["Pending", "Running", "Succeeded"]
    );
    assert_eq!(t0.elapsed().as_secs(), 6);
    tokio::time::sleep(Duration::from_secs(86_400)).await;
    let serves = store.get("pods", Some("default"), "serves").unwrap();
    assert_eq!(serves["status"]["phase"], "Running");
}

#[tokio::test(start_paused = true)]
async fn a_pod_without_annotations_takes_its_pod_groups() {
    let (store, _kubelets, mut watch) = start().await;
    let group = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "g", "annotations": {FAIL_AFTER: "2m"}},
        "spec": {"minMember": 1}});
    store.create("podgroups", Some("default"), group).unwrap();
    let mut p = pod("member", "n1", json!(["sleep", "3600"]), json!({}));
    p["metadata"]["annotations"] = json!({"scheduling.k8s.io/group-name": "g"});
    store.create("pods", Some("default"), p).unwrap();
    let t0 = tokio::time::Instant::now();
    assert_eq!(
        phases_until(&mut watch, "member", "Failed").await,
        ["Pending", "Running", "Failed"]
    );
    assert_eq!(t0.elapsed().as_secs(), 121);
}
