//! `backfill`: places BestEffort tasks (no request but the pod itself), which allocate skips.
//! A task that fits nowhere records its reason and the loop goes on (Volcano's `break` here
//! stopped every later task: issue #4028).

use std::collections::HashMap;

use super::job_queues::JobQueues;
use super::nodes::{NodeFinder, PredicateCache, ResourceCheck, Scratch, select_best_node};
use super::topology;
use crate::fit::FitErrors;
use crate::framework::{PriorityQueue, Session};
use crate::model::{JobId, NodeId, TaskId, TaskStatus};

/// Runs backfill.
pub fn execute(ssn: &mut Session) {
    let mut order = JobQueues::new();
    let mut tasks: HashMap<JobId, PriorityQueue<TaskId>> = HashMap::new();
    for j in ssn.jobs() {
        if ssn.snap.job(j).is_pending() || ssn.job_valid(j).is_err() {
            continue;
        }
        let best_effort: Vec<TaskId> = ssn
            .snap
            .job(j)
            .tasks
            .iter()
            .copied()
            .filter(|&t| {
                let task = ssn.snap.task(t);
                task.best_effort
                    && !task.scheduling_gated
                    && matches!(task.status, TaskStatus::Pending | TaskStatus::Pipelined)
            })
            .collect();
        if best_effort.is_empty() {
            continue;
        }
        let mut pq = PriorityQueue::new();
        for t in best_effort {
            if ssn.snap.task(t).status == TaskStatus::Pipelined {
                ssn.snap.unplace(t, TaskStatus::Pending);
                ssn.fire_deallocate(t);
            }
            pq.push(t, &mut |a, b| ssn.task_order_less(a, b));
        }
        tasks.insert(j, pq);
        order.push_job(ssn, j);
    }
    let mut flat = Vec::new();
    while let Some(q) = order.pop_queue(ssn) {
        while let Some(j) = order.pop_job(ssn, q) {
            if let Some(tq) = tasks.get_mut(&j) {
                while let Some(t) = tq.pop(&mut |a, b| ssn.task_order_less(a, b)) {
                    flat.push((j, t));
                }
            }
        }
    }

    let mut cache = PredicateCache::new(false);
    let mut finder = NodeFinder::new();
    let mut scratch = Scratch::default();
    for (j, t) in flat {
        let total = ssn.snap.nodes.len();
        if let Err(e) = ssn.pre_predicate(t) {
            ssn.snap
                .job_mut(j)
                .fit_errors
                .insert(t, FitErrors::task_error(total, e.reason));
            continue;
        }
        let mut fe = FitErrors::new(total);
        let candidates = finder.feasible(ssn, t, ResourceCheck::PodSlot, &mut cache, &mut fe);
        // A gang with a hard network topology keeps its pods that ask for nothing inside its
        // domain too.
        let scope = topology::eviction_scope(ssn, t, None);
        let in_scope: Vec<NodeId>;
        let candidates = match &scope {
            None => candidates,
            Some(s) => {
                in_scope = candidates
                    .iter()
                    .copied()
                    .filter(|&n| s.allows(&ssn.snap.topology, n))
                    .collect();
                for _ in in_scope.len()..candidates.len() {
                    fe.add("node(s) outside the gang's network topology domain");
                }
                &in_scope
            }
        };
        match select_best_node(ssn, t, candidates, &mut scratch) {
            Some(node) => {
                ssn.snap.job_mut(j).fit_errors.remove(&t);
                ssn.allocate(t, node);
            }
            None => {
                ssn.snap.job_mut(j).fit_errors.insert(t, fe);
            }
        }
    }
}
