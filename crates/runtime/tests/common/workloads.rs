//! Jobs as Volcano users write them, for the end-to-end tests: an MPI job and a TensorFlow
//! job with Volcano's plugins and policies, their pods sleeping a given time.

use serde_json::{Value, json};

/// A busybox container that sleeps `secs` seconds with these resources.
pub fn container(name: &str, secs: u32, resources: Value) -> Value {
    json!({
        "name": name,
        "image": "busybox:1.36",
        "command": ["sh", "-c", format!("sleep {secs}")],
        "resources": resources,
    })
}

/// An MPI Job as Volcano's examples write it: `ssh`, `svc` and `env` plugins, a master that
/// completes the job when it completes, and two workers.
pub fn mpi_job(name: &str, master_secs: u32) -> Value {
    let small = json!({"requests": {"cpu": "500m", "memory": "64Mi"}});
    json!({
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minAvailable": 3,
            "schedulerName": "volcano",
            "queue": "default",
            "plugins": {"ssh": [], "svc": [], "env": []},
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
            "tasks": [
                {
                    "name": "mpimaster",
                    "replicas": 1,
                    "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}],
                    "template": {"spec": {
                        "restartPolicy": "OnFailure",
                        "containers": [container("mpimaster", master_secs, small.clone())],
                    }},
                },
                {
                    "name": "mpiworker",
                    "replicas": 2,
                    "template": {"spec": {
                        "restartPolicy": "OnFailure",
                        "containers": [container("mpiworker", 60, small)],
                    }},
                },
            ],
        },
    })
}

/// A TensorFlow Job as Volcano's examples write it: a parameter server and two workers found
/// through the `svc` plugin; the job completes when the workers do, and restarts whole when
/// a pod fails.
pub fn tensorflow_job(name: &str) -> Value {
    let small = json!({"requests": {"cpu": "500m", "memory": "64Mi"}});
    json!({
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minAvailable": 3,
            "schedulerName": "volcano",
            "plugins": {"env": [], "svc": []},
            "policies": [
                {"event": "PodEvicted", "action": "RestartJob"},
                {"event": "PodFailed", "action": "RestartJob"},
            ],
            "tasks": [
                {
                    "name": "ps",
                    "replicas": 1,
                    "template": {"spec": {
                        "restartPolicy": "Never",
                        "containers": [container("tensorflow", 3600, small.clone())],
                    }},
                },
                {
                    "name": "worker",
                    "replicas": 2,
                    "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}],
                    "template": {"spec": {
                        "restartPolicy": "Never",
                        "containers": [container("tensorflow", 6, small)],
                    }},
                },
            ],
        },
    })
}

/// A Job of Volcano's distributed-framework plugin `plugin` (with its `arguments`), as
/// Volcano's `example/` writes one: `tasks` are `(name, replicas)`, each pod a small busybox
/// that sleeps an hour (the plugins only add env, ports, commands and services).
pub fn framework_job(name: &str, plugin: &str, arguments: &[&str], tasks: &[(&str, i32)]) -> Value {
    let small = json!({"requests": {"cpu": "100m", "memory": "32Mi"}});
    let tasks: Vec<Value> = tasks
        .iter()
        .map(|(task, replicas)| {
            json!({
                "name": task,
                "replicas": replicas,
                "template": {"spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [container(task, 3600, small.clone())],
                }},
            })
        })
        .collect();
    let min_available: i32 = tasks
        .iter()
        .filter_map(|t| t["replicas"].as_i64())
        .sum::<i64>() as i32;
    json!({
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minAvailable": min_available,
            "schedulerName": "volcano",
            "queue": "default",
            "plugins": {plugin: arguments},
            "tasks": tasks,
        },
    })
}
