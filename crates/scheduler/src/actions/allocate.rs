//! `allocate`: places pending tasks queue by queue and job by job, through a statement per job
//! so that a gang that cannot reach its minimum is undone whole. One task's failure never ends
//! the action: it is recorded as that task's reason and the next task or job is tried.

use std::collections::{BTreeSet, HashMap};

use super::job_queues::JobQueues;
use super::nodes::{NodeFinder, PredicateCache, ResourceCheck, Scratch, select_best_node};
use crate::fit::FitErrors;
use crate::framework::{PriorityQueue, Session, Statement};
use crate::model::{JobId, PgPhase, TaskId, TaskStatus};

/// Reason recorded for a job whose queue took nothing more this session.
pub const QUEUE_OVERUSED: &str = "QueueOverused";

/// Whether allocation should go on with the job's other tasks after a failure (Volcano's
/// `NeedContinueAllocating`): not when every task is needed, nor when a failed role can no
/// longer reach its minimum.
fn need_continue(ssn: &Session, j: JobId, failed_roles: &BTreeSet<String>) -> bool {
    let s = &ssn.snap;
    let job = s.job(j);
    if job.min_available as usize == job.tasks.len() {
        return false;
    }
    let sum_min: i64 = job.min_task_member.values().map(|v| i64::from(*v)).sum();
    let role_of = |t: TaskId| s.task(t).role.clone().unwrap_or_default();
    if i64::from(job.min_available) < sum_min {
        let pending_ok = job
            .tasks
            .iter()
            .filter(|&&t| {
                s.task(t).status == TaskStatus::Pending && !failed_roles.contains(&role_of(t))
            })
            .count() as i64;
        return i64::from(job.ready_task_num()) + pending_ok >= i64::from(job.min_available);
    }
    for role in failed_roles {
        if let Some(min) = job.min_task_member.get(role) {
            // Volcano's getJobAllocatedRoles: allocated, succeeded, and pending BestEffort tasks.
            let allocated = job
                .tasks
                .iter()
                .filter(|&&t| {
                    let task = s.task(t);
                    let occupied = task.status.is_allocated()
                        || task.status == TaskStatus::Succeeded
                        || (task.status == TaskStatus::Pending && task.best_effort);
                    occupied && role_of(t) == *role
                })
                .count() as i64;
            if allocated < i64::from(*min) {
                return false;
            }
        }
    }
    true
}

/// Runs allocate.
pub fn execute(ssn: &mut Session) {
    let enqueue_enabled = ssn.conf.has_action("enqueue");
    let args = ssn.conf.action_arguments("allocate");
    let mut cache = PredicateCache::new(args.bool_or("predicateErrorCacheEnable", true));
    let mut finder = NodeFinder::new();
    let mut scratch = Scratch::default();

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
        let mut stmt = Statement::new();
        // Roles that failed predicates stay failed for the whole action, as Volcano derives
        // them from the job's recorded fit errors.
        let mut failed_roles = failed_roles_by_job.remove(&j).unwrap_or_default();
        while let Some(t) = job_tasks.pop(&mut |a, b| ssn.task_order_less(a, b)) {
            let nodes_total = ssn.snap.nodes.len();
            if let Err(reason) = ssn.allocatable(q, t) {
                ssn.snap
                    .job_mut(j)
                    .fit_errors
                    .insert(t, FitErrors::task_error(nodes_total, reason));
                continue;
            }
            let role = ssn.snap.task(t).role.clone();
            if let Some(r) = role.as_ref().filter(|r| failed_roles.contains(*r)) {
                // Same role, same template: the earlier failure stands for this task too.
                let copy = ssn
                    .snap
                    .job(j)
                    .fit_errors
                    .iter()
                    .find(|(other, _)| ssn.snap.task(**other).role.as_ref() == Some(r))
                    .map(|(_, fe)| fe.clone());
                if let Some(fe) = copy {
                    ssn.snap.job_mut(j).fit_errors.insert(t, fe);
                }
                continue;
            }
            if let Err(e) = ssn.pre_predicate(t) {
                ssn.snap
                    .job_mut(j)
                    .fit_errors
                    .insert(t, FitErrors::task_error(nodes_total, e.reason));
                failed_roles.insert(role.clone().unwrap_or_default());
                if need_continue(ssn, j, &failed_roles) {
                    continue;
                }
                break;
            }
            let mut fe = FitErrors::new(nodes_total);
            let nominated = nominated_node(ssn, t).map(|n| [n]);
            let candidates = match &nominated {
                Some(n) => n,
                None => finder.feasible(ssn, t, ResourceCheck::FutureIdle, &mut cache, &mut fe),
            };
            let Some(node) = select_best_node(ssn, t, candidates, &mut scratch) else {
                ssn.snap.job_mut(j).fit_errors.insert(t, fe);
                failed_roles.insert(role.unwrap_or_default());
                if need_continue(ssn, j, &failed_roles) {
                    continue;
                }
                break;
            };
            let task = ssn.snap.task(t);
            let n = ssn.snap.node(node);
            if task.resreq.fits_in(&n.idle) {
                ssn.stmt_allocate(&mut stmt, t, node);
            } else {
                ssn.stmt_pipeline(&mut stmt, t, node);
            }
            // Read first: a write would copy the job out of the shared snapshot.
            if ssn.snap.job(j).fit_errors.contains_key(&t) {
                ssn.snap.job_mut(j).fit_errors.remove(&t);
            }
            if ssn.job_ready(j) {
                break;
            }
        }
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
        order.push_queue(ssn, q);
    }
}

/// The pod's nominated node, when it still takes the task.
fn nominated_node(ssn: &Session, t: TaskId) -> Option<crate::model::NodeId> {
    let s = &ssn.snap;
    let name = s.task(t).nominated_node.as_ref()?;
    let n = *s.node_index.get(name)?;
    let node = s.node(n);
    (!node.out_of_sync
        && s.task(t).resreq.fits_in(&node.future_idle)
        && ssn.predicate(t, n).is_ok())
    .then_some(n)
}
