//! The objects a load run writes: its nodes (with the status a kubelet would report), bare
//! pods, gangs (a PodGroup and its pods) and Volcano Jobs. Pure: JSON in the shape the API
//! server takes, every object labelled with its run so the run can find and remove it.

use serde_json::{Value, json};
use volcano_api::{keys, quantity};

/// Label on every object of a run, valued with the run's id: the watch and the clean-up
/// select on it.
pub const RUN_LABEL: &str = "volcano-load/run";
/// Label on the nodes `volcano load` made, so `--delete-nodes` removes only those.
pub const NODE_LABEL: &str = "volcano-load/node";
/// The name of the `index`-th node.
pub fn node_name(index: usize) -> String {
    format!("load-node-{index}")
}

/// The taint the API server's admission puts on every new Node until the node lifecycle
/// controller sees it Ready; load nodes have no kubelet for that controller to hear from.
pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

/// What each load node offers, and what each load pod asks.
#[derive(Debug, Clone)]
pub struct Shapes {
    /// CPU of a node (a quantity).
    pub node_cpu: String,
    /// Memory of a node.
    pub node_memory: String,
    /// Pods a node takes.
    pub node_pods: u32,
    /// CPU a pod requests.
    pub pod_cpu: String,
    /// Memory a pod requests.
    pub pod_memory: String,
    /// `spec.schedulerName` of the pods and Jobs.
    pub scheduler_name: String,
}

/// A Node as a kubelet registers it, without status (a create drops it on a real server).
pub fn node(index: usize) -> Value {
    let name = node_name(index);
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                NODE_LABEL: "true",
            },
        },
        "spec": {},
    })
}

/// The status a Ready kubelet posts for a load node, for the `status` subresource.
pub fn node_status(index: usize, shapes: &Shapes, now_rfc3339: &str) -> Value {
    let capacity = json!({
        "cpu": shapes.node_cpu,
        "memory": shapes.node_memory,
        "pods": shapes.node_pods.to_string(),
    });
    let condition = |ty: &str, status: &str, reason: &str| {
        json!({"type": ty, "status": status, "reason": reason,
               "lastHeartbeatTime": now_rfc3339, "lastTransitionTime": now_rfc3339})
    };
    // 10.128.0.0/9 leaves room for a million nodes without clashing with the usual pod and
    // service ranges of a test cluster.
    let ip = format!(
        "10.{}.{}.{}",
        128 + (index >> 16) % 128,
        (index >> 8) % 256,
        index % 256
    );
    json!({
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID"),
                condition("Ready", "True", "KubeletReady"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": node_name(index)},
            ],
        }
    })
}

/// Whether a node as read from the server already serves a run: Ready, with the capacity
/// asked for, and without the not-ready taint.
pub fn node_is_current(node: &Value, shapes: &Shapes) -> bool {
    let status = &node["status"];
    let ready = status["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    });
    let capacity = &status["allocatable"];
    // The server keeps quantities in canonical form (`0.5` becomes `500m`): compare values.
    let same = |key: &str, asked: &str, parse: fn(&str) -> Result<i64, quantity::QuantityError>| {
        let held = capacity[key].as_str().map(parse);
        matches!((held, parse(asked)), (Some(Ok(a)), Ok(b)) if a == b)
    };
    let sized = same("cpu", &shapes.node_cpu, quantity::parse_milli)
        && same("memory", &shapes.node_memory, quantity::parse_value)
        && capacity["pods"] == shapes.node_pods.to_string().as_str();
    ready && sized && !has_not_ready_taint(node)
}

/// Whether the node carries the not-ready taint.
pub fn has_not_ready_taint(node: &Value) -> bool {
    node["spec"]["taints"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["key"] == NOT_READY_TAINT))
}

/// The node's taints without the not-ready one.
pub fn taints_without_not_ready(node: &Value) -> Vec<Value> {
    node["spec"]["taints"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter(|t| t["key"] != NOT_READY_TAINT)
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The pod spec every load pod has: one container asking for the pod shape. No token is
/// mounted and no grace is asked for: nothing runs, and clean-up should be one request.
fn pod_spec(shapes: &Shapes) -> Value {
    json!({
        "schedulerName": shapes.scheduler_name,
        "automountServiceAccountToken": false,
        "terminationGracePeriodSeconds": 0,
        "containers": [{
            "name": "load",
            "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": shapes.pod_cpu, "memory": shapes.pod_memory}},
        }],
    })
}

/// A bare pod, or a gang's member when `group` names its PodGroup.
pub fn pod(name: &str, run: &str, group: Option<&str>, shapes: &Shapes) -> Value {
    let mut metadata = json!({"name": name, "labels": {RUN_LABEL: run}});
    if let Some(group) = group {
        metadata["annotations"] = json!({ keys::GROUP_NAME: group });
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": pod_spec(shapes),
    })
}

/// A gang's PodGroup: all `size` pods or none, in the default queue.
pub fn pod_group(name: &str, run: &str, size: u32) -> Value {
    json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "labels": {RUN_LABEL: run}},
        "spec": {"minMember": size, "queue": keys::DEFAULT_QUEUE},
    })
}

/// The name of the one task of a load Job (its pods are `<job>-worker-<i>`).
pub const JOB_TASK: &str = "worker";

/// A Volcano Job of one task of `size` replicas, all needed (`minAvailable`).
pub fn job(name: &str, run: &str, size: u32, shapes: &Shapes) -> Value {
    json!({
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {RUN_LABEL: run}},
        "spec": {
            "schedulerName": shapes.scheduler_name,
            "minAvailable": size,
            "queue": keys::DEFAULT_QUEUE,
            "tasks": [{
                "name": JOB_TASK,
                "replicas": size,
                "template": {
                    "metadata": {"labels": {RUN_LABEL: run}},
                    "spec": pod_spec(shapes),
                },
            }],
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use k8s_openapi::api::core::v1::{Node, Pod};
    use volcano_api::batch::Job;
    use volcano_api::scheduling::PodGroup;

    use super::*;

    fn shapes() -> Shapes {
        Shapes {
            node_cpu: "32".into(),
            node_memory: "256Gi".into(),
            node_pods: 110,
            pod_cpu: "100m".into(),
            pod_memory: "128Mi".into(),
            scheduler_name: "volcano".into(),
        }
    }

    #[test]
    fn objects_decode_as_their_kinds() {
        let _: Node = serde_json::from_value(node(3)).unwrap();
        let _: Pod = serde_json::from_value(pod("p", "r1", Some("g"), &shapes())).unwrap();
        let pg: PodGroup = serde_json::from_value(pod_group("g", "r1", 5)).unwrap();
        assert_eq!(pg.spec.min_member, 5);
        let job: Job = serde_json::from_value(job("j", "r1", 5, &shapes())).unwrap();
        assert_eq!(job.spec.tasks[0].replicas, 5);
    }

    #[test]
    fn a_gang_member_names_its_group_and_every_object_its_run() {
        let p = pod("g-0", "r1", Some("g"), &shapes());
        assert_eq!(p["metadata"]["annotations"][keys::GROUP_NAME], "g");
        assert_eq!(p["metadata"]["labels"][RUN_LABEL], "r1");
        assert_eq!(p["spec"]["schedulerName"], "volcano");
        let bare = pod("p", "r1", None, &shapes());
        assert!(bare["metadata"]["annotations"].is_null());
        let j = job("j", "r1", 3, &shapes());
        assert_eq!(
            j["spec"]["tasks"][0]["template"]["metadata"]["labels"][RUN_LABEL],
            "r1"
        );
    }

    #[test]
    fn a_node_serves_once_ready_sized_and_untainted() {
        let s = shapes();
        let mut n = node(1);
        n["status"] = node_status(1, &s, "2024-01-01T00:00:00Z")["status"].clone();
        assert!(node_is_current(&n, &s));
        n["spec"]["taints"] = json!([{"key": NOT_READY_TAINT, "effect": "NoSchedule"},
                                     {"key": "x", "effect": "NoSchedule"}]);
        assert!(!node_is_current(&n, &s));
        assert_eq!(
            taints_without_not_ready(&n),
            vec![json!({"key": "x", "effect": "NoSchedule"})]
        );
        n["spec"]["taints"] = json!([]);
        let mut bigger = s.clone();
        bigger.node_cpu = "64".into();
        assert!(!node_is_current(&n, &bigger));
        let mut same = s.clone();
        same.node_cpu = "32000m".into();
        same.node_memory = "262144Mi".into();
        assert!(node_is_current(&n, &same));
    }
}
