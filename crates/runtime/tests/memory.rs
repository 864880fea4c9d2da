//! What the scheduler holds per pod: 1,000 nodes and 10,000 pods as a real API server returns
//! them (the service-account volume, default tolerations, a kubelet's status, each bare pod
//! with the PodGroup the controller made for it, or with none: the scheduler's shadow
//! PodGroups) read as the scheduler's watchers read them (pods slimmed to what it reads), into
//! its mirror, then its cache. Heap bytes are counted by a global allocator.
//!
//! Ignored: it measures, it does not check a behaviour. Run with
//! `cargo test -p volcano-runtime --release --test memory -- --ignored --nocapture`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::System;

use kube::runtime::watcher;
use serde_json::{Value, json};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use volcano_api::k8s_openapi::api::core::v1::{Node, Pod};
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_runtime::mirror::{ClusterMirror, Update};
use volcano_runtime::reflect::{self, PodView};
use volcano_scheduler::cache::CacheOptions;
use volcano_scheduler::cycle::SchedulingCycle;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Heap bytes and blocks live now.
fn live() -> (isize, isize) {
    let s = GLOBAL.stats();
    (
        // A reallocation is counted in both (its growth or its shrinking): enough.
        s.bytes_allocated as isize - s.bytes_deallocated as isize,
        s.allocations as isize - s.deallocations as isize,
    )
}

fn same<K>(k: K) -> K {
    k
}

const NODES: usize = 1_000;
const PODS: usize = 10_000;
const NS: &str = "load";

fn uid(kind: u8, i: usize) -> String {
    format!("{kind:02x}3e4567-e89b-42d3-a456-{i:012}")
}

fn managed_fields(manager: &str) -> Value {
    json!([{"manager": manager, "operation": "Update", "apiVersion": "v1",
        "time": "2026-11-27T06:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:volcano-load/run": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"load\"}": {".": {}, "f:image": {},
                "f:resources": {".": {}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}}}}}}}])
}

fn node(i: usize) -> Value {
    let name = format!("load-node-{i}");
    let t = "2026-11-27T06:00:00Z";
    let cond = |ty: &str, st: &str, reason: &str| {
        json!({"type": ty, "status": st, "reason": reason, "message": "kubelet says so",
            "lastHeartbeatTime": t, "lastTransitionTime": t})
    };
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": uid(1, i), "resourceVersion": format!("{}", 1000 + i),
            "creationTimestamp": t, "managedFields": managed_fields("kubelet"),
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64", "volcano-load/node": "true",
                "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"podCIDR": format!("10.244.{}.0/24", i % 256)},
        "status": {"capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "conditions": [cond("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID"),
                cond("Ready", "True", "KubeletReady")],
            "addresses": [{"type": "InternalIP", "address": format!("10.128.{}.{}", i / 256, i % 256)},
                {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b",
                "kernelVersion": "6.1.0", "osImage": "Debian", "containerRuntimeVersion": "containerd://1.7",
                "kubeletVersion": "v1.31.0", "kubeProxyVersion": "v1.31.0",
                "operatingSystem": "linux", "architecture": "amd64"}}})
}

fn pod_group_name(i: usize) -> String {
    format!("podgroup-{}", uid(2, i))
}

fn pod_name(i: usize) -> String {
    format!("load-7f3a2c-pod-{i:05}")
}

/// A bare pod as the API server returns it once bound and running.
fn pod(i: usize) -> Value {
    let t = "2026-11-27T06:00:00Z";
    let node = format!("load-node-{}", i % NODES);
    let token = format!("kube-api-access-{:05x}", i % 0xfffff);
    let cond = |ty: &str| json!({"type": ty, "status": "True", "lastProbeTime": null, "lastTransitionTime": t});
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod_name(i), "namespace": NS, "uid": uid(2, i),
            "resourceVersion": format!("{}", 100_000 + i), "creationTimestamp": t,
            "labels": {"volcano-load/run": "7f3a2c"},
            "annotations": {"scheduling.k8s.io/group-name": pod_group_name(i)},
            "managedFields": managed_fields("volcano-load")},
        "spec": {
            "volumes": [{"name": token, "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
            "containers": [{"name": "load", "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                "volumeMounts": [{"name": token, "readOnly": true,
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "default", "serviceAccount": "default",
            "nodeName": node, "securityContext": {}, "schedulerName": "volcano",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority"},
        "status": {"phase": "Running",
            "conditions": [cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"),
                cond("ContainersReady"), cond("PodScheduled")],
            "hostIP": "10.128.0.17", "hostIPs": [{"ip": "10.128.0.17"}],
            "podIP": format!("10.244.{}.{}", i / 256 % 256, i % 256),
            "podIPs": [{"ip": format!("10.244.{}.{}", i / 256 % 256, i % 256)}],
            "startTime": t, "qosClass": "Burstable",
            "containerStatuses": [{"name": "load", "state": {"running": {"startedAt": t}},
                "lastState": {}, "ready": true, "restartCount": 0, "started": true,
                "image": "registry.k8s.io/pause:3.10",
                "imageID": "registry.k8s.io/pause@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
                "containerID": format!("containerd://{:064x}", i)}]}})
}

/// The PodGroup the controller makes for a bare pod, once it runs.
fn pod_group(i: usize) -> Value {
    let t = "2026-11-27T06:00:00Z";
    json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": pod_group_name(i), "namespace": NS, "uid": uid(3, i),
            "resourceVersion": format!("{}", 200_000 + i), "creationTimestamp": t, "generation": 1,
            "managedFields": managed_fields("volcano-controllers"),
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod_name(i),
                "uid": uid(2, i), "controller": true}]},
        "spec": {"minMember": 1, "queue": "default", "priorityClassName": "",
            "minResources": {"cpu": "100m", "memory": "128Mi"}},
        "status": {"phase": "Running", "running": 1, "conditions": [{"type": "Scheduled",
            "status": "True", "transitionID": "volcano-1-17", "lastTransitionTime": t,
            "reason": "tasks in gang are ready to be scheduled", "message": ""}]}})
}

fn queue(name: &str) -> Value {
    json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": name, "uid": uid(4, name.len()), "resourceVersion": "5"},
        "spec": {"weight": 1, "reclaimable": true}, "status": {"state": "Open"}})
}

/// Reads every object of a kind as its watcher would (a list, then Init/InitApply/InitDone),
/// applying it to the mirror and following the journal in pages, as the runtime's loop does.
fn list<K>(
    mirror: &mut ClusterMirror,
    cycle: &mut SchedulingCycle,
    objs: impl Iterator<Item = Value>,
    wrap: fn(watcher::Event<K>) -> Update,
    keep: impl Fn(K) -> K,
) where
    K: kube::Resource + serde::de::DeserializeOwned,
    K::DynamicType: Default,
{
    let mut follow = |mirror: &mut ClusterMirror| {
        for e in mirror.take_journal() {
            cycle.follow(&e);
        }
    };
    mirror.apply(wrap(watcher::Event::Init));
    for (n, v) in objs.enumerate() {
        // The wire's bytes, so the parse is the watcher's.
        let bytes = serde_json::to_vec(&v).unwrap();
        drop(v);
        let obj: K = keep(reflect::read(&bytes).unwrap());
        mirror.apply(wrap(watcher::Event::InitApply(obj)));
        if n % 500 == 499 {
            follow(mirror);
        }
    }
    mirror.apply(wrap(watcher::Event::InitDone));
    follow(mirror);
}

fn report(what: &str, before: (isize, isize), per: usize) -> (isize, isize) {
    let now = live();
    let (bytes, blocks) = (now.0 - before.0, now.1 - before.1);
    println!(
        "{what:<44} {:>10} B {:>9} blocks   {:>7} B/{per_name} {:>5} blocks/{per_name}",
        bytes,
        blocks,
        bytes / per as isize,
        blocks / per as isize,
        per_name = if per == PODS { "pod" } else { "node" },
    );
    now
}

#[test]
#[ignore = "a measurement: run it with --ignored --nocapture"]
fn heap_held_per_pod_by_the_schedulers_mirror_and_cache() {
    println!("== pods kept whole (as before the scheduler slimmed them)");
    measure(PodView::Full, false);
    println!("== pods kept as the scheduler's watch keeps them");
    measure(PodView::Scheduler, false);
    println!("== bare pods with no PodGroup objects (the scheduler's shadow PodGroups)");
    measure(PodView::Scheduler, true);
}

/// A bare pod, naming the PodGroup the controller made for it unless `shadow` (none made).
fn bare_pod(i: usize, shadow: bool) -> Value {
    let mut v = pod(i);
    if shadow && let Some(m) = v["metadata"].as_object_mut() {
        m.remove("annotations");
    }
    v
}

fn measure(view: PodView, shadow: bool) {
    let mut mirror = ClusterMirror::journaling();
    let mut cycle = SchedulingCycle::new(CacheOptions {
        scheduler_names: vec!["volcano".to_string()],
        default_queue: "default".to_string(),
        shadow_pod_groups: shadow,
    });
    let start = live();
    list::<Queue>(
        &mut mirror,
        &mut cycle,
        ["root", "default"].into_iter().map(queue),
        Update::Queue,
        same,
    );
    let at = live();
    list::<Node>(
        &mut mirror,
        &mut cycle,
        (0..NODES).map(node),
        Update::Node,
        same,
    );
    let at = report("mirror: nodes", at, NODES);
    let at = if shadow {
        at
    } else {
        list::<PodGroup>(
            &mut mirror,
            &mut cycle,
            (0..PODS).map(pod_group),
            Update::PodGroup,
            same,
        );
        report("mirror: PodGroups (one per pod)", at, PODS)
    };
    list::<Pod>(
        &mut mirror,
        &mut cycle,
        (0..PODS).map(|i| bare_pod(i, shadow)),
        Update::Pod,
        |p| view.keep(p),
    );
    let at = report("mirror: pods", at, PODS);
    let mirrored = report("mirror: all", start, PODS);

    let prepared = cycle.prepare(mirror.objects()).unwrap();
    assert_eq!(prepared.snapshot.tasks.len(), PODS);
    assert_eq!(prepared.snapshot.jobs.len(), PODS);
    drop(prepared);
    let at = report("cache: kept snapshot (built once)", at, PODS);

    // A watch event per pod (the kubelet's status, say): the kept snapshot takes each in place.
    let follow = |mirror: &mut ClusterMirror, cycle: &mut SchedulingCycle| {
        for e in mirror.take_journal() {
            cycle.follow(&e);
        }
    };
    for i in 0..PODS {
        let mut v = bare_pod(i, shadow);
        v["metadata"]["resourceVersion"] = json!(format!("{}", 300_000 + i));
        let p = view.keep(reflect::read(&serde_json::to_vec(&v).unwrap()).unwrap());
        mirror.apply(Update::Pod(watcher::Event::Apply(p)));
        if i % 500 == 499 {
            follow(&mut mirror, &mut cycle);
        }
    }
    follow(&mut mirror, &mut cycle);
    let prepared = cycle.prepare(mirror.objects()).unwrap();
    drop(prepared);
    report("after one update per pod, taken in place", at, PODS);
    report("total held", start, PODS);
    let _ = mirrored;

    use std::mem::size_of;
    use volcano_api::k8s_openapi::api::core::v1 as core;
    println!(
        "inline sizes: Pod {} PodSpec {} Container {} Volume {} PodStatus {} ContainerStatus {} ObjectMeta {} PodGroup {} TaskInfo {} WatchEvent {}",
        size_of::<Pod>(),
        size_of::<core::PodSpec>(),
        size_of::<core::Container>(),
        size_of::<core::Volume>(),
        size_of::<core::PodStatus>(),
        size_of::<core::ContainerStatus>(),
        size_of::<volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>(),
        size_of::<PodGroup>(),
        size_of::<volcano_scheduler::model::TaskInfo>(),
        size_of::<volcano_api::WatchEvent>(),
    );
    let one = view.keep(reflect::read(&serde_json::to_vec(&pod(1)).unwrap()).unwrap());
    println!(
        "one pod: {} B of JSON from the API server, {} B as the mirror holds it (serialized)",
        serde_json::to_vec(&pod(1)).unwrap().len(),
        serde_json::to_vec(&one).unwrap().len()
    );
}
