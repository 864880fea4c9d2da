//! A pod as a task: what it asks for, where it stands, and what plugins read of it.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::k8s_openapi;
use volcano_api::keys;
use volcano_api::scheduling::ResourceList;
use volcano_api::{NamespacedName, ObjectKind, ObjectRef};

use super::{
    BuildError, Builder, CacheOptions, DEFAULT_TASK_PRIORITY, Priorities, annotation,
    annotation_or_label, meta_str, parse_bool_true, seconds,
};
use crate::framework::POD_SCHEDULED;
use crate::model::gpu::{self, GpuRequest};
use crate::model::{JobId, Snapshot, TaskId, TaskInfo, TaskStatus};
use crate::plugins::non_zero;
use crate::resource::{PODS_DIM, Resource};

/// A pod's request as the scheduler counts it: Σ containers, at least each init container,
/// plus overhead and one `pods`. A limit without a request counts as the request, as the API
/// server's defaulting makes it.
fn pod_request(b: &Builder, pod: &Pod) -> Result<Resource, BuildError> {
    let mut total = b.dims.zero();
    let Some(spec) = &pod.spec else {
        total.set(PODS_DIM, 1000);
        return Ok(total);
    };
    let container = |c: &k8s_openapi::api::core::v1::Container,
                     field: String|
     -> Result<Resource, BuildError> {
        let res = c.resources.as_ref();
        let mut merged: ResourceList = res.and_then(|r| r.limits.clone()).unwrap_or_default();
        merged.extend(res.and_then(|r| r.requests.clone()).unwrap_or_default());
        b.list(Some(&merged), &field)
    };
    for (i, c) in spec.containers.iter().enumerate() {
        total.add(&container(
            c,
            format!("spec.containers[{i}].resources.requests"),
        )?);
    }
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        let r = container(c, format!("spec.initContainers[{i}].resources.requests"))?;
        total.max_with(&r);
    }
    total.add(&b.list(spec.overhead.as_ref(), "spec.overhead")?);
    total.set(PODS_DIM, 1000);
    Ok(total)
}

fn task_status(pod: &Pod) -> TaskStatus {
    let deleting = pod.metadata.deletion_timestamp.is_some();
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some_and(|n| !n.is_empty());
    match pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
    {
        "Running" if deleting => TaskStatus::Releasing,
        "Running" => TaskStatus::Running,
        "Pending" if deleting => TaskStatus::Releasing,
        "Pending" if bound => TaskStatus::Bound,
        "Pending" => TaskStatus::Pending,
        "Succeeded" => TaskStatus::Succeeded,
        "Failed" => TaskStatus::Failed,
        _ => TaskStatus::Unknown,
    }
}

/// The task index Volcano reads from a pod name `<job>-<task>-<index>`: only names of at least
/// three dash-separated parts carry one.
fn name_index(name: &str) -> Option<i64> {
    let parts: Vec<&str> = name.split('-').collect();
    if parts.len() < 3 {
        return None;
    }
    parts.last()?.parse().ok()
}

/// A pod as a task of `snap`, with the status it is in, or `None` for a pod this scheduler
/// neither schedules nor finds on a node. The task is not in the snapshot yet.
pub(super) fn new_task(
    snap: &Snapshot,
    pod: &Pod,
    opts: &CacheOptions,
    job_index: &HashMap<NamespacedName, JobId>,
    priorities: &Priorities,
) -> Result<Option<(TaskInfo, TaskStatus)>, BuildError> {
    let spec = pod.spec.as_ref();
    let node_name = spec
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty());
    let scheduler = spec
        .and_then(|s| s.scheduler_name.as_deref())
        .unwrap_or("default-scheduler");
    let ours = opts.scheduler_names.iter().any(|n| n == scheduler);
    if !ours && node_name.is_none() {
        return Ok(None);
    }
    let namespace = pod
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_string());
    let name = meta_str(&pod.metadata, |m| m.name.as_ref());
    let key = NamespacedName::new(namespace.as_str(), name.as_str());
    let b = Builder {
        dims: snap.dims.clone(),
        object: ObjectRef::of(ObjectKind::Pod, &pod.metadata),
    };
    let resreq = pod_request(&b, pod)?;
    let gpu = GpuRequest::from_pod(pod).map_err(|e| BuildError {
        object: b.object.clone(),
        field: e.field,
        message: e.message,
    })?;
    let status = task_status(pod);
    let job = if ours {
        group_key(pod, opts).and_then(|g| job_index.get(&g).copied())
    } else {
        None
    };
    let mut priority = spec
        .and_then(|s| s.priority)
        .or_else(|| {
            spec.and_then(|s| s.priority_class_name.as_deref())
                .and_then(|c| priorities.class_values.get(c).copied())
        })
        .unwrap_or(DEFAULT_TASK_PRIORITY);
    if let Some(p) = annotation(&pod.metadata, keys::TASK_PRIORITY).and_then(|v| v.parse().ok()) {
        priority = p;
    }
    let best_effort = resreq.is_empty();
    let task = TaskInfo {
        uid: pod
            .metadata
            .uid
            .clone()
            .unwrap_or_else(|| format!("{namespace}-{name}")),
        key,
        job,
        role: annotation_or_label(&pod.metadata, keys::TASK_SPEC).map(str::to_string),
        status: TaskStatus::Pending,
        non_zero: non_zero(resreq.cpu(), resreq.memory()),
        node: None,
        bound_node_name: node_name.clone(),
        priority,
        preemptable: annotation_or_label(&pod.metadata, keys::PREEMPTABLE)
            .is_none_or(parse_bool_true),
        scheduling_gated: spec
            .and_then(|s| s.scheduling_gates.as_ref())
            .is_some_and(|g| !g.is_empty()),
        best_effort,
        preemption_never: spec.and_then(|s| s.preemption_policy.as_deref()) == Some("Never"),
        creation: seconds(&pod.metadata.creation_timestamp),
        name_index: name_index(&name),
        nominated_node: pod
            .status
            .as_ref()
            .and_then(|s| s.nominated_node_name.clone())
            .filter(|n| !n.is_empty()),
        pod_scheduled: pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == POD_SCHEDULED))
            .map(|c| Arc::new(c.clone())),
        pod: Arc::new(scheduling_view(pod)),
        last_tx_allocated: false,
        gpu_devices: match (
            &gpu,
            &node_name,
            annotation(&pod.metadata, gpu::POD_VGPU_IDS),
        ) {
            (Some(_), Some(n), Some(ids)) => snap
                .node_index
                .get(n)
                .and_then(|&id| snap.nodes[id.idx()].gpus.as_deref())
                .map(|g| g.indices_of(ids))
                .unwrap_or_default(),
            _ => Vec::new(),
        },
        gpu: gpu.map(Arc::new),
        resreq,
        namespace,
        name,
    };
    Ok(Some((task, status)))
}

/// The PodGroup a pod belongs to: its shadow PodGroup, else the one it names, if any.
pub(super) fn group_key(pod: &Pod, opts: &CacheOptions) -> Option<NamespacedName> {
    if let Some(shadow) = super::shadow::shadow_key(pod, opts) {
        return Some(shadow);
    }
    let group = annotation(&pod.metadata, keys::GROUP_NAME)
        .or_else(|| annotation(&pod.metadata, keys::VOLCANO_GROUP_NAME))?;
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    Some(NamespacedName::new(namespace, group))
}

/// Puts a task made by [`new_task`] into `snap` at id `id` (the end of the arena, or the slot
/// of the task it replaces, which must hold no accounting any more): into its job, and onto its
/// node unless it finished.
pub(super) fn insert_task(snap: &mut Snapshot, id: TaskId, task: TaskInfo, status: TaskStatus) {
    let job = task.job;
    let best_effort = task.best_effort;
    let node = task
        .bound_node_name
        .as_ref()
        .and_then(|n| snap.node_index.get(n).copied());
    if id.idx() == snap.tasks.len() {
        snap.tasks.push(Arc::new(task));
        if let Some(j) = job {
            snap.job_mut(j).tasks.push(id);
        }
    } else {
        snap.tasks[id.idx()] = Arc::new(task);
    }
    if let Some(j) = job {
        let info = snap.job_mut(j);
        info.counts[TaskStatus::Pending.idx()] += 1;
        if best_effort {
            info.pending_best_effort += 1;
        }
    }
    match node {
        Some(n) if !matches!(status, TaskStatus::Succeeded | TaskStatus::Failed) => {
            snap.place(id, n, status)
        }
        _ => snap.set_status(id, status),
    }
}

/// A container reduced to its name, restart policy and the ports it takes on the node; `None`
/// when it takes none.
fn host_ports_only(
    c: &k8s_openapi::api::core::v1::Container,
) -> Option<k8s_openapi::api::core::v1::Container> {
    let ports: Vec<_> = c
        .ports
        .iter()
        .flatten()
        .filter(|p| p.host_port.is_some_and(|hp| hp > 0))
        .cloned()
        .collect();
    (!ports.is_empty()).then(|| k8s_openapi::api::core::v1::Container {
        name: c.name.clone(),
        ports: Some(ports),
        // An init container holds its ports for the pod's life only as a sidecar
        // (`restartPolicy: Always`).
        restart_policy: c.restart_policy.clone(),
        ..Default::default()
    })
}

/// The part of a pod plugins read (identity, labels and annotations, placement constraints,
/// host ports, claims and CSI volumes, priority, start time): a session copies every pod, and
/// containers' environment, other volumes and statuses would be most of the copy.
fn scheduling_view(pod: &Pod) -> Pod {
    let m = &pod.metadata;
    let spec = pod
        .spec
        .as_ref()
        .map(|s| k8s_openapi::api::core::v1::PodSpec {
            affinity: s.affinity.clone(),
            node_name: s.node_name.clone(),
            node_selector: s.node_selector.clone(),
            preemption_policy: s.preemption_policy.clone(),
            priority: s.priority,
            priority_class_name: s.priority_class_name.clone(),
            scheduler_name: s.scheduler_name.clone(),
            scheduling_gates: s.scheduling_gates.clone(),
            tolerations: s.tolerations.clone(),
            topology_spread_constraints: s.topology_spread_constraints.clone(),
            containers: s.containers.iter().filter_map(host_ports_only).collect(),
            init_containers: s
                .init_containers
                .as_ref()
                .map(|cs| cs.iter().filter_map(host_ports_only).collect()),
            volumes: s.volumes.as_ref().map(|vs| {
                vs.iter()
                    .filter(|v| {
                        v.persistent_volume_claim.is_some()
                            || v.ephemeral.is_some()
                            || v.csi.is_some()
                    })
                    .cloned()
                    .collect()
            }),
            ..Default::default()
        });
    let status = pod
        .status
        .as_ref()
        .map(|s| k8s_openapi::api::core::v1::PodStatus {
            phase: s.phase.clone(),
            start_time: s.start_time.clone(),
            nominated_node_name: s.nominated_node_name.clone(),
            ..Default::default()
        });
    Pod {
        metadata: ObjectMeta {
            name: m.name.clone(),
            namespace: m.namespace.clone(),
            uid: m.uid.clone(),
            labels: m.labels.clone(),
            annotations: m.annotations.clone(),
            creation_timestamp: m.creation_timestamp.clone(),
            ..Default::default()
        },
        spec,
        status,
    }
}

/// `kubectl apply`'s copy of the whole object it applied: often the largest annotation, and no
/// one here reads it.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A container reduced to what the scheduler reads: its name, what it asks for, the ports it
/// takes on the node and (for an init container) whether it stays as a sidecar.
fn slim_container(
    c: k8s_openapi::api::core::v1::Container,
) -> k8s_openapi::api::core::v1::Container {
    let ports: Option<Vec<_>> = c.ports.map(|ps| {
        ps.into_iter()
            .filter(|p| p.host_port.is_some_and(|hp| hp > 0))
            .collect()
    });
    k8s_openapi::api::core::v1::Container {
        name: c.name,
        resources: c.resources,
        ports: ports.filter(|ps| !ps.is_empty()),
        restart_policy: c.restart_policy,
        ..Default::default()
    }
}

/// The pod with only what the scheduler reads of it, taken by move: what [`new_task`] reads
/// (requests, overhead, gates, priority, annotations, status phase, nomination and
/// `PodScheduled` condition), what plugins read ([`scheduling_view`]), and what a runtime
/// writing the scheduler's decisions reads (resourceVersion, deletion, uid, creation time,
/// owners). For a scheduler's own copy of a watched pod: the rest (environment, mounts, probes,
/// other volumes, container statuses, IPs) is most of a pod and is never read. A scheduler
/// only ever patches pods, so nothing dropped here is written back.
pub fn slim_pod(pod: Pod) -> Pod {
    let Pod {
        metadata: m,
        spec,
        status,
    } = pod;
    let annotations = m.annotations.map(|mut a| {
        a.remove(LAST_APPLIED);
        a
    });
    let spec = spec.map(|s| k8s_openapi::api::core::v1::PodSpec {
        affinity: s.affinity,
        node_name: s.node_name,
        node_selector: s.node_selector,
        overhead: s.overhead,
        preemption_policy: s.preemption_policy,
        priority: s.priority,
        priority_class_name: s.priority_class_name,
        scheduler_name: s.scheduler_name,
        scheduling_gates: s.scheduling_gates,
        tolerations: s.tolerations,
        topology_spread_constraints: s.topology_spread_constraints,
        containers: s.containers.into_iter().map(slim_container).collect(),
        init_containers: s
            .init_containers
            .map(|cs| cs.into_iter().map(slim_container).collect()),
        // As `scheduling_view` keeps them: the volumes the volume predicates and the binder read.
        volumes: s.volumes.map(|vs| {
            vs.into_iter()
                .filter(|v| {
                    v.persistent_volume_claim.is_some() || v.ephemeral.is_some() || v.csi.is_some()
                })
                .collect()
        }),
        ..Default::default()
    });
    let status = status.map(|s| k8s_openapi::api::core::v1::PodStatus {
        phase: s.phase,
        start_time: s.start_time,
        nominated_node_name: s.nominated_node_name,
        // `PodScheduled` is the one condition the scheduler reads and writes (by a patch of
        // that condition alone).
        conditions: s.conditions.map(|cs| {
            cs.into_iter()
                .filter(|c| c.type_ == POD_SCHEDULED)
                .collect()
        }),
        ..Default::default()
    });
    Pod {
        metadata: ObjectMeta {
            name: m.name,
            namespace: m.namespace,
            uid: m.uid,
            resource_version: m.resource_version,
            labels: m.labels,
            annotations,
            creation_timestamp: m.creation_timestamp,
            deletion_timestamp: m.deletion_timestamp,
            owner_references: m.owner_references,
            ..Default::default()
        },
        spec,
        status,
    }
}
