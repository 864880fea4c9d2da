//! The objects a kubelet writes: its Node, and the status of a pod starting and ending.

use serde_json::{Value, json};

use super::NodeSpec;
use crate::time::format_rfc3339;

/// The Node object of a simulated node; `index` numbers nodes for their addresses.
pub fn node_object(spec: &NodeSpec, index: usize, now: i64) -> Value {
    let mut labels = json!({
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
    });
    for (k, v) in &spec.labels {
        labels[k] = json!(v);
    }
    let mut capacity = json!({
        "cpu": spec.cpu,
        "memory": spec.memory,
        "pods": spec.pods.to_string(),
        "ephemeral-storage": "100Gi",
    });
    if spec.gpus > 0 {
        capacity["nvidia.com/gpu"] = json!(spec.gpus.to_string());
    }
    let ts = format_rfc3339(now);
    let condition = |ty: &str, status: &str, reason: &str, message: &str| {
        json!({"type": ty, "status": status, "reason": reason, "message": message,
               "lastHeartbeatTime": ts, "lastTransitionTime": ts})
    };
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": labels},
        "spec": {"podCIDR": format!("10.244.{}.0/24", index % 256)},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                          "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                          "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID",
                          "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": node_ip(index)},
                {"type": "Hostname", "address": spec.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": format!("{index:032x}"),
                "systemUUID": format!("00000000-0000-0000-0000-{index:012x}"),
                "bootID": format!("00000000-0000-0000-0001-{index:012x}"),
                "kernelVersion": "6.1.0-volcano-rs-sim",
                "osImage": "volcano-rs simulated node",
                "containerRuntimeVersion": "sim://1.0.0",
                "kubeletVersion": "v1.33.0-volcano-rs-sim",
                "kubeProxyVersion": "v1.33.0-volcano-rs-sim",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    })
}

/// `10.0.x.y` of the node with this index.
pub fn node_ip(index: usize) -> String {
    format!("10.0.{}.{}", (index / 250) % 256, index % 250 + 1)
}

/// `10.244.<node>.<n>` for the `n`th pod started on a node.
pub fn pod_ip(node_index: usize, n: u32) -> String {
    format!("10.244.{}.{}", node_index % 256, n % 254 + 1)
}

fn condition(ty: &str, status: &str, reason: Option<&str>, ts: &str) -> Value {
    let mut c = json!({"type": ty, "status": status, "lastProbeTime": null,
                       "lastTransitionTime": ts});
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    c
}

/// The PodScheduled condition the pod already has (set by binding), or a new one.
fn scheduled(pod: &Value, ts: &str) -> Value {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled").cloned())
        .unwrap_or_else(|| condition("PodScheduled", "True", None, ts))
}

fn names_and_images(pod: &Value, list: &str) -> Vec<(String, String)> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    (s("name"), s("image"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn container_status(uid: &str, name: &str, image: &str, state: Value, ready: bool) -> Value {
    json!({
        "name": name,
        "image": image,
        "imageID": format!("sim://{image}"),
        "containerID": format!("sim://{uid}/{name}"),
        "ready": ready,
        "started": ready,
        "restartCount": 0,
        "state": state,
    })
}

fn init_statuses(pod: &Value, uid: &str, started: &str) -> Vec<Value> {
    names_and_images(pod, "initContainers")
        .iter()
        .map(|(n, i)| {
            let done = json!({"terminated": {"exitCode": 0, "reason": "Completed",
                "startedAt": started, "finishedAt": started, "containerID": format!("sim://{uid}/{n}")}});
            container_status(uid, n, i, done, false)
        })
        .collect()
}

/// The status of a pod whose containers just started on a node.
pub fn running(pod: &Value, host_ip: &str, pod_ip: &str, now: i64) -> Value {
    let ts = format_rfc3339(now);
    let uid = pod
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let containers: Vec<Value> = names_and_images(pod, "containers")
        .iter()
        .map(|(n, i)| container_status(uid, n, i, json!({"running": {"startedAt": ts}}), true))
        .collect();
    let mut status = pod.get("status").cloned().unwrap_or(json!({}));
    status["phase"] = json!("Running");
    status["hostIP"] = json!(host_ip);
    status["hostIPs"] = json!([{"ip": host_ip}]);
    status["podIP"] = json!(pod_ip);
    status["podIPs"] = json!([{"ip": pod_ip}]);
    status["startTime"] = json!(ts);
    status["conditions"] = json!([
        condition("PodReadyToStartContainers", "True", None, &ts),
        condition("Initialized", "True", None, &ts),
        condition("Ready", "True", None, &ts),
        condition("ContainersReady", "True", None, &ts),
        scheduled(pod, &ts),
    ]);
    status["containerStatuses"] = json!(containers);
    let inits = init_statuses(pod, uid, &ts);
    if !inits.is_empty() {
        status["initContainerStatuses"] = json!(inits);
    }
    status
}

/// The status of a pod whose containers exited: with code 0 it Succeeded, else it Failed.
pub fn terminated(pod: &Value, exit_code: i32, now: i64) -> Value {
    let ts = format_rfc3339(now);
    let uid = pod
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let (phase, reason, pod_reason) = if exit_code == 0 {
        ("Succeeded", "Completed", "PodCompleted")
    } else {
        ("Failed", "Error", "PodFailed")
    };
    let started = pod
        .pointer("/status/startTime")
        .and_then(Value::as_str)
        .unwrap_or(&ts)
        .to_string();
    let containers: Vec<Value> = names_and_images(pod, "containers")
        .iter()
        .map(|(n, i)| {
            let state = json!({"terminated": {"exitCode": exit_code, "reason": reason,
                "startedAt": started, "finishedAt": ts, "containerID": format!("sim://{uid}/{n}")}});
            container_status(uid, n, i, state, false)
        })
        .collect();
    let mut status = pod.get("status").cloned().unwrap_or(json!({}));
    status["phase"] = json!(phase);
    status["conditions"] = json!([
        condition("PodReadyToStartContainers", "False", None, &ts),
        condition("Initialized", "True", Some(pod_reason), &ts),
        condition("Ready", "False", Some(pod_reason), &ts),
        condition("ContainersReady", "False", Some(pod_reason), &ts),
        scheduled(pod, &ts),
    ]);
    status["containerStatuses"] = json!(containers);
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fields::prune_unknown;

    #[test]
    fn nodes_carry_capacity_and_gpus() {
        let spec = NodeSpec::new("n1")
            .cpu("4")
            .memory("8Gi")
            .gpus(2)
            .label("zone", "a");
        let node = node_object(&spec, 0, 0);
        assert_eq!(node["status"]["allocatable"]["nvidia.com/gpu"], "2");
        assert_eq!(node["status"]["capacity"]["cpu"], "4");
        assert_eq!(node["status"]["addresses"][0]["address"], "10.0.0.1");
        assert_eq!(node["metadata"]["labels"]["zone"], "a");
        let plain = node_object(&NodeSpec::new("n2"), 1, 0);
        assert!(plain["status"]["capacity"].get("nvidia.com/gpu").is_none());
    }

    #[test]
    fn running_then_terminated() {
        let pod = json!({"metadata": {"uid": "u"}, "spec": {"containers": [{"name": "c", "image": "i"}]},
                         "status": {"phase": "Pending", "qosClass": "BestEffort"}});
        let run = running(&pod, "10.0.0.1", "10.244.0.2", 100);
        assert_eq!(run["phase"], "Running");
        assert_eq!(run["qosClass"], "BestEffort");
        assert_eq!(run["containerStatuses"][0]["ready"], true);
        let pod = json!({"metadata": {"uid": "u"}, "spec": pod["spec"], "status": run});
        let done = terminated(&pod, 1, 200);
        assert_eq!(done["phase"], "Failed");
        assert_eq!(
            done["containerStatuses"][0]["state"]["terminated"]["reason"],
            "Error"
        );
        assert_eq!(done["podIP"], "10.244.0.2");
    }

    #[test]
    fn the_status_written_is_all_known_to_the_pod_schema() {
        let spec = json!({"containers": [{"name": "c", "image": "i"}],
                          "initContainers": [{"name": "init", "image": "i"}]});
        let pod = json!({"metadata": {"uid": "u", "name": "p"}, "spec": spec,
                         "status": {"phase": "Pending"}});
        let run = running(&pod, "10.0.0.1", "10.244.0.2", 100);
        let mut pod = json!({"metadata": {"uid": "u", "name": "p"}, "spec": spec, "status": run});
        let done = terminated(&pod, 0, 200);
        let pods = crate::kinds::pods();
        assert_eq!(prune_unknown(pods, &mut pod), Vec::<String>::new());
        let mut pod = json!({"metadata": {"uid": "u", "name": "p"}, "spec": spec, "status": done});
        assert_eq!(prune_unknown(pods, &mut pod), Vec::<String>::new());
    }
}
