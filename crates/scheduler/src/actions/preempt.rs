//! `preempt`: within a queue, a starving job takes resources from lower-priority jobs; within a
//! job, higher-priority tasks from lower-priority ones. Evictions and the preemptor's pipelined
//! placement go through a statement that is committed only when the preemptor's job is then
//! pipelined, so no pod is evicted for a job that still cannot start.

use std::collections::HashMap;

use super::evict::{
    Mode, candidate_nodes, guard, in_victim_order, make_room, preemptor_fits, spare_unneeded,
    victims_could_suffice,
};
use super::{sub_groups, topology};
use crate::framework::{PriorityQueue, Session, Statement};
use crate::model::{DomainId, JobId, NodeId, QueueId, TaskId, TaskStatus};

/// Which running tasks a preemptor may consider.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Tasks of other jobs in the preemptor's queue.
    OtherJobsInQueue,
    /// Other tasks of the preemptor's own job.
    OwnJob,
}

/// Runs preempt.
pub fn execute(ssn: &mut Session) {
    let mut preemptors: HashMap<QueueId, PriorityQueue<JobId>> = HashMap::new();
    let mut tasks: HashMap<JobId, PriorityQueue<TaskId>> = HashMap::new();
    let mut under_request: HashMap<QueueId, Vec<JobId>> = HashMap::new();
    let mut queues = PriorityQueue::new();
    for j in ssn.jobs() {
        if ssn.snap.job(j).is_pending()
            || ssn.job_valid(j).is_err()
            || !ssn.job_starving(j)
            || sub_groups::evicts_for_none(ssn, j)
        {
            continue;
        }
        let q = ssn.snap.job(j).queue;
        if !preemptors.contains_key(&q) {
            queues.push(q, &mut |a, b| ssn.queue_order_less(a, b));
        }
        preemptors
            .entry(q)
            .or_default()
            .push(j, &mut |a, b| ssn.job_order_less(a, b));
        under_request.entry(q).or_default().push(j);
        tasks.insert(j, pending_tasks(ssn, j));
    }

    while let Some(q) = queues.pop(&mut |a, b| ssn.queue_order_less(a, b)) {
        // Between jobs of the queue.
        while let Some(j) = preemptors
            .get_mut(&q)
            .and_then(|pq| pq.pop(&mut |a, b| ssn.job_order_less(a, b)))
        {
            // A gang that must stay inside one network domain tries them one by one.
            for within in topology::eviction_domains(ssn, j) {
                let mut job_tasks = tasks.get(&j).cloned().unwrap_or_default();
                let mut stmt = Statement::new();
                while ssn.job_starving(j) {
                    let Some(p) = job_tasks.pop(&mut |a, b| ssn.task_order_less(a, b)) else {
                        break;
                    };
                    preempt(ssn, &mut stmt, p, Scope::OtherJobsInQueue, within);
                }
                if ssn.job_pipelined(j) {
                    spare_unneeded(ssn, Mode::Preempt, &mut stmt);
                    ssn.commit(stmt);
                    tasks.insert(j, job_tasks);
                    break;
                }
                ssn.discard(stmt);
            }
        }
        // Within each starving job of the queue.
        for j in under_request.get(&q).cloned().unwrap_or_default() {
            let mut own = pending_tasks(ssn, j);
            while let Some(p) = own.pop(&mut |a, b| ssn.task_order_less(a, b)) {
                let mut stmt = Statement::new();
                // Volcano commits whenever the task was placed; a swap inside a gang that is
                // still short of its minimum would then evict for nothing.
                if !preempt(ssn, &mut stmt, p, Scope::OwnJob, None) || !ssn.job_pipelined(j) {
                    ssn.discard(stmt);
                    break;
                }
                ssn.commit(stmt);
            }
        }
    }
}

/// The job's pending tasks in task order.
fn pending_tasks(ssn: &Session, j: JobId) -> PriorityQueue<TaskId> {
    let mut pq = PriorityQueue::new();
    for &t in &ssn.snap.job(j).tasks {
        let task = ssn.snap.task(t);
        if task.status == TaskStatus::Pending && !task.scheduling_gated {
            pq.push(t, &mut |a, b| ssn.task_order_less(a, b));
        }
    }
    pq
}

/// Whether `p` may preempt at all: not with `preemptionPolicy: Never`, and not when its
/// nominated node already takes it (or is gone).
fn eligible(ssn: &Session, p: TaskId) -> bool {
    let task = ssn.snap.task(p);
    if task.preemption_never {
        return false;
    }
    let Some(name) = &task.nominated_node else {
        return true;
    };
    let Some(&n) = ssn.snap.node_index.get(name) else {
        return false;
    };
    match ssn.predicate(p, n) {
        Ok(()) => false,
        Err(e) if e.unresolvable => true,
        Err(_) => {
            // A lower-priority pod already terminating there will make the room.
            !ssn.snap.node(n).tasks.iter().any(|&o| {
                let other = ssn.snap.task(o);
                other.status == TaskStatus::Releasing && other.priority < task.priority
            })
        }
    }
}

/// Whether running task `v` is a candidate victim for `p` in `scope`.
fn candidate(ssn: &Session, p: TaskId, v: TaskId, scope: Scope) -> bool {
    let s = &ssn.snap;
    let (pt, vt) = (s.task(p), s.task(v));
    if !vt.status.is_preemptable() || !vt.preemptable || (pt.best_effort && !vt.best_effort) {
        return false;
    }
    let (Some(pj), Some(vj)) = (pt.job, vt.job) else {
        return false;
    };
    match scope {
        Scope::OtherJobsInQueue => pj != vj && s.job(pj).queue == s.job(vj).queue,
        Scope::OwnJob => pj == vj,
    }
}

/// Tries every candidate node, best score first, for a place for `p` made by evictions;
/// merges the first success into `stmt`.
fn preempt(
    ssn: &mut Session,
    stmt: &mut Statement,
    p: TaskId,
    scope: Scope,
    within: Option<DomainId>,
) -> bool {
    if !eligible(ssn, p) || ssn.pre_predicate(p).is_err() {
        return false;
    }
    if ssn.snap.task(p).job.is_none() {
        return false;
    }
    for n in nodes_by_score(ssn, p, within) {
        let candidates: Vec<TaskId> = ssn
            .snap
            .node(n)
            .tasks
            .iter()
            .copied()
            .filter(|&v| candidate(ssn, p, v, scope))
            .collect();
        let candidates = in_victim_order(ssn, p, candidates);
        let victims = ssn.preemptable(p, &candidates);
        let victims = guard(ssn, Mode::Preempt, p, victims);
        if !victims_could_suffice(ssn, p, n, victims.iter().flatten().copied()) {
            continue;
        }
        let fits = move |ssn: &Session| preemptor_fits(ssn, Mode::Preempt, p, n);
        if let Some(node_stmt) = make_room(ssn, Mode::Preempt, p, n, victims, &fits) {
            stmt.merge(node_stmt);
            return true;
        }
    }
    false
}

/// Candidate nodes by descending score; equal scores by node name.
fn nodes_by_score(ssn: &Session, p: TaskId, within: Option<DomainId>) -> Vec<NodeId> {
    let mut nodes = candidate_nodes(ssn, p, within);
    let mut scores = Vec::new();
    if ssn.has_node_order() {
        ssn.score_nodes(p, &nodes, &mut scores);
    } else {
        scores.resize(nodes.len(), 0.0);
    }
    let mut scored: Vec<(f64, NodeId)> = scores.into_iter().zip(nodes.drain(..)).collect();
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| ssn.snap.node(a.1).name.cmp(&ssn.snap.node(b.1).name))
    });
    scored.into_iter().map(|(_, n)| n).collect()
}
