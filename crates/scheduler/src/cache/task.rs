//! A pod as a task: what it asks for, where it stands, and what plugins read of it.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
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
    pod: &Arc<Pod>,
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
        // The very pod the store holds: no copy (a watcher keeps pods slimmed, `slim_pod`).
        pod: Arc::clone(pod),
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
