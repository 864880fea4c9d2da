//! `reclaim`: across queues, a queue below its deserved share takes back resources from
//! reclaimable queues above theirs. As in `preempt`, evictions are committed only when the
//! reclaiming job is then pipelined.

use std::collections::HashMap;

use super::evict::{
    Mode, candidate_nodes, guard, in_victim_order, make_room, preemptor_fits, spare_unneeded,
    victims_could_suffice,
};
use super::{sub_groups, topology};
use crate::framework::{PriorityQueue, Session, Statement};
use crate::model::{DomainId, JobId, QueueId, TaskId, TaskStatus};

/// Runs reclaim.
pub fn execute(ssn: &mut Session) {
    let mut queues = PriorityQueue::new();
    let mut seen: Vec<QueueId> = Vec::new();
    let mut preemptors: HashMap<QueueId, PriorityQueue<JobId>> = HashMap::new();
    let mut tasks: HashMap<JobId, PriorityQueue<TaskId>> = HashMap::new();
    for j in ssn.jobs() {
        if ssn.snap.job(j).is_pending() || ssn.job_valid(j).is_err() {
            continue;
        }
        let q = ssn.snap.job(j).queue;
        if !seen.contains(&q) {
            seen.push(q);
            queues.push(q, &mut |a, b| ssn.queue_order_less(a, b));
        }
        if ssn.job_starving(j) && !sub_groups::evicts_for_none(ssn, j) {
            preemptors
                .entry(q)
                .or_default()
                .push(j, &mut |a, b| ssn.job_order_less(a, b));
            let mut pq = PriorityQueue::new();
            for &t in &ssn.snap.job(j).tasks {
                let task = ssn.snap.task(t);
                if task.status == TaskStatus::Pending && !task.scheduling_gated {
                    pq.push(t, &mut |a, b| ssn.task_order_less(a, b));
                }
            }
            tasks.insert(j, pq);
        }
    }

    while let Some(q) = queues.pop(&mut |a, b| ssn.queue_order_less(a, b)) {
        if ssn.overused(q) {
            continue;
        }
        // All of the queue's starving jobs in turn (Volcano also pushes the queue back after
        // each job, but by the time it comes out again its jobs are all done).
        while let Some(j) = preemptors
            .get_mut(&q)
            .and_then(|pq| pq.pop(&mut |a, b| ssn.job_order_less(a, b)))
        {
            // A gang that must stay inside one network domain tries them one by one.
            for within in topology::eviction_domains(ssn, j) {
                let mut job_tasks = tasks.get(&j).cloned().unwrap_or_default();
                let mut stmt = Statement::new();
                while ssn.job_starving(j) {
                    let Some(t) = job_tasks.pop(&mut |a, b| ssn.task_order_less(a, b)) else {
                        break;
                    };
                    if ssn.snap.task(t).preemption_never
                        || !ssn.preemptive(q, t)
                        || ssn.pre_predicate(t).is_err()
                    {
                        continue;
                    }
                    reclaim_for_task(ssn, &mut stmt, t, q, within);
                }
                if ssn.job_pipelined(j) {
                    spare_unneeded(ssn, Mode::Reclaim, &mut stmt);
                    ssn.commit(stmt);
                    tasks.insert(j, job_tasks);
                    break;
                }
                ssn.discard(stmt);
            }
        }
    }
}

/// Whether running task `v` of another, reclaimable queue may be reclaimed for a task of `q`.
fn reclaimee(ssn: &Session, q: QueueId, v: TaskId) -> bool {
    let s = &ssn.snap;
    let task = s.task(v);
    if task.status != TaskStatus::Running || !task.preemptable {
        return false;
    }
    let Some(vj) = task.job else { return false };
    let vq = s.job(vj).queue;
    vq != q && s.queue(vq).reclaimable
}

/// Tries the candidate nodes in name order for a place for `t` made by reclaiming; merges the
/// first success into `stmt`. Volcano stops reclaiming once the request fits the node's future
/// idle; volcano-rs also wants every predicate to pass, so nothing is evicted for a task that
/// still cannot go there.
fn reclaim_for_task(
    ssn: &mut Session,
    stmt: &mut Statement,
    t: TaskId,
    q: QueueId,
    within: Option<DomainId>,
) {
    let mut nodes = candidate_nodes(ssn, t, within);
    nodes.sort_by(|a, b| ssn.snap.node(*a).name.cmp(&ssn.snap.node(*b).name));
    for n in nodes {
        let reclaimees: Vec<TaskId> = ssn
            .snap
            .node(n)
            .tasks
            .iter()
            .copied()
            .filter(|&v| reclaimee(ssn, q, v))
            .collect();
        if reclaimees.is_empty() {
            continue;
        }
        let reclaimees = in_victim_order(ssn, t, reclaimees);
        let victims = ssn.reclaimable(t, &reclaimees);
        let victims = guard(ssn, Mode::Reclaim, t, victims);
        if !victims_could_suffice(ssn, t, n, victims.iter().flatten().copied()) {
            continue;
        }
        if let Some(node_stmt) = make_room(ssn, Mode::Reclaim, t, n, victims, &|ssn: &Session| {
            preemptor_fits(ssn, Mode::Reclaim, t, n)
        }) {
            stmt.merge(node_stmt);
            return;
        }
    }
}
