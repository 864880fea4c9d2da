//! A ReplicaSet's pods form one gang on a running local control plane: the controllers watch
//! the ReplicaSet, read its group-min-member and give its pods one PodGroup; the scheduler
//! binds the gang whole or not at all. (Local tier only: a real cluster's ReplicaSet
//! controller would make and adopt pods of its own.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Cluster, eventually};
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use volcano_api::k8s_openapi::api::apps::v1::ReplicaSet;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::keys;
use volcano_api::scheduling::PodGroup;

fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

/// A ReplicaSet `name` asking for a gang of `min_member`.
fn replica_set(name: &str, replicas: i32, min_member: &str) -> ReplicaSet {
    typed(json!({
        "metadata": {"name": name, "namespace": "default",
            "annotations": {keys::GROUP_MIN_MEMBER: min_member}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": []}}},
    }))
}

/// A pod of the ReplicaSet, as its controller would make it.
fn pod_of(rs: &ReplicaSet, i: usize, cpu: &str) -> Pod {
    let name = rs.metadata.name.clone().unwrap();
    typed(json!({
        "metadata": {"name": format!("{name}-{i}"), "namespace": "default",
            "labels": {"app": name},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name,
                "uid": rs.metadata.uid.clone().unwrap(), "controller": true}]},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "main",
            "image": "busybox:1.36", "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}]},
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_sets_gang_is_bound_whole_or_not_at_all() {
    // One node of 4 CPUs: room for two of the gang's 2-CPU pods, not three.
    let cluster = Cluster::start(1).await;
    let client = cluster.client();
    let pp = PostParams::default();
    let sets = Api::<ReplicaSet>::namespaced(client.clone(), "default");
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    let gang = sets
        .create(&pp, &replica_set("gang", 3, "3"))
        .await
        .unwrap();
    let lone = sets
        .create(&pp, &replica_set("lone", 1, "1"))
        .await
        .unwrap();
    for i in 0..3 {
        pods.create(&pp, &pod_of(&gang, i, "2")).await.unwrap();
    }
    pods.create(&pp, &pod_of(&lone, 0, "1")).await.unwrap();
    let controllers = cluster.controllers("c1");
    let scheduler = cluster.scheduler("s1", false);

    let group = format!("podgroup-{}", gang.metadata.uid.clone().unwrap());
    let pgs = Api::<PodGroup>::namespaced(client.clone(), "default");
    let (ok, seen) = eventually(20, async || {
        let pg = pgs.get_opt(&group).await.unwrap();
        let list = pods.list(&Default::default()).await.unwrap();
        let grouped = list
            .items
            .iter()
            .filter(|p| {
                p.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(keys::GROUP_NAME))
                    == Some(&group)
            })
            .count();
        let lone_bound = list.items.iter().any(|p| {
            p.metadata.name.as_deref() == Some("lone-0")
                && p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
        });
        let min = pg.map(|pg| pg.spec.min_member);
        (
            min == Some(3) && grouped == 3 && lone_bound,
            (min, grouped, lone_bound),
        )
    })
    .await;
    assert!(
        ok,
        "want one PodGroup of minMember 3 holding the 3 pods, and the lone pod bound: (minMember, pods in it, lone bound) = {seen:?}"
    );
    // The scheduler has had sessions since it bound the lone pod; give it a few more.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let bound: Vec<String> = pods
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
        .filter_map(|p| p.metadata.name)
        .collect();
    assert_eq!(bound, ["lone-0"], "no pod of the gang of 3 is bound");
    controllers.stop().await;
    scheduler.stop().await;
}
