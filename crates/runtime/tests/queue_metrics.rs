//! A queue's series appear while it exists and are gone after the session that follows its
//! deletion, in the scheduler's and the controllers' metrics alike.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Cluster, eventually};
use kube::api::{Api, DeleteParams, PostParams};
use volcano_api::scheduling::Queue;
use volcano_runtime::metrics::label;

both_tiers!(
    a_deleted_queue_stops_exporting,
    1,
    super::a_deleted_queue_stops_exporting
);

async fn a_deleted_queue_stops_exporting(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    let queues: Api<Queue> = Api::all(client.clone());
    let q: Queue = serde_json::from_value(serde_json::json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "short-lived"},
        "spec": {"weight": 3, "capability": {"cpu": "2"}},
    }))
    .unwrap();
    queues.create(&PostParams::default(), &q).await.unwrap();

    let l = label("queue_name", "short-lived");
    let weight = || sched.metrics.queues.weight.family.get(&l).map(|g| g.get());
    let pending = || ctl.metrics.queue_pod_groups[1].family.get(&l).is_some();
    let (seen, w) = eventually(20, async || {
        let w = weight();
        (w == Some(3.0) && pending(), w)
    })
    .await;
    assert!(seen, "weight {w:?}, pending count shown: {}", pending());
    let plugin_open = [
        ("plugin", "gang".to_string()),
        ("OnSession", "OnSessionOpen".to_string()),
    ];
    assert!(
        sched.metrics.plugin_latency_ms.get(&plugin_open).is_some(),
        "plugin latency recorded"
    );
    let cap = sched
        .metrics
        .queues
        .capacity
        .milli_cpu
        .family
        .get(&l)
        .map(|g| g.get());
    assert_eq!(cap, Some(2000.0));

    // Volcano's admission refuses to delete an open queue; close it first where it runs.
    let closed = serde_json::json!({"status": {"state": "Closed"}});
    let _ = queues
        .patch_status(
            "short-lived",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&closed),
        )
        .await;
    queues
        .delete("short-lived", &DeleteParams::default())
        .await
        .unwrap();
    let (gone, w) = eventually(20, async || {
        let w = weight();
        (w.is_none() && !pending(), w)
    })
    .await;
    assert!(
        gone,
        "still exported: weight {w:?}, pending count {}",
        pending()
    );
    assert!(
        sched
            .metrics
            .queues
            .allocated
            .milli_cpu
            .family
            .get(&l)
            .is_none()
    );
    sched.stop().await;
    ctl.stop().await;
}
