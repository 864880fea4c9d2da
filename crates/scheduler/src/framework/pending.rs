//! Why a PodGroup is pending, in words a person can act on: the gang's `Unschedulable`
//! message that `gang` writes as a condition and the session reports for every PodGroup left
//! unscheduled. Shared by the framework and the plugins, below both.

use super::conditions::NOT_ENOUGH_RESOURCES;
use crate::model::{JobId, Snapshot, TaskStatus};
use crate::resource::Resource;

/// Number of tasks that count as schedulable for the gang message: ready ones plus pending
/// ones whose last transaction placed them, even if it was undone.
fn schedulable_num(s: &Snapshot, j: JobId) -> i64 {
    let job = s.job(j);
    let tentative = job
        .tasks
        .iter()
        .filter(|&&t| s.task(t).status == TaskStatus::Pending && s.task(t).last_tx_allocated)
        .count();
    i64::from(job.ready_task_num()) + tentative as i64
}

/// What kept the job's tasks off the nodes, in one line, with the reason to report. A task
/// that no node could hold even empty is named first, whatever else the session found
/// (queue share, admission): no quota or share would ever let it run.
pub(crate) fn job_detail(s: &Snapshot, j: JobId, largest: &Resource) -> (String, String) {
    let job = s.job(j);
    if let Some(msg) = never_fits(s, j, largest) {
        return (NOT_ENOUGH_RESOURCES.to_string(), msg);
    }
    if let Some((reason, msg)) = &job.job_fit_error {
        return (reason.clone(), msg.clone());
    }
    let reason = NOT_ENOUGH_RESOURCES.to_string();
    let mut messages: Vec<String> = Vec::new();
    for fe in job.fit_errors.values() {
        let m = fe.message(&s.dims);
        if !messages.contains(&m) {
            messages.push(m);
        }
    }
    if messages.is_empty() {
        let pending = job.count(TaskStatus::Pending);
        let pipelined = job.count(TaskStatus::Pipelined);
        let m = if pipelined > 0 {
            format!("{pipelined} task(s) pipelined, waiting for resources being released")
        } else if job.tasks.is_empty() {
            "the PodGroup has no pods yet".to_string()
        } else {
            format!("{pending} task(s) pending, not tried in this session")
        };
        return (reason, m);
    }
    (reason, messages.join("; "))
}

/// The most of each resource any one node offers (its allocatable), for telling a task that
/// waits for room from one that no node could ever hold.
pub fn largest_node(s: &Snapshot) -> Resource {
    let mut largest = s.dims.zero();
    for n in &s.nodes {
        for (d, v) in n.allocatable.iter() {
            if v > largest.get(d) {
                largest.set(d, v);
            }
        }
    }
    largest
}

/// The node-fit message of the job's first waiting task that asks more of some resource than
/// any node has even empty, if there is one.
fn never_fits(s: &Snapshot, j: JobId, largest: &Resource) -> Option<String> {
    let nodes = s.nodes.len();
    s.job(j).tasks.iter().find_map(|&t| {
        let task = s.task(t);
        if task.status != TaskStatus::Pending || task.scheduling_gated {
            return None;
        }
        let over: Vec<String> = task
            .resreq
            .iter()
            .filter(|&(d, v)| v > largest.get(d))
            .map(|(d, v)| {
                format!(
                    "{} {} (the largest node has {})",
                    s.dims.name(d),
                    s.dims.format(d, v),
                    s.dims.format(d, largest.get(d))
                )
            })
            .collect();
        if over.is_empty() {
            return None;
        }
        Some(if nodes == 0 {
            format!(
                "0/0 nodes are available: the cluster has no nodes for task {}",
                task.key
            )
        } else {
            format!(
                "0/{nodes} nodes are available: no node can hold task {} even empty, it asks {}",
                task.key,
                over.join(", ")
            )
        })
    })
}

/// The reason and message of a job that is not ready (the gang's Unschedulable condition).
/// The count is of the gang's tasks still without a place: never more than the tasks that
/// exist, and a PodGroup without pods gets no count at all (Volcano's `min - schedulable`
/// over `len(tasks)` reads "3/2" or "3/0").
pub fn gang_unschedulable(s: &Snapshot, j: JobId, largest: &Resource) -> (String, String) {
    let job = s.job(j);
    let (reason, detail) = job_detail(s, j, largest);
    let total = job.tasks.len() as i64;
    if total == 0 {
        return (reason, detail);
    }
    let placed = schedulable_num(s, j).min(total);
    let short = (i64::from(job.min_available) - placed).max(0);
    let unready = short.min(total - placed);
    let message = format!("{unready}/{total} tasks in gang unschedulable: {detail}");
    (reason, message)
}

/// A job whose gang is only short because some of its scheduled pods are terminating, with
/// nothing left to schedule: not reported unschedulable.
pub fn satisfied_by_releasing(s: &Snapshot, j: JobId) -> bool {
    let job = s.job(j);
    let releasing = job
        .tasks
        .iter()
        .filter(|&&t| {
            s.task(t).status == TaskStatus::Releasing && s.task(t).bound_node_name.is_some()
        })
        .count() as i64;
    if releasing == 0 || job.count(TaskStatus::Pending) > 0 || job.count(TaskStatus::Pipelined) > 0
    {
        return false;
    }
    let scheduled = job
        .tasks
        .iter()
        .filter(|&&t| s.task(t).status.is_scheduled())
        .count() as i64;
    scheduled + releasing >= i64::from(job.min_available)
}
