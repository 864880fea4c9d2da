//! The scheduler cache: a snapshot kept current from object changes.
//!
//! Told of every change to pods, PodGroups, nodes, queues and priority classes, the cache
//! updates its snapshot in place where the change is local: a pod created, bound, running,
//! finished or deleted; a PodGroup created, deleted, or its spec or status changed; a node's
//! labels, taints or conditions; a queue's spec or status. A namespace or storage object
//! (PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode) changed replaces only the
//! snapshot's [`ClusterObjects`], read again from the objects when the next snapshot is taken.
//! Any other change (a node added or
//! removed, a new resource name, a priority class, a PodGroup arriving after pods that name
//! it) drops the kept state, and the next snapshot is built from all objects. A session gets a
//! copy that shares every object with the cache (see [`Snapshot`]), so taking one costs a
//! reference per object.
//!
//! The kept snapshot holds the same state [`build_snapshot`](super::build_snapshot) would give
//! for the same objects; only the order of tasks created or deleted since the last build may
//! differ.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use volcano_api::k8s_openapi;
use volcano_api::pod_group_of_pod::{has_controlling_owner, pod_group_name};
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_api::{NamespacedName, ObjectKind, ObjectRef, Objects};

use super::shadow::{is_shadowed, shadow_pod_group};
use super::task::{self, group_key};
use super::{
    BuildError, Builder, Built, CacheOptions, build, job_info, meta_str, node_info,
    node_resource_names, object_key, pod_group_resource_names, pod_resource_names, queue_info,
    queue_resource_names, shadow_job_info,
};
use crate::model::{ClusterObjects, JobId, NodeId, Snapshot, TaskId, TaskStatus, Topology};
use crate::resource::Dims;

/// How the cache has served snapshots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Snapshots copied from the kept state.
    pub kept: u64,
    /// Snapshots built from all objects.
    pub rebuilt: u64,
}

/// The scheduler cache (see the module documentation).
pub struct SchedulerCache {
    opts: CacheOptions,
    state: Option<Built>,
    stats: CacheStats,
    /// A namespace or storage object changed since the kept snapshot's `cluster` was read.
    cluster_stale: bool,
    /// A HyperNode, or a node's labels, changed since the kept snapshot's domains were read.
    topology_stale: bool,
}

/// A change the kept state cannot take in place: the next snapshot is built from all objects.
struct Rebuild;

impl From<BuildError> for Rebuild {
    fn from(_: BuildError) -> Self {
        Rebuild
    }
}

/// Whether every name `names` calls back with is a dimension of `dims`.
fn knows<'a>(dims: &Dims, names: impl FnOnce(&mut dyn FnMut(&'a str))) -> bool {
    let mut known = true;
    names(&mut |n: &str| known &= dims.index(n).is_some());
    known
}

impl SchedulerCache {
    /// An empty cache: the first snapshot is built from all objects.
    pub fn new(opts: CacheOptions) -> Self {
        SchedulerCache {
            opts,
            state: None,
            stats: CacheStats::default(),
            cluster_stale: false,
            topology_stale: false,
        }
    }

    /// How snapshots were served so far.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Drops the kept state: the next snapshot is built from all objects.
    pub fn invalidate(&mut self) {
        self.state = None;
        self.cluster_stale = false;
        self.topology_stale = false;
    }

    /// The snapshot of a session over `objs`, which must be the objects of every change the
    /// cache was told of. Fails as [`build_snapshot`](super::build_snapshot) does.
    pub fn snapshot(&mut self, objs: &Objects) -> Result<Snapshot, BuildError> {
        match &mut self.state {
            Some(state) => {
                if std::mem::take(&mut self.cluster_stale) {
                    state.snap.cluster = Arc::new(ClusterObjects::of(objs));
                }
                if std::mem::take(&mut self.topology_stale) {
                    state.snap.topology = Arc::new(Topology::of(objs, &state.snap.node_index));
                }
                self.stats.kept += 1;
                Ok(state.snap.clone())
            }
            None => {
                let built = build(objs, &self.opts)?;
                let snap = built.snap.clone();
                self.state = Some(built);
                self.stats.rebuilt += 1;
                Ok(snap)
            }
        }
    }

    /// Takes a change, or drops the kept state when it cannot be taken in place.
    fn take(&mut self, change: impl FnOnce(&mut Built, &CacheOptions) -> Result<(), Rebuild>) {
        if let Some(state) = self.state.as_mut()
            && change(state, &self.opts).is_err()
        {
            self.state = None;
        }
    }

    /// The PodGroup `pod` belongs to (its own shadow one for a bare pod left to the scheduler).
    pub fn gang_key(&self, pod: &Pod) -> Option<NamespacedName> {
        group_key(pod, &self.opts)
    }

    /// Whether gang `key` (a [`SchedulerCache::gang_key`]) has, as followed so far, fewer pods
    /// than its PodGroup's `minMember`: a controller still making them, so no session can
    /// place any of them yet. `false` where the cache does not know (no kept state, no such
    /// PodGroup).
    pub fn gang_short_of_pods(&self, key: &NamespacedName) -> bool {
        let Some(state) = &self.state else {
            return false;
        };
        let Some(&j) = state.jobs.get(key) else {
            return false;
        };
        let job = state.snap.job(j);
        i64::try_from(job.tasks.len()).unwrap_or(i64::MAX) < i64::from(job.min_available)
    }

    /// A pod was created (`old` is `None`), changed, or deleted (`new` is `None`).
    /// The cache keeps a share of `new` (no copy).
    pub fn pod_changed(&mut self, old: Option<&Pod>, new: Option<&Arc<Pod>>) {
        self.take(|state, opts| pod_changed(state, opts, old, new));
    }

    /// A PodGroup was created, changed or deleted.
    pub fn pod_group_changed(&mut self, old: Option<&PodGroup>, new: Option<&PodGroup>) {
        self.take(|state, opts| pod_group_changed(state, opts, old, new));
    }

    /// A node was created, changed or deleted.
    pub fn node_changed(&mut self, old: Option<&Node>, new: Option<&Node>) {
        // HyperNodes may choose nodes by their labels.
        if let (Some(state), Some(o), Some(n)) = (&self.state, old, new)
            && (state.snap.topology.has_hyper_nodes() || state.snap.topology.not_ready.is_some())
            && o.metadata.labels != n.metadata.labels
        {
            self.topology_stale = true;
        }
        self.take(|state, _| node_changed(state, old, new));
    }

    /// A queue was created, changed or deleted.
    pub fn queue_changed(&mut self, old: Option<&Queue>, new: Option<&Queue>) {
        self.take(|state, _| queue_changed(state, old, new));
    }

    /// A priority class was created, changed or deleted: priorities of pods and PodGroups
    /// may all move, so the next snapshot is built from all objects.
    pub fn priority_class_changed(&mut self) {
        self.invalidate();
    }

    /// A namespace, PersistentVolume, PersistentVolumeClaim, StorageClass or CSINode was
    /// created, changed or deleted: the next snapshot keeps its jobs, nodes and queues and reads
    /// only its [`ClusterObjects`] again. Sessions already holding a snapshot keep theirs.
    pub fn cluster_object_changed(&mut self) {
        if self.state.is_some() {
            self.cluster_stale = true;
        }
    }

    /// A HyperNode was created, changed or deleted: the next snapshot keeps its jobs, nodes and
    /// queues and reads the network domains again.
    pub fn hyper_node_changed(&mut self) {
        if self.state.is_some() {
            self.topology_stale = true;
        }
    }
}

fn pod_changed(
    state: &mut Built,
    opts: &CacheOptions,
    old: Option<&Pod>,
    new: Option<&Arc<Pod>>,
) -> Result<(), Rebuild> {
    let Some(k) = new.map(|p| &**p).or(old).map(|p| object_key(&p.metadata)) else {
        return Ok(());
    };
    if let Some(p) = new
        && !knows(&state.snap.dims, |add| pod_resource_names(p, add))
    {
        return Err(Rebuild);
    }
    let (old_group, new_group) = (
        old.and_then(|p| group_key(p, opts)),
        new.and_then(|p| group_key(p, opts)),
    );
    // A bare pod's shadow PodGroup comes before its task, which joins it.
    if let Some(p) = new
        && let Some(pg) = shadow_pod_group(p, opts)
    {
        put_shadow(state, opts, &pg, p)?;
    }
    // A pod that no longer names a PodGroup still missing is no longer waiting for it.
    if let Some(was) = &old_group
        && new_group.as_ref() != Some(was)
        && let Some(waiting) = state.missing_groups.get_mut(was)
    {
        waiting.remove(&k);
        if waiting.is_empty() {
            state.missing_groups.remove(was);
        }
    }
    let made = match new {
        Some(p) => task::new_task(&state.snap, p, opts, &state.jobs, &state.priorities)?,
        None => None,
    };
    let existing = state.tasks.get(&k).copied();
    let mut touched: Vec<NodeId> = Vec::with_capacity(2);
    // A pod given its PodGroup (the controller annotates a bare pod after creating one) moves
    // to that job: taken out and put in again, as a deletion and a creation would.
    let existing = match (existing, &made) {
        (Some(id), Some((task, _))) if state.snap.task(id).job != task.job => {
            touched.extend(state.snap.task(id).node);
            remove_task(state, id);
            None
        }
        _ => existing,
    };
    // A pod naming a PodGroup not seen yet (its watch event came before the PodGroup's, or it
    // was made before the PodGroup): the PodGroup's arrival must find it.
    if let Some((task, _)) = &made
        && task.job.is_none()
        && let Some(g) = new_group.clone()
    {
        state
            .missing_groups
            .entry(g)
            .or_default()
            .insert(task.key.clone());
    }
    match (existing, made) {
        (Some(id), Some((task, status))) => {
            let was = state.snap.task(id);
            if was.resreq != task.resreq || was.gpu != task.gpu {
                return Err(Rebuild);
            }
            touched.extend(was.node);
            detach(&mut state.snap, id);
            task::insert_task(&mut state.snap, id, task, status);
            touched.extend(state.snap.task(id).node);
        }
        (Some(id), None) => {
            touched.extend(state.snap.task(id).node);
            remove_task(state, id);
        }
        (None, Some((task, status))) => {
            let id = TaskId(state.snap.tasks.len() as u32);
            state.tasks.insert(task.key.clone(), id);
            task::insert_task(&mut state.snap, id, task, status);
            touched.extend(state.snap.task(id).node);
        }
        (None, None) => {}
    }
    // A bare pod deleted, or given a PodGroup of its own, leaves its shadow behind (its group
    // key was the shadow's).
    if let Some(was) = old_group.filter(|_| old.is_some_and(|p| is_shadowed(p, opts)))
        && new_group.as_ref() != Some(&was)
        && let Some(&j) = state.jobs.get(&was)
        && state.snap.job(j).shadow
    {
        remove_job(state, j);
    }
    for n in touched {
        refresh_out_of_sync(&mut state.snap, n);
    }
    Ok(())
}

/// Puts `pod`'s shadow PodGroup `pg` in, or brings it up to date (its phase follows the pod),
/// unless a PodGroup object of its name is there: the object wins.
fn put_shadow(
    state: &mut Built,
    opts: &CacheOptions,
    pg: &PodGroup,
    pod: &Pod,
) -> Result<(), Rebuild> {
    let k = object_key(&pg.metadata);
    if let Some(&j) = state.jobs.get(&k)
        && !state.snap.job(j).shadow
    {
        return Ok(());
    }
    let info = shadow_job_info(
        &state.snap.dims,
        pg,
        pod,
        opts,
        &state.snap.queue_index,
        &state.priorities,
    )?;
    put_job(state, k, info);
    Ok(())
}

/// Takes a task's accounting out of its node and job, leaving it in the arena.
fn detach(snap: &mut Snapshot, id: TaskId) {
    snap.unplace(id, TaskStatus::Pending);
    let task = snap.task(id);
    let best_effort = task.best_effort;
    if let Some(j) = task.job {
        let job = snap.job_mut(j);
        let pending = &mut job.counts[TaskStatus::Pending.idx()];
        *pending = pending.saturating_sub(1);
        if best_effort {
            job.pending_best_effort = job.pending_best_effort.saturating_sub(1);
        }
    }
}

/// Deletes task `id`: the last task of the arena takes its id.
fn remove_task(state: &mut Built, id: TaskId) {
    let snap = &mut state.snap;
    detach(snap, id);
    let task = snap.task(id);
    state.tasks.remove(&task.key);
    if let Some(j) = task.job {
        snap.job_mut(j).tasks.retain(|t| *t != id);
    }
    let last = TaskId(snap.tasks.len() as u32 - 1);
    snap.tasks.swap_remove(id.idx());
    if last == id {
        return;
    }
    let moved = snap.task(id);
    let (job, node, moved_key) = (moved.job, moved.node, moved.key.clone());
    let renumber = |ids: &mut Vec<TaskId>| {
        ids.iter_mut().filter(|t| **t == last).for_each(|t| *t = id);
    };
    if let Some(j) = job {
        renumber(&mut snap.job_mut(j).tasks);
    }
    if let Some(n) = node {
        renumber(&mut snap.node_mut(n).tasks);
    }
    state.tasks.insert(moved_key, id);
}

/// Marks a node out of sync when its pods need more than it has, and back in service when
/// they fit again.
fn refresh_out_of_sync(snap: &mut Snapshot, n: NodeId) {
    let negative = snap.node(n).idle.has_negative();
    if negative == snap.node(n).out_of_sync {
        return;
    }
    let node = snap.node_mut(n);
    node.out_of_sync = negative;
    if negative {
        tracing::warn!(node = %node.name, "node out of sync: its pods need more than its allocatable; no new pods go there until they fit");
    } else {
        tracing::info!(node = %node.name, "node back in sync: its pods fit its allocatable again");
    }
}

fn pod_group_changed(
    state: &mut Built,
    opts: &CacheOptions,
    old: Option<&PodGroup>,
    new: Option<&PodGroup>,
) -> Result<(), Rebuild> {
    let Some(k) = new.or(old).map(|pg| object_key(&pg.metadata)) else {
        return Ok(());
    };
    let existing = state.jobs.get(&k).copied();
    let Some(pg) = new else {
        if let Some(j) = existing {
            // A bare pod's PodGroup object deleted under it: the pod is back to its shadow,
            // which a build makes.
            if holds_its_bare_pod(state, opts, j) {
                return Err(Rebuild);
            }
            remove_job(state, j);
        }
        return Ok(());
    };
    if !knows(&state.snap.dims, |add| pod_group_resource_names(pg, add)) {
        return Err(Rebuild);
    }
    let info = job_info(
        &state.snap.dims,
        pg,
        opts,
        &state.snap.queue_index,
        &state.priorities,
    )?;
    // An object a build leaves out (its queue does not exist) where a bare pod's shadow, or
    // the object that replaced it, stands: a build puts the shadow back.
    if info.is_none()
        && let Some(j) = existing
        && holds_its_bare_pod(state, opts, j)
    {
        return Err(Rebuild);
    }
    put_job(state, k, info);
    Ok(())
}

/// Whether job `j` is the PodGroup, shadow or object, of a bare pod among its tasks: a pod
/// without a controlling owner (it may name the object the controller made for it) whose own
/// PodGroup name, [`pod_group_name`], the job bears. A replicas' PodGroup is not one.
fn holds_its_bare_pod(state: &Built, opts: &CacheOptions, j: JobId) -> bool {
    let snap = &state.snap;
    let job = snap.job(j);
    opts.shadow_pod_groups
        && job.tasks.iter().any(|&t| {
            let pod = &snap.task(t).pod;
            !has_controlling_owner(pod) && pod_group_name(pod) == job.name
        })
}

/// Puts job `info` at `k` in, keeping the tasks of the job it replaces; `None` (its queue is
/// gone) takes the job at `k` out.
fn put_job(state: &mut Built, k: NamespacedName, info: Option<crate::model::JobInfo>) {
    let existing = state.jobs.get(&k).copied();
    match (existing, info) {
        (Some(j), Some(mut info)) => {
            let job = state.snap.job_mut(j);
            info.tasks = std::mem::take(&mut job.tasks);
            info.counts = job.counts;
            info.pending_best_effort = job.pending_best_effort;
            info.allocated = std::mem::take(&mut job.allocated);
            *job = info;
        }
        // Its queue is gone: the job leaves the snapshot, its pods stay on their nodes.
        (Some(j), None) => remove_job(state, j),
        (None, Some(info)) => {
            let j = JobId(state.snap.jobs.len() as u32);
            state.jobs.insert(k.clone(), j);
            state.snap.jobs.push(Arc::new(info));
            // Pods that named it before it arrived (a bare pod's annotation is often watched
            // ahead of its PodGroup) join it now.
            for pod in state.missing_groups.remove(&k).into_iter().flatten() {
                join_job(state, &pod, j);
            }
        }
        (None, None) => {}
    }
}

/// Puts the job-less task of `pod`, if it still is one, into job `j`: taken out and put in
/// again, as a pod deleted and created would be.
fn join_job(state: &mut Built, pod: &NamespacedName, j: JobId) {
    let Some(&id) = state.tasks.get(pod) else {
        return;
    };
    if state.snap.task(id).job.is_some() {
        return;
    }
    let mut task = (*state.snap.tasks[id.idx()]).clone();
    let status = task.status;
    let node = task.node;
    remove_task(state, id);
    // As `new_task` makes it: unplaced and pending, `insert_task` placing it.
    task.job = Some(j);
    task.node = None;
    task.status = TaskStatus::Pending;
    let id = TaskId(state.snap.tasks.len() as u32);
    state.tasks.insert(task.key.clone(), id);
    task::insert_task(&mut state.snap, id, task, status);
    if let Some(n) = node {
        refresh_out_of_sync(&mut state.snap, n);
    }
}

/// Deletes job `j`: its tasks stay, job-less, and the last job of the arena takes its id.
fn remove_job(state: &mut Built, j: JobId) {
    let snap = &mut state.snap;
    let job = snap.job(j);
    let (k, tasks) = (job.key.clone(), job.tasks.clone());
    for &t in &tasks {
        snap.task_mut(t).job = None;
    }
    if !tasks.is_empty() {
        let keys: BTreeSet<NamespacedName> =
            tasks.iter().map(|&t| snap.task(t).key.clone()).collect();
        state
            .missing_groups
            .entry(k.clone())
            .or_default()
            .extend(keys);
    }
    state.jobs.remove(&k);
    let last = JobId(snap.jobs.len() as u32 - 1);
    snap.jobs.swap_remove(j.idx());
    if last == j {
        return;
    }
    let moved = snap.job(j);
    let (moved_key, moved_tasks) = (moved.key.clone(), moved.tasks.clone());
    for t in moved_tasks {
        snap.task_mut(t).job = Some(j);
    }
    state.jobs.insert(moved_key, j);
}

fn node_changed(state: &mut Built, old: Option<&Node>, new: Option<&Node>) -> Result<(), Rebuild> {
    // Nodes come and go rarely; every id and the cluster's total would move.
    let (Some(old), Some(new)) = (old, new) else {
        return Err(Rebuild);
    };
    let name = meta_str(&new.metadata, |m| m.name.as_ref());
    if old.metadata.name != new.metadata.name
        || !knows(&state.snap.dims, |add| node_resource_names(new, add))
    {
        return Err(Rebuild);
    }
    let Some(&n) = state.snap.node_index.get(&name) else {
        return Err(Rebuild);
    };
    let info = node_info(&state.snap.dims, new)?;
    let kept = state.snap.node(n);
    if info.allocatable != kept.allocatable || info.gpus.is_some() != kept.gpus.is_some() {
        return Err(Rebuild);
    }
    if let (Some(a), Some(b)) = (&info.gpus, &kept.gpus)
        && a.devices.len() != b.devices.len()
    {
        return Err(Rebuild);
    }
    state.snap.node_mut(n).node = info.node;
    Ok(())
}

fn queue_changed(
    state: &mut Built,
    old: Option<&Queue>,
    new: Option<&Queue>,
) -> Result<(), Rebuild> {
    // A queue added or removed moves ids, and the implicit `root` and default queues.
    let (Some(old), Some(new)) = (old, new) else {
        return Err(Rebuild);
    };
    let name = meta_str(&new.metadata, |m| m.name.as_ref());
    if old.metadata.name != new.metadata.name
        || !knows(&state.snap.dims, |add| queue_resource_names(new, add))
    {
        return Err(Rebuild);
    }
    let Some(&q) = state.snap.queue_index.get(&name) else {
        return Err(Rebuild);
    };
    let b = Builder {
        dims: state.snap.dims.clone(),
        object: ObjectRef::of(ObjectKind::Queue, &new.metadata),
    };
    *state.snap.queue_mut(q) = queue_info(&b, new)?;
    Ok(())
}
