//! Jobs of Volcano's distributed-framework plugins (`mpi`, `pytorch`, `tensorflow`, `ray`), in
//! both tiers: admitted, bound and running under deploy/'s permissions, their pods carrying the
//! environment, ports and commands Volcano's plugins set, and the Services and Secrets the
//! implied `svc` and `ssh` plugins own created on the server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Cluster;
use common::jobs::{assert_no_write_refused, create, wait_phase};
use common::workloads::framework_job;
use kube::api::Api;
use volcano_api::k8s_openapi::api::core::v1::{Container, Pod, Secret, Service};

async fn container_of(client: &kube::Client, pod: &str) -> Container {
    let p = Api::<Pod>::namespaced(client.clone(), "default")
        .get(pod)
        .await
        .unwrap();
    p.spec.unwrap().containers.remove(0)
}

fn env(c: &Container, name: &str) -> Option<String> {
    c.env
        .iter()
        .flatten()
        .find(|e| e.name == name)
        .and_then(|e| e.value.clone())
}

fn ports(c: &Container) -> Vec<(String, i32)> {
    c.ports
        .iter()
        .flatten()
        .map(|p| (p.name.clone().unwrap_or_default(), p.container_port))
        .collect()
}

async fn exists<K>(client: &kube::Client, name: &str) -> bool
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    Api::<K>::namespaced(client.clone(), "default")
        .get_opt(name)
        .await
        .unwrap()
        .is_some()
}

async fn framework_jobs_run_with_what_their_plugins_set(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    create(
        &client,
        framework_job("mpi", "mpi", &[], &[("master", 1), ("worker", 2)]),
    )
    .await;
    create(
        &client,
        framework_job(
            "torch",
            "pytorch",
            &["--master=master", "--worker=worker", "--port=23456"],
            &[("master", 1), ("worker", 2)],
        ),
    )
    .await;
    create(
        &client,
        framework_job(
            "tf",
            "tensorflow",
            &["--ps=ps", "--worker=worker", "--port=2222"],
            &[("ps", 1), ("worker", 2)],
        ),
    )
    .await;
    create(
        &client,
        framework_job("ray", "ray", &[], &[("head", 1), ("worker", 1)]),
    )
    .await;
    for job in ["mpi", "torch", "tf", "ray"] {
        wait_phase(&client, job, "Running", 60).await;
    }

    // mpi: the master lists the workers; every pod has the ssh port; ssh and svc are implied.
    let master = container_of(&client, "mpi-master-0").await;
    assert_eq!(
        env(&master, "MPI_HOST").as_deref(),
        Some("mpi-worker-0.mpi,mpi-worker-1.mpi")
    );
    assert_eq!(ports(&master), [("mpijob-port".to_string(), 22)]);
    assert!(
        exists::<Service>(&client, "mpi").await,
        "the svc plugin's Service"
    );
    assert!(
        exists::<Secret>(&client, "mpi-ssh").await,
        "the ssh plugin's Secret"
    );

    // pytorch: one rendezvous, a rank per pod.
    for (pod, rank) in [
        ("torch-master-0", "0"),
        ("torch-worker-0", "1"),
        ("torch-worker-1", "2"),
    ] {
        let c = container_of(&client, pod).await;
        let vars: Vec<Option<String>> = ["MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"]
            .iter()
            .map(|n| env(&c, n))
            .collect();
        let want = ["torch-master-0.torch", "23456", "3", rank].map(|v| Some(v.to_string()));
        assert_eq!(vars, want, "{pod}");
        assert_eq!(ports(&c), [("pytorchjob-port".to_string(), 23456)], "{pod}");
    }

    // tensorflow: TF_CONFIG names the cluster and the pod's own task.
    let worker = container_of(&client, "tf-worker-1").await;
    let config: serde_json::Value =
        serde_json::from_str(&env(&worker, "TF_CONFIG").unwrap()).unwrap();
    assert_eq!(
        config["task"],
        serde_json::json!({"type": "worker", "index": 1})
    );
    assert_eq!(
        config["cluster"]["ps"],
        serde_json::json!(["tf-ps-0.tf:2222"])
    );

    // ray: the head starts the cluster, workers join it, and the head is served.
    let head = container_of(&client, "ray-head-0").await;
    let command = head.command.clone().unwrap_or_default().join(" ");
    assert!(command.contains("ray start --head"), "{command}");
    let joined = container_of(&client, "ray-worker-0").await;
    let command = joined.command.clone().unwrap_or_default().join(" ");
    assert!(
        command.contains("--address=ray-head-0.ray:6379"),
        "{command}"
    );
    assert!(exists::<Service>(&client, "ray-head-svc").await);

    for job in ["mpi", "torch", "tf", "ray"] {
        assert_no_write_refused(&client, job).await;
    }
    sched.stop().await;
    ctl.stop().await;
}

both_tiers!(
    framework_jobs_run_with_what_their_plugins_set,
    2,
    super::framework_jobs_run_with_what_their_plugins_set
);
