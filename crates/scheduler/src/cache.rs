//! Builds a session [`Snapshot`] from Kubernetes objects, as Volcano's scheduler cache does:
//! which pods are tracked, their task status, request and priority, node accounting and queue
//! defaults (`default` and `root` always exist).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use thiserror::Error;
use volcano_api::Objects;
use volcano_api::k8s_openapi;
use volcano_api::keys;
use volcano_api::resources::canonical_amount;
use volcano_api::scheduling::{PodGroup, Queue, QueueSpec, ResourceList};

use crate::model::gpu::{self, GpuRequest, NodeGpus};
use crate::model::{
    JobId, JobInfo, NodeId, NodeInfo, PgPhase, QueueId, QueueInfo, QueueState, Snapshot, TaskId,
    TaskInfo, TaskStatus,
};
use crate::plugins::non_zero;
use crate::resource::{CPU_DIM, Dims, MEMORY_DIM, PODS_DIM, Resource, UNBOUNDED};

/// A node without a `pods` quantity may hold this many pods (the kubelet default).
pub const DEFAULT_MAX_PODS: i64 = 110;
/// Priority of a pod that names no priority (Volcano's default).
pub const DEFAULT_TASK_PRIORITY: i32 = 1;

/// An object the cache cannot turn into scheduling state.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{object}: field {field}: {message}")]
pub struct BuildError {
    /// `Kind ns/name`.
    pub object: String,
    /// Dotted field path.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// How the cache reads the objects.
#[derive(Debug, Clone)]
pub struct CacheOptions {
    /// Scheduler names this scheduler is responsible for.
    pub scheduler_names: Vec<String>,
    /// Queue of PodGroups that name none.
    pub default_queue: String,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            scheduler_names: vec![keys::DEFAULT_SCHEDULER_NAME.to_string()],
            default_queue: keys::DEFAULT_QUEUE.to_string(),
        }
    }
}

fn meta_str(m: &ObjectMeta, f: impl Fn(&ObjectMeta) -> Option<&String>) -> String {
    f(m).cloned().unwrap_or_default()
}

fn seconds(t: &Option<Time>) -> i64 {
    t.as_ref().map(|t| t.0.as_second()).unwrap_or(0)
}

fn annotation_or_label<'a>(m: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    m.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .or_else(|| m.labels.as_ref().and_then(|l| l.get(key)))
        .map(String::as_str)
}

struct Builder {
    dims: Dims,
    object: String,
}

impl Builder {
    fn list(&self, list: Option<&ResourceList>, field: &str) -> Result<Resource, BuildError> {
        let mut r = self.dims.zero();
        for (name, q) in list.into_iter().flatten() {
            if name.starts_with("count/") {
                continue;
            }
            let v = canonical_amount(name, &q.0).map_err(|e| BuildError {
                object: self.object.clone(),
                field: format!("{field}.{name}"),
                message: e.to_string(),
            })?;
            if let Some(d) = self.dims.index(name) {
                r.set(d, v);
            }
        }
        Ok(r)
    }
}

fn resource_names(objs: &Objects) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut add = |l: Option<&ResourceList>| {
        names.extend(
            l.into_iter()
                .flatten()
                .map(|(k, _)| k)
                .filter(|k| !gpu::is_device_resource(k))
                .cloned(),
        )
    };
    for n in &objs.nodes {
        let st = n.status.as_ref();
        add(st.and_then(|s| s.allocatable.as_ref()));
        add(st.and_then(|s| s.capacity.as_ref()));
    }
    for p in &objs.pods {
        if let Some(spec) = &p.spec {
            for c in spec
                .containers
                .iter()
                .chain(spec.init_containers.iter().flatten())
            {
                add(c.resources.as_ref().and_then(|r| r.requests.as_ref()));
                add(c.resources.as_ref().and_then(|r| r.limits.as_ref()));
            }
            add(spec.overhead.as_ref());
        }
    }
    for pg in &objs.pod_groups {
        add(pg.spec.min_resources.as_ref());
    }
    for q in &objs.queues {
        add(q.spec.capability.as_ref());
        add(q.spec.deserved.as_ref());
        add(q.spec.guarantee.as_ref().and_then(|g| g.resource.as_ref()));
    }
    names
}

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

fn queue_info(b: &Builder, q: &Queue) -> Result<QueueInfo, BuildError> {
    let name = meta_str(&q.metadata, |m| m.name.as_ref());
    let spec: &QueueSpec = &q.spec;
    let mut capability = b.dims.unbounded();
    let has_capability = spec.capability.as_ref().is_some_and(|c| !c.is_empty());
    if has_capability {
        let cap = b.list(spec.capability.as_ref(), "spec.capability")?;
        for d in 0..b.dims.len() {
            let declared = spec
                .capability
                .as_ref()
                .is_some_and(|c| c.contains_key(b.dims.name(d)));
            // Volcano: a missing or non-positive cpu/memory capability means no limit.
            let unlimited = !declared || ((d == CPU_DIM || d == MEMORY_DIM) && cap.get(d) <= 0);
            capability.set(d, if unlimited { UNBOUNDED } else { cap.get(d) });
        }
    }
    let allocated = q.status.as_ref().and_then(|s| s.allocated.as_ref());
    Ok(QueueInfo {
        weight: spec.weight.max(1),
        capability,
        guarantee: b.list(
            spec.guarantee.as_ref().and_then(|g| g.resource.as_ref()),
            "spec.guarantee.resource",
        )?,
        deserved: b.list(spec.deserved.as_ref(), "spec.deserved")?,
        reclaimable: spec.reclaimable.unwrap_or(name != keys::ROOT_QUEUE),
        parent: if name == keys::ROOT_QUEUE {
            String::new()
        } else if spec.parent.is_empty() {
            keys::ROOT_QUEUE.to_string()
        } else {
            spec.parent.clone()
        },
        priority: spec.priority,
        state: QueueState::parse(q.status.as_ref().map(|s| s.state.as_str()).unwrap_or("")),
        creation: seconds(&q.metadata.creation_timestamp),
        old_allocated: b.list(allocated, "status.allocated")?,
        name,
    })
}

/// The Queue object the scheduler creates at startup when `name` (`root` or the default queue)
/// does not exist, as Volcano's `newDefaultAndRootQueue` does.
pub fn implicit_queue(name: &str) -> Queue {
    let mut q = Queue::new(name, QueueSpec::default());
    if name == keys::ROOT_QUEUE {
        q.spec.reclaimable = Some(false);
    }
    q
}

/// Builds the snapshot of one session.
pub fn build_snapshot(objs: &Objects, opts: &CacheOptions) -> Result<Snapshot, BuildError> {
    let names = resource_names(objs);
    let dims = Dims::new(names.iter().map(String::as_str));
    let mut b = Builder {
        dims: dims.clone(),
        object: String::new(),
    };

    let mut class_values: HashMap<&str, i32> = HashMap::new();
    let mut global_default: Option<i32> = None;
    for pc in &objs.priority_classes {
        if let Some(n) = &pc.metadata.name {
            class_values.insert(n.as_str(), pc.value);
        }
        if pc.global_default == Some(true) {
            global_default = Some(global_default.map_or(pc.value, |v: i32| v.max(pc.value)));
        }
    }
    class_values
        .entry("system-cluster-critical")
        .or_insert(2_000_000_000);
    class_values
        .entry("system-node-critical")
        .or_insert(2_000_001_000);

    // Queues, with `root` and the default queue always present.
    let mut queue_objs: Vec<Queue> = objs.queues.clone();
    for implicit in [keys::ROOT_QUEUE, opts.default_queue.as_str()] {
        if !queue_objs
            .iter()
            .any(|q| q.metadata.name.as_deref() == Some(implicit))
        {
            queue_objs.push(implicit_queue(implicit));
        }
    }
    let mut queues = Vec::new();
    let mut queue_index = HashMap::new();
    for q in &queue_objs {
        let label = format!("Queue {}", meta_str(&q.metadata, |m| m.name.as_ref()));
        b.object = label;
        let info = queue_info(&b, q)?;
        queue_index.insert(info.name.clone(), QueueId(queues.len() as u32));
        queues.push(info);
    }

    let mut nodes = Vec::new();
    let mut node_index = HashMap::new();
    for n in &objs.nodes {
        let name = meta_str(&n.metadata, |m| m.name.as_ref());
        let label = format!("Node {name}");
        b.object = label;
        let st = n.status.as_ref();
        let (list, field) = match st.and_then(|s| s.allocatable.as_ref()) {
            Some(a) => (Some(a), "status.allocatable"),
            None => (st.and_then(|s| s.capacity.as_ref()), "status.capacity"),
        };
        let mut alloc = b.list(list, field)?;
        if !list.is_some_and(|l| l.contains_key(volcano_api::resources::PODS)) {
            alloc.set(PODS_DIM, DEFAULT_MAX_PODS * 1000);
        }
        let gpus = NodeGpus::from_node(n).map_err(|e| BuildError {
            object: b.object.clone(),
            field: e.field,
            message: e.message,
        })?;
        node_index.insert(name.clone(), NodeId(nodes.len() as u32));
        let mut info = NodeInfo::new(name, Arc::new(n.clone()), alloc);
        info.gpus = gpus.map(Box::new);
        nodes.push(info);
    }

    let mut jobs: Vec<JobInfo> = Vec::new();
    let mut job_index: HashMap<String, JobId> = HashMap::new();
    for pg in &objs.pod_groups {
        if let Some(j) = job_info(
            &mut b,
            pg,
            opts,
            &queue_index,
            &class_values,
            global_default,
        )? {
            job_index.insert(j.key.clone(), JobId(jobs.len() as u32));
            jobs.push(j);
        }
    }

    let mut snap = Snapshot {
        total_resource: nodes
            .iter()
            .fold(dims.zero(), |mut acc: Resource, n: &NodeInfo| {
                acc.add(&n.allocatable);
                acc
            }),
        dims,
        tasks: Vec::new(),
        jobs,
        nodes,
        queues,
        queue_index,
        node_index,
    };

    for pod in &objs.pods {
        add_pod(&mut snap, &mut b, pod, opts, &job_index, &class_values)?;
    }
    for node in &mut snap.nodes {
        node.out_of_sync = node.idle.has_negative();
        if node.out_of_sync {
            tracing::warn!(node = %node.name, "node out of sync: its pods need more than its allocatable; no new pods go there until they fit");
        }
    }
    Ok(snap)
}

fn job_info(
    b: &mut Builder,
    pg: &PodGroup,
    opts: &CacheOptions,
    queue_index: &HashMap<String, QueueId>,
    class_values: &HashMap<&str, i32>,
    global_default: Option<i32>,
) -> Result<Option<JobInfo>, BuildError> {
    let namespace = pg
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_string());
    let name = meta_str(&pg.metadata, |m| m.name.as_ref());
    let key = format!("{namespace}/{name}");
    let label = format!("PodGroup {key}");
    let queue_name = if pg.spec.queue.is_empty() {
        opts.default_queue.clone()
    } else {
        pg.spec.queue.clone()
    };
    // Volcano drops jobs whose queue does not exist from the snapshot.
    let Some(&queue) = queue_index.get(&queue_name) else {
        return Ok(None);
    };
    let b2 = Builder {
        dims: b.dims.clone(),
        object: label,
    };
    let min_resources = match &pg.spec.min_resources {
        Some(l) => Some(b2.list(Some(l), "spec.minResources")?),
        None => None,
    };
    let status = pg.status.clone().unwrap_or_default();
    let priority = class_values
        .get(pg.spec.priority_class_name.as_str())
        .copied()
        .or(global_default)
        .unwrap_or(0);
    Ok(Some(JobInfo {
        uid: pg.metadata.uid.clone().unwrap_or_else(|| key.clone()),
        namespace,
        name,
        queue,
        min_available: pg.spec.min_member,
        min_task_member: pg.spec.min_task_member.clone(),
        min_resources,
        priority,
        creation: seconds(&pg.metadata.creation_timestamp),
        preemptable: annotation_or_label(&pg.metadata, keys::PREEMPTABLE) == Some("true"),
        phase: PgPhase::parse(&status.phase),
        conditions: status.conditions.clone(),
        old_status: status,
        tasks: Vec::new(),
        counts: [0; TaskStatus::COUNT],
        pending_best_effort: 0,
        allocated: b.dims.zero(),
        fit_errors: BTreeMap::new(),
        job_fit_error: None,
        key,
    }))
}

fn add_pod(
    snap: &mut Snapshot,
    b: &mut Builder,
    pod: &Pod,
    opts: &CacheOptions,
    job_index: &HashMap<String, JobId>,
    class_values: &HashMap<&str, i32>,
) -> Result<(), BuildError> {
    let spec = pod.spec.as_ref();
    let node_name = spec
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty());
    let scheduler = spec
        .and_then(|s| s.scheduler_name.as_deref())
        .unwrap_or("default-scheduler");
    let ours = opts.scheduler_names.iter().any(|n| n == scheduler);
    if !ours && node_name.is_none() {
        return Ok(());
    }
    let namespace = pod
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_string());
    let name = meta_str(&pod.metadata, |m| m.name.as_ref());
    let key = format!("{namespace}/{name}");
    let label = format!("Pod {key}");
    let b2 = Builder {
        dims: b.dims.clone(),
        object: label,
    };
    let resreq = pod_request(&b2, pod)?;
    let gpu = GpuRequest::from_pod(pod).map_err(|e| BuildError {
        object: b2.object.clone(),
        field: e.field,
        message: e.message,
    })?;
    let status = task_status(pod);
    let group = annotation(&pod.metadata, keys::GROUP_NAME)
        .or_else(|| annotation(&pod.metadata, keys::VOLCANO_GROUP_NAME));
    let job = if ours {
        group.and_then(|g| job_index.get(&format!("{namespace}/{g}")).copied())
    } else {
        None
    };
    let mut priority = spec
        .and_then(|s| s.priority)
        .or_else(|| {
            spec.and_then(|s| s.priority_class_name.as_deref())
                .and_then(|c| class_values.get(c).copied())
        })
        .unwrap_or(DEFAULT_TASK_PRIORITY);
    if let Some(p) = annotation(&pod.metadata, keys::TASK_PRIORITY).and_then(|v| v.parse().ok()) {
        priority = p;
    }
    let id = TaskId(snap.tasks.len() as u32);
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
    if let Some(j) = job {
        let info = &mut snap.jobs[j.idx()];
        info.tasks.push(id);
        info.counts[TaskStatus::Pending.idx()] += 1;
        if best_effort {
            info.pending_best_effort += 1;
        }
    }
    snap.tasks.push(task);
    let node = node_name
        .as_ref()
        .and_then(|n| snap.node_index.get(n).copied());
    match node {
        Some(n) if !matches!(status, TaskStatus::Succeeded | TaskStatus::Failed) => {
            snap.place(id, n, status)
        }
        _ => snap.set_status(id, status),
    }
    Ok(())
}

/// The part of a pod plugins read (identity, labels and annotations, placement constraints,
/// priority, start time): a session copies every pod, and containers' environment, volumes
/// and statuses would be most of the copy.
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

fn annotation<'a>(m: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    m.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

fn object_key(m: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        m.namespace.as_deref().unwrap_or("default"),
        m.name.as_deref().unwrap_or("")
    )
}

/// Go's `strconv.ParseBool`, as Volcano reads `volcano.sh/preemptable`: anything it cannot
/// parse counts as false, so a pod is protected unless the value clearly says it is not.
fn parse_bool_true(v: &str) -> bool {
    matches!(v, "1" | "t" | "T" | "TRUE" | "true" | "True")
}

/// Applies a session's decisions to the objects as a cluster would: bound pods get their node,
/// evicted pods are removed, PodGroup status and Queue `allocated` are written. The inverse
/// step of [`build_snapshot`], for whoever keeps the objects (the CLI driver, tests).
pub fn apply_decisions(objs: &mut Objects, d: &crate::framework::Decisions) {
    let binds: HashMap<&str, &str> = d
        .binds
        .iter()
        .map(|(p, n)| (p.as_str(), n.as_str()))
        .collect();
    let evicted: BTreeSet<&str> = d.evictions.iter().map(String::as_str).collect();
    for p in &mut objs.pods {
        if let Some(node) = binds.get(object_key(&p.metadata).as_str())
            && let Some(spec) = p.spec.as_mut()
        {
            spec.node_name = Some((*node).to_string());
        }
    }
    let nominated: HashMap<&str, &str> = d
        .nominated
        .iter()
        .map(|(p, n)| (p.as_str(), n.as_str()))
        .collect();
    for p in &mut objs.pods {
        if let Some(node) = nominated.get(object_key(&p.metadata).as_str()) {
            p.status
                .get_or_insert_with(Default::default)
                .nominated_node_name = Some((*node).to_string());
        }
    }
    let devices: HashMap<&str, &str> = d
        .gpu_devices
        .iter()
        .map(|(p, v)| (p.as_str(), v.as_str()))
        .collect();
    if !devices.is_empty() {
        for p in &mut objs.pods {
            if let Some(v) = devices.get(object_key(&p.metadata).as_str()) {
                p.metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(gpu::POD_VGPU_IDS.to_string(), (*v).to_string());
            }
        }
    }
    objs.pods
        .retain(|p| !evicted.contains(object_key(&p.metadata).as_str()));
    let statuses: HashMap<&str, _> = d
        .pod_groups
        .iter()
        .map(|u| (u.key.as_str(), &u.status))
        .collect();
    for pg in &mut objs.pod_groups {
        if let Some(status) = statuses.get(object_key(&pg.metadata).as_str()) {
            pg.status = Some((*status).clone());
        }
    }
    let allocated: HashMap<&str, _> = d
        .queues
        .iter()
        .map(|q| (q.name.as_str(), &q.allocated))
        .collect();
    for q in &mut objs.queues {
        if let Some(a) = q.metadata.name.as_deref().and_then(|n| allocated.get(n)) {
            q.status.get_or_insert_with(Default::default).allocated = Some((*a).clone());
        }
    }
}
