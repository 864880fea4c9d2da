//! A scheduler keeps only part of each pod it watches (`slim_pod`): what it reads. A pod so
//! kept is scheduled exactly as the whole pod would be (host ports, claims, node affinity,
//! tolerations, pod anti-affinity all still count), and every field the cache, the plugins and
//! the runtime's writes read survives it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Each test file uses some of the shared helpers.
#[allow(dead_code)]
mod support;

use serde_json::{Value, json};
use std::sync::Arc;
use support::*;
use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_scheduler::cache::{CacheOptions, build_snapshot, slim_pod};
use volcano_scheduler::model::TaskInfo;

const ZONE: &str = "topology.kubernetes.io/zone";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

fn node(name: &str, zone: &str, taint: bool) -> Value {
    let mut n = json!({"metadata": {"name": name, "uid": format!("uid-{name}"),
            "labels": {ZONE: zone, "kubernetes.io/hostname": name}},
        "spec": {},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
            "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}]}});
    if taint {
        n["spec"]["taints"] =
            json!([{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]);
    }
    n
}

/// A pod as the API server returns it: the service-account volume and its mount, default
/// tolerations, environment, a kubelet's status when it runs; `extra` is merged into its spec.
fn pod(name: &str, extra: Value, running_on: Option<&str>) -> Pod {
    let mut spec = json!({
        "schedulerName": "volcano",
        "volumes": [{"name": "kube-api-access-x", "projected": {"sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}},
            {"name": "scratch", "emptyDir": {}}],
        "containers": [{"name": "main", "image": "busybox",
            "env": [{"name": "A", "value": "b"}],
            "ports": [{"containerPort": 9090}],
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            "volumeMounts": [{"name": "kube-api-access-x", "mountPath": "/var/run/secrets"}],
            "terminationMessagePath": "/dev/termination-log"}],
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": 300}],
        "serviceAccountName": "default", "dnsPolicy": "ClusterFirst",
    });
    for (k, v) in extra.as_object().unwrap() {
        match (k.as_str(), v) {
            ("volumes" | "tolerations", Value::Array(more)) => {
                spec[k].as_array_mut().unwrap().extend(more.iter().cloned());
            }
            ("ports", ports) => spec["containers"][0]["ports"] = ports.clone(),
            _ => spec[k] = v.clone(),
        }
    }
    let mut status = json!({"phase": "Pending", "qosClass": "Burstable"});
    if let Some(n) = running_on {
        spec["nodeName"] = json!(n);
        status = json!({"phase": "Running", "podIP": "10.0.0.9", "hostIP": "10.1.0.1",
            "startTime": "2026-01-01T00:00:00Z",
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0,
                "image": "busybox", "imageID": "sha256:x", "state": {"running": {}}}]});
    }
    from(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
            "resourceVersion": "7", "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": name},
            "annotations": {"scheduling.k8s.io/group-name": format!("pg-{name}"),
                "kubectl.kubernetes.io/last-applied-configuration": "{\"a\": \"whole pod\"}"}},
        "spec": spec, "status": status}))
}

/// A cluster where each pending pod has one right node, and dropping the field that says so
/// would send it elsewhere (ties go to the first node by name, `n1`) or keep it pending.
fn cluster() -> Objects {
    let nodes = vec![
        from(node("n1", "a", false)),
        from(node("n2", "b", false)),
        from(node("n3", "c", true)),
    ];
    let persistent_volumes = vec![from(
        json!({"metadata": {"name": "pv-b", "uid": "uid-pv-b"},
        "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "10Gi"},
            "csi": {"driver": "csi.example.com", "volumeHandle": "h"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": ZONE, "operator": "In", "values": ["b"]}]}]}}}}),
    )];
    let persistent_volume_claims = vec![from(json!({"metadata": {"name": "data",
            "namespace": "ns", "uid": "uid-data",
            "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
            "volumeName": "pv-b", "resources": {"requests": {"storage": "10Gi"}}}}))];
    let host_port = json!([{"containerPort": 8080, "hostPort": 8080}]);
    let pods: Vec<Pod> = vec![
        pod("holder", json!({"ports": host_port}), Some("n1")),
        pod("port", json!({"ports": host_port}), None),
        pod(
            "claim",
            json!({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}),
            None,
        ),
        pod(
            "tolerant",
            json!({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "batch",
                    "effect": "NoSchedule"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": ZONE, "operator": "In", "values": ["c"]}]}]}}}}),
            None,
        ),
        pod(
            "anti",
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                [{"labelSelector": {"matchLabels": {"app": "holder"}}, "topologyKey": ZONE}]}}}),
            None,
        ),
    ];
    let pod_groups = pods
        .iter()
        .map(|p| {
            let name = p.metadata.name.clone().unwrap();
            let phase = if name == "holder" {
                "Running"
            } else {
                "Pending"
            };
            from(
                json!({"metadata": {"name": format!("pg-{name}"), "namespace": "ns",
                    "uid": format!("uid-pg-{name}")},
                "spec": {"minMember": 1, "queue": "default"},
                "status": {"phase": phase}}),
            )
        })
        .collect();
    Objects {
        nodes,
        persistent_volumes,
        persistent_volume_claims,
        pods: pods.into_iter().map(Arc::new).collect(),
        pod_groups,
        ..Default::default()
    }
}

fn slimmed(mut objs: Objects) -> Objects {
    objs.pods = objs
        .pods
        .into_iter()
        .map(|p| Arc::new(slim_pod(Arc::unwrap_or_clone(p))))
        .collect();
    objs
}

#[test]
fn a_slimmed_pod_is_scheduled_as_the_whole_pod_would_be() {
    let full = cluster();
    let slim = slimmed(cluster());
    let conf = conf(volcano_testkit::conf::predicates_only());
    let d_full = run_session_n(&full, &conf, 1);
    let d_slim = run_session_n(&slim, &conf, 1);
    let mut binds = d_slim.binds.clone();
    binds.sort();
    let want: Vec<(String, &str)> = vec![
        ("anti".into(), "n2"),
        ("claim".into(), "n2"),
        ("port".into(), "n2"),
        ("tolerant".into(), "n3"),
    ];
    let got: Vec<(String, &str)> = binds
        .iter()
        .map(|(k, n)| (k.name.clone(), n.as_str()))
        .collect();
    assert_eq!(got, want, "each pod on its one right node");
    assert_eq!(
        format!("{d_full:?}"),
        format!("{d_slim:?}"),
        "same decisions"
    );
}

/// A pod setting every field the scheduler reads.
fn everything() -> Pod {
    let mut p = pod(
        "everything",
        json!({
            "nodeSelector": {ZONE: "b"},
            "priority": 100, "priorityClassName": "high", "preemptionPolicy": "Never",
            "schedulingGates": [{"name": "wait"}],
            "overhead": {"cpu": "100m"},
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "x"}}}],
            "affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "y"}},
                    "topologyKey": ZONE}}]}},
            "initContainers": [{"name": "sidecar", "restartPolicy": "Always",
                "ports": [{"containerPort": 7000, "hostPort": 7000}],
                "resources": {"limits": {"cpu": "200m", "memory": "64Mi",
                    "volcano.sh/vgpu-number": "1"}}}],
            "volumes": [
                {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {
                    "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}},
                {"name": "c", "csi": {"driver": "csi.example.com"}},
                {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
            "ports": [{"containerPort": 80, "hostPort": 80, "hostIP": "10.0.0.1", "protocol": "UDP"}],
        }),
        Some("n2"),
    );
    let m = &mut p.metadata;
    let a = m.annotations.get_or_insert_with(Default::default);
    for (k, v) in [
        ("volcano.sh/task-priority", "7"),
        ("volcano.sh/preemptable", "false"),
        ("volcano.sh/task-spec", "worker"),
        ("volcano.sh/vgpu-ids-new", "GPU-0,NVIDIA,1000,10:;"),
    ] {
        a.insert(k.into(), v.into());
    }
    m.deletion_timestamp = m.creation_timestamp.clone();
    m.owner_references = Some(vec![from(json!({"apiVersion": "v1", "kind": "ReplicaSet",
        "name": "rs", "uid": "uid-rs", "controller": true}))]);
    let s = p.status.as_mut().unwrap();
    s.nominated_node_name = Some("n2".into());
    s.conditions = Some(from(json!([{"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/3 nodes are available", "lastTransitionTime": "2026-01-01T00:00:00Z"}])));
    p
}

#[test]
fn slimming_keeps_every_field_the_scheduler_reads() {
    let mut full = cluster();
    full.pods.push(everything().into());
    let slim = slimmed(full.clone());
    // The one thing dropped that plugins would see: `kubectl apply`'s copy of the object,
    // which no plugin reads.
    for p in full.pods.iter_mut().map(Arc::make_mut) {
        if let Some(a) = p.metadata.annotations.as_mut() {
            a.remove(LAST_APPLIED);
        }
    }
    // The cache reads the pod into a task and shares the pod itself with the plugins: the
    // tasks are the same but for the pod they share, and plugins reading the slimmed pods
    // decide as they do on the whole ones.
    let opts = CacheOptions::default();
    let (a, b) = (
        build_snapshot(&full, &opts).unwrap(),
        build_snapshot(&slim, &opts).unwrap(),
    );
    assert_eq!(a.tasks.len(), 6);
    let without_pod = |t: &TaskInfo| {
        let mut t = t.clone();
        t.pod = Arc::default();
        format!("{t:?}")
    };
    for (a, b) in a.tasks.iter().zip(&b.tasks) {
        assert_eq!(without_pod(a), without_pod(b), "task {}", a.name);
    }
    let conf = conf(volcano_testkit::conf::predicates_only());
    assert_eq!(
        format!("{:?}", run_session_n(&full, &conf, 1)),
        format!("{:?}", run_session_n(&slim, &conf, 1)),
        "same decisions beside the pod reading everything"
    );

    // What a runtime writing decisions reads of the pod it holds.
    let (whole, kept) = (everything(), slim_pod(everything()));
    assert_eq!(
        whole.metadata.resource_version,
        kept.metadata.resource_version
    );
    assert_eq!(whole.metadata.uid, kept.metadata.uid);
    assert_eq!(
        whole.metadata.deletion_timestamp,
        kept.metadata.deletion_timestamp
    );
    assert_eq!(
        whole.metadata.owner_references,
        kept.metadata.owner_references
    );
    assert_eq!(
        whole.metadata.creation_timestamp,
        kept.metadata.creation_timestamp
    );
    let (ws, ks) = (whole.status.unwrap(), kept.status.unwrap());
    assert_eq!(ws.nominated_node_name, ks.nominated_node_name);
    assert_eq!(ws.phase, ks.phase);
    let scheduled = |cs: &Option<Vec<volcano_api::k8s_openapi::api::core::v1::PodCondition>>| {
        cs.iter()
            .flatten()
            .find(|c| c.type_ == "PodScheduled")
            .cloned()
    };
    assert!(scheduled(&ws.conditions).is_some());
    assert_eq!(scheduled(&ws.conditions), scheduled(&ks.conditions));
    let (wspec, kspec) = (whole.spec.unwrap(), kept.spec.unwrap());
    assert_eq!(wspec.node_name, kspec.node_name);
    assert_eq!(wspec.scheduler_name, kspec.scheduler_name);

    // And what it leaves: most of the pod.
    assert!(kspec.containers[0].env.is_none() && kspec.containers[0].volume_mounts.is_none());
    assert_eq!(
        kspec.volumes.as_ref().map(Vec::len),
        Some(3),
        "claims, ephemeral, CSI"
    );
    assert!(ks.container_statuses.is_none() && ks.pod_ip.is_none());
    assert!(
        !kept
            .metadata
            .annotations
            .unwrap()
            .contains_key(LAST_APPLIED)
    );
}
