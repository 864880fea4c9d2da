//! Builds a session [`Snapshot`] from Kubernetes objects, as Volcano's scheduler cache does:
//! which pods are tracked, their task status, request and priority, node accounting and queue
//! defaults (`default` and `root` always exist).
//!
//! [`build_snapshot`] reads every object; [`SchedulerCache`] keeps a snapshot current from the
//! changes it is told of, so that taking one costs what changed.

mod decisions;
mod incremental;
mod shadow;
mod slim;
mod task;

pub use decisions::{
    apply_decisions, bind_claim, bind_pod, bind_volume_to_claim, nominate_pod, select_node,
    set_gpu_devices, set_pod_scheduled,
};
pub use incremental::SchedulerCache;
pub use slim::slim_pod;

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
use volcano_api::{NamespacedName, ObjectKind, ObjectRef};

use crate::model::gpu::{self, NodeGpus};
use crate::model::{
    ClusterObjects, JobId, JobInfo, NodeId, NodeInfo, PgPhase, QueueId, QueueInfo, QueueState,
    Snapshot, TaskId, TaskStatus, Topology,
};
use crate::resource::{CPU_DIM, Dims, MEMORY_DIM, PODS_DIM, Resource, UNBOUNDED};

/// A node without a `pods` quantity may hold this many pods (the kubelet default).
pub const DEFAULT_MAX_PODS: i64 = 110;
/// Priority of a pod that names no priority (Volcano's default).
pub const DEFAULT_TASK_PRIORITY: i32 = 1;

/// An object the cache cannot turn into scheduling state.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{object}: field {field}: {message}")]
pub struct BuildError {
    /// The object.
    pub object: ObjectRef,
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
    /// A bare pod of ours (no PodGroup named, no controller owner) is scheduled as a gang of
    /// one under a PodGroup kept only in memory, as if the controller-manager had made it
    /// (see `shadow`). Off, such a pod waits for a PodGroup object, as in Volcano.
    pub shadow_pod_groups: bool,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            scheduler_names: vec![keys::DEFAULT_SCHEDULER_NAME.to_string()],
            default_queue: keys::DEFAULT_QUEUE.to_string(),
            shadow_pod_groups: false,
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
    object: ObjectRef,
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

/// Calls `add` with every resource name a list names, but device resources (devices are
/// counted per device, not as a dimension).
fn list_names<'a>(l: Option<&'a ResourceList>, add: &mut (impl FnMut(&'a str) + ?Sized)) {
    for k in l.into_iter().flatten().map(|(k, _)| k) {
        if !gpu::is_device_resource(k) {
            add(k);
        }
    }
}

/// The resource names a node reports.
pub(crate) fn node_resource_names<'a>(
    n: &'a k8s_openapi::api::core::v1::Node,
    add: &mut (impl FnMut(&'a str) + ?Sized),
) {
    let st = n.status.as_ref();
    list_names(st.and_then(|s| s.allocatable.as_ref()), add);
    list_names(st.and_then(|s| s.capacity.as_ref()), add);
}

/// The resource names a pod's containers and overhead ask for.
pub(crate) fn pod_resource_names<'a>(p: &'a Pod, add: &mut (impl FnMut(&'a str) + ?Sized)) {
    let Some(spec) = &p.spec else { return };
    for c in spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
    {
        list_names(c.resources.as_ref().and_then(|r| r.requests.as_ref()), add);
        list_names(c.resources.as_ref().and_then(|r| r.limits.as_ref()), add);
    }
    list_names(spec.overhead.as_ref(), add);
}

/// The resource names a PodGroup's minimum names.
pub(crate) fn pod_group_resource_names<'a>(
    pg: &'a PodGroup,
    add: &mut (impl FnMut(&'a str) + ?Sized),
) {
    list_names(pg.spec.min_resources.as_ref(), add);
}

/// The resource names a queue's capability, deserved share and guarantee name.
pub(crate) fn queue_resource_names<'a>(q: &'a Queue, add: &mut (impl FnMut(&'a str) + ?Sized)) {
    list_names(q.spec.capability.as_ref(), add);
    list_names(q.spec.deserved.as_ref(), add);
    list_names(
        q.spec.guarantee.as_ref().and_then(|g| g.resource.as_ref()),
        add,
    );
}

fn resource_names(objs: &Objects) -> BTreeSet<String> {
    let mut names: BTreeSet<&str> = BTreeSet::new();
    let mut add = |k| {
        names.insert(k);
    };
    objs.nodes
        .iter()
        .for_each(|n| node_resource_names(n, &mut add));
    objs.pods
        .iter()
        .for_each(|p| pod_resource_names(p, &mut add));
    objs.pod_groups
        .iter()
        .for_each(|pg| pod_group_resource_names(pg, &mut add));
    objs.queues
        .iter()
        .for_each(|q| queue_resource_names(q, &mut add));
    names.into_iter().map(str::to_string).collect()
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
    let mut guarantee = b.list(
        spec.guarantee.as_ref().and_then(|g| g.resource.as_ref()),
        "spec.guarantee.resource",
    )?;
    // Capability is a hard limit: a guarantee above it cannot be kept, and left as it is it
    // would raise the queue's deserved share past its capability (the loader warns of it).
    guarantee.min_with(&capability);
    Ok(QueueInfo {
        weight: spec.weight.max(1),
        capability,
        guarantee,
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

/// Priority class values by name, as pods and PodGroups read them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Priorities {
    class_values: HashMap<String, i32>,
    global_default: Option<i32>,
}

impl Priorities {
    fn of(objs: &Objects) -> Self {
        let mut class_values: HashMap<String, i32> = HashMap::new();
        let mut global_default: Option<i32> = None;
        for pc in &objs.priority_classes {
            if let Some(n) = &pc.metadata.name {
                class_values.insert(n.clone(), pc.value);
            }
            if pc.global_default == Some(true) {
                global_default = Some(global_default.map_or(pc.value, |v: i32| v.max(pc.value)));
            }
        }
        class_values
            .entry("system-cluster-critical".to_string())
            .or_insert(2_000_000_000);
        class_values
            .entry("system-node-critical".to_string())
            .or_insert(2_000_001_000);
        Priorities {
            class_values,
            global_default,
        }
    }
}

/// A snapshot with the indexes the incremental cache keeps beside it.
pub(crate) struct Built {
    pub(crate) snap: Snapshot,
    pub(crate) jobs: HashMap<NamespacedName, JobId>,
    pub(crate) tasks: HashMap<NamespacedName, TaskId>,
    pub(crate) priorities: Priorities,
    /// PodGroups named by pods but missing, with the pods that name them (some may have gone
    /// or moved since: the arrival of the PodGroup checks each).
    pub(crate) missing_groups: BTreeMap<NamespacedName, BTreeSet<NamespacedName>>,
}

/// Builds the snapshot of one session.
pub fn build_snapshot(objs: &Objects, opts: &CacheOptions) -> Result<Snapshot, BuildError> {
    build(objs, opts).map(|b| b.snap)
}

/// The queues of `objs`, with `root` and the default queue always present.
fn queue_objects<'a>(objs: &'a Objects, opts: &CacheOptions) -> Vec<std::borrow::Cow<'a, Queue>> {
    let mut queues: Vec<std::borrow::Cow<'a, Queue>> =
        objs.queues.iter().map(std::borrow::Cow::Borrowed).collect();
    for implicit in [keys::ROOT_QUEUE, opts.default_queue.as_str()] {
        if !queues
            .iter()
            .any(|q| q.metadata.name.as_deref() == Some(implicit))
        {
            queues.push(std::borrow::Cow::Owned(implicit_queue(implicit)));
        }
    }
    queues
}

/// A node with nothing on it yet.
fn node_info(dims: &Dims, n: &k8s_openapi::api::core::v1::Node) -> Result<NodeInfo, BuildError> {
    let name = meta_str(&n.metadata, |m| m.name.as_ref());
    let b = Builder {
        dims: dims.clone(),
        object: ObjectRef::of(ObjectKind::Node, &n.metadata),
    };
    let (list, field) = node_allocatable(n);
    let mut alloc = b.list(list, field)?;
    if !list.is_some_and(|l| l.contains_key(volcano_api::resources::PODS)) {
        alloc.set(PODS_DIM, DEFAULT_MAX_PODS * 1000);
    }
    let gpus = NodeGpus::from_node(n).map_err(|e| BuildError {
        object: b.object.clone(),
        field: e.field,
        message: e.message,
    })?;
    let mut info = NodeInfo::new(name, Arc::new(n.clone()), alloc);
    info.gpus = gpus.map(Box::new);
    Ok(info)
}

/// The list a node's allocatable is read from (its capacity when it reports no allocatable).
fn node_allocatable(n: &k8s_openapi::api::core::v1::Node) -> (Option<&ResourceList>, &'static str) {
    let st = n.status.as_ref();
    match st.and_then(|s| s.allocatable.as_ref()) {
        Some(a) => (Some(a), "status.allocatable"),
        None => (st.and_then(|s| s.capacity.as_ref()), "status.capacity"),
    }
}

pub(crate) fn build(objs: &Objects, opts: &CacheOptions) -> Result<Built, BuildError> {
    let names = resource_names(objs);
    let dims = Dims::new(names.iter().map(String::as_str));
    let priorities = Priorities::of(objs);

    let mut queues = Vec::new();
    let mut queue_index = HashMap::new();
    for q in queue_objects(objs, opts) {
        let b = Builder {
            dims: dims.clone(),
            object: ObjectRef::of(ObjectKind::Queue, &q.metadata),
        };
        let info = queue_info(&b, &q)?;
        queue_index.insert(info.name.clone(), QueueId(queues.len() as u32));
        queues.push(Arc::new(info));
    }

    let mut nodes = Vec::new();
    let mut node_index = HashMap::new();
    for n in &objs.nodes {
        let info = node_info(&dims, n)?;
        node_index.insert(info.name.clone(), NodeId(nodes.len() as u32));
        nodes.push(Arc::new(info));
    }

    let mut jobs = Vec::new();
    let mut job_index: HashMap<NamespacedName, JobId> = HashMap::new();
    for pg in &objs.pod_groups {
        if let Some(j) = job_info(&dims, pg, opts, &queue_index, &priorities)? {
            job_index.insert(j.key.clone(), JobId(jobs.len() as u32));
            jobs.push(Arc::new(j));
        }
    }
    for pod in &objs.pods {
        let Some(pg) = shadow::shadow_pod_group(pod, opts) else {
            continue;
        };
        if job_index.contains_key(&object_key(&pg.metadata)) {
            continue;
        }
        if let Some(j) = shadow_job_info(&dims, &pg, pod, opts, &queue_index, &priorities)? {
            job_index.insert(j.key.clone(), JobId(jobs.len() as u32));
            jobs.push(Arc::new(j));
        }
    }

    let topology = Arc::new(Topology::of(objs, &node_index));
    let mut snap = Snapshot {
        total_resource: nodes.iter().fold(dims.zero(), |mut acc: Resource, n| {
            acc.add(&n.allocatable);
            acc
        }),
        dims,
        tasks: Vec::with_capacity(objs.pods.len()),
        jobs,
        nodes,
        queues,
        queue_index: Arc::new(queue_index),
        node_index: Arc::new(node_index),
        node_rank: Arc::new(Vec::new()),
        node_table: None,
        cluster: Arc::new(ClusterObjects::of(objs)),
        topology,
    };
    let mut by_name: Vec<usize> = (0..snap.nodes.len()).collect();
    by_name.sort_by(|&a, &b| snap.nodes[a].name.cmp(&snap.nodes[b].name));
    let mut rank = vec![0u32; by_name.len()];
    for (r, i) in by_name.into_iter().enumerate() {
        rank[i] = r as u32;
    }
    snap.node_rank = Arc::new(rank);

    let mut task_index = HashMap::with_capacity(objs.pods.len());
    let mut missing_groups: BTreeMap<NamespacedName, BTreeSet<NamespacedName>> = BTreeMap::new();
    for pod in &objs.pods {
        if let Some((task, status)) = task::new_task(&snap, pod, opts, &job_index, &priorities)? {
            if task.job.is_none()
                && let Some(g) = task::group_key(pod, opts)
            {
                missing_groups
                    .entry(g)
                    .or_default()
                    .insert(task.key.clone());
            }
            let id = TaskId(snap.tasks.len() as u32);
            task_index.insert(task.key.clone(), id);
            task::insert_task(&mut snap, id, task, status);
        }
    }
    for node in &mut snap.nodes {
        if node.idle.has_negative() {
            let node = Arc::make_mut(node);
            node.out_of_sync = true;
            tracing::warn!(node = %node.name, "node out of sync: its pods need more than its allocatable; no new pods go there until they fit");
        }
    }
    Ok(Built {
        snap,
        jobs: job_index,
        tasks: task_index,
        priorities,
        missing_groups,
    })
}

/// A PodGroup as a job without tasks; `None` when its queue does not exist (Volcano leaves
/// such jobs out of the snapshot).
fn job_info(
    dims: &Dims,
    pg: &PodGroup,
    opts: &CacheOptions,
    queue_index: &HashMap<String, QueueId>,
    priorities: &Priorities,
) -> Result<Option<JobInfo>, BuildError> {
    let namespace = pg
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_string());
    let name = meta_str(&pg.metadata, |m| m.name.as_ref());
    let key = NamespacedName::new(namespace.as_str(), name.as_str());
    let label = ObjectRef::of(ObjectKind::PodGroup, &pg.metadata);
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
        dims: dims.clone(),
        object: label,
    };
    let min_resources = match &pg.spec.min_resources {
        Some(l) => Some(b2.list(Some(l), "spec.minResources")?),
        None => None,
    };
    let status = pg.status.clone().unwrap_or_default();
    let priority = priorities
        .class_values
        .get(pg.spec.priority_class_name.as_str())
        .copied()
        .or(priorities.global_default)
        .unwrap_or(0);
    Ok(Some(JobInfo {
        uid: pg.metadata.uid.clone().unwrap_or_else(|| key.to_string()),
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
        allocated: dims.zero(),
        fit_errors: BTreeMap::new(),
        job_fit_error: None,
        network_topology: pg.spec.network_topology.clone().map(Arc::new),
        sub_group_policy: pg
            .spec
            .sub_group_policy
            .clone()
            .filter(|p| !p.is_empty())
            .map(Arc::new),
        sub_groups: None,
        shadow: false,
        key,
    }))
}

/// [`job_info`] of `pod`'s shadow PodGroup `pg`: a fault in it is the pod's, the object there is.
fn shadow_job_info(
    dims: &Dims,
    pg: &PodGroup,
    pod: &Pod,
    opts: &CacheOptions,
    queue_index: &HashMap<String, QueueId>,
    priorities: &Priorities,
) -> Result<Option<JobInfo>, BuildError> {
    let mut info = job_info(dims, pg, opts, queue_index, priorities).map_err(|e| BuildError {
        object: ObjectRef::of(ObjectKind::Pod, &pod.metadata),
        ..e
    })?;
    if let Some(info) = info.as_mut() {
        info.shadow = true;
    }
    Ok(info)
}

fn annotation<'a>(m: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    m.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

fn object_key(m: &ObjectMeta) -> NamespacedName {
    NamespacedName::of(m)
}

/// Go's `strconv.ParseBool`, as Volcano reads `volcano.sh/preemptable`: anything it cannot
/// parse counts as false, so a pod is protected unless the value clearly says it is not.
fn parse_bool_true(v: &str) -> bool {
    matches!(v, "1" | "t" | "T" | "TRUE" | "true" | "True")
}
