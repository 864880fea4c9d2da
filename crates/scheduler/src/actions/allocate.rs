//! `allocate`: places pending tasks queue by queue and job by job, through a statement per job
//! so that a gang that cannot reach its minimum is undone whole. One task's failure never ends
//! the action: it is recorded as that task's reason and the next task or job is tried.

use std::collections::{BTreeSet, HashMap};

use super::job_queues::JobQueues;
use super::placer::{Goal, Placer};
use super::{sub_groups, topology};
use crate::framework::{PriorityQueue, Session};
use crate::model::{DomainLedger, JobId, NodeId, PgPhase, TaskId, TaskStatus};

/// Reason recorded for a job whose queue took nothing more this session.
pub const QUEUE_OVERUSED: &str = "QueueOverused";

/// Runs allocate.
pub fn execute(ssn: &mut Session) {
    let enqueue_enabled = ssn.conf.has_action("enqueue");
    let mut placer = Placer::new(ssn);
    // Summed only once a job with a network topology needs it.
    let mut ledger: Option<DomainLedger> = None;

    let mut order = JobQueues::new();
    let mut tasks: HashMap<JobId, PriorityQueue<TaskId>> = HashMap::new();
    let mut failed_roles_by_job: HashMap<JobId, BTreeSet<String>> = HashMap::new();
    for j in ssn.jobs() {
        if ssn.snap.job(j).is_pending() {
            if enqueue_enabled {
                continue;
            }
            ssn.snap.job_mut(j).phase = PgPhase::Inqueue;
        }
        if let Err((reason, message)) = ssn.job_valid(j) {
            ssn.snap.job_mut(j).job_fit_error = Some((reason, message));
            continue;
        }
        let mut pq = PriorityQueue::new();
        for &t in &ssn.snap.job(j).tasks {
            let task = ssn.snap.task(t);
            if task.status == TaskStatus::Pending && !task.best_effort && !task.scheduling_gated {
                pq.push(t, &mut |a, b| ssn.task_order_less(a, b));
            }
        }
        if pq.is_empty() {
            continue;
        }
        tasks.insert(j, pq);
        order.push_job(ssn, j);
    }

    while let Some(q) = order.pop_queue(ssn) {
        if ssn.overused(q) {
            // Every job still waiting in this queue learns why it got nothing.
            let name = ssn.snap.queue(q).name.clone();
            while let Some(j) = order.pop_job(ssn, q) {
                let job = ssn.snap.job_mut(j);
                if job.job_fit_error.is_none() && job.fit_errors.is_empty() {
                    job.job_fit_error = Some((
                        QUEUE_OVERUSED.to_string(),
                        format!(
                            "queue {name} is overused: it already has its deserved share on every resource"
                        ),
                    ));
                }
            }
            continue;
        }
        let Some(j) = order.pop_job(ssn, q) else {
            continue;
        };
        let Some(mut job_tasks) = tasks.remove(&j) else {
            continue;
        };
        // Roles that failed predicates stay failed for the whole action, as Volcano derives
        // them from the job's recorded fit errors.
        let mut failed_roles = failed_roles_by_job.remove(&j).unwrap_or_default();
        let stmt = match topology::constraint(ssn, j) {
            c if sub_groups::applies(ssn, j) => {
                sub_groups::place(ssn, &mut placer, &mut ledger, q, j, c, &mut job_tasks)
            }
            None => placer.place(
                ssn,
                q,
                j,
                &mut job_tasks,
                &mut failed_roles,
                None,
                Goal::Job,
            ),
            Some(c) => {
                let ledger = ledger.get_or_insert_with(|| DomainLedger::new(&ssn.snap));
                topology::place(
                    ssn,
                    &mut placer,
                    ledger,
                    q,
                    j,
                    c,
                    &mut job_tasks,
                    &mut failed_roles,
                )
            }
        };
        // Read before the statement is consumed; the domains see the outcome after it.
        let touched: Vec<NodeId> = match ledger {
            Some(_) => stmt.placed().map(|(_, n)| n).collect(),
            None => Vec::new(),
        };
        failed_roles_by_job.insert(j, failed_roles);
        if ssn.job_ready(j) {
            ssn.commit(stmt);
            if !job_tasks.is_empty() {
                tasks.insert(j, job_tasks);
                order.push_job(ssn, j);
            }
        } else if ssn.job_pipelined(j) {
            // Kept uncommitted: the placements reserve their nodes for the rest of the session.
            drop(stmt);
        } else {
            ssn.discard(stmt);
        }
        if let Some(ledger) = ledger.as_mut() {
            for n in touched {
                ledger.refresh(&ssn.snap, n);
            }
        }
        order.push_queue(ssn, q);
    }
}
