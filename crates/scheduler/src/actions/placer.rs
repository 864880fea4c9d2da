//! Placing one job's tasks on nodes, all of them or a network domain's, in task order, inside
//! a statement (the body of Volcano's `allocateResourcesForTasks`), shared by allocate and its
//! network-topology search.

use std::collections::BTreeSet;

use super::nodes::{NodeFinder, PredicateCache, ResourceCheck, Scratch, select_best_node};
use crate::fit::FitErrors;
use crate::framework::{PriorityQueue, Session, Statement};
use crate::model::{JobId, NodeId, QueueId, SubGroup, TaskId, TaskStatus};

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

/// When a run of placements is done, and whether it goes on after a task finds no node.
#[derive(Clone, Copy)]
pub enum Goal<'a> {
    /// The job is ready.
    Job,
    /// This sub-group of the job is ready (Volcano's `allocateResourcesForTasks` for one
    /// sub-job).
    SubGroup(&'a SubGroup),
}

impl Goal<'_> {
    fn reached(self, ssn: &Session, j: JobId) -> bool {
        match self {
            Goal::Job => ssn.job_ready(j),
            Goal::SubGroup(g) => g.is_ready(&ssn.snap.tasks),
        }
    }

    fn go_on(self, ssn: &Session, j: JobId, failed_roles: &BTreeSet<String>) -> bool {
        match self {
            Goal::Job => need_continue(ssn, j, failed_roles),
            // Volcano: a sub-group that needs every pod stops at the first failure; any other
            // goes on (role minimums are not applied inside sub-groups).
            Goal::SubGroup(g) => {
                let job = ssn.snap.job(j);
                job.min_available as usize != job.tasks.len()
                    && (g.min_available as usize) < g.tasks.len()
            }
        }
    }
}

/// What placing tasks reuses from job to job within one action.
pub struct Placer {
    cache: PredicateCache,
    finder: NodeFinder,
    scratch: Scratch,
}

impl Placer {
    /// Forgets the nodes `j`'s roles failed on: a dry run in one network domain that was
    /// undone must not close nodes to the next.
    pub fn forget_failures(&mut self, j: JobId) {
        self.cache.forget_job(j);
    }

    /// A placer with the allocate action's predicate error cache setting.
    pub fn new(ssn: &Session) -> Self {
        let args = ssn.conf.action_arguments("allocate");
        Placer {
            cache: PredicateCache::new(args.bool_or("predicateErrorCacheEnable", true)),
            finder: NodeFinder::new(),
            scratch: Scratch::default(),
        }
    }

    /// Places `j`'s tasks in task order, on `domain`'s nodes only when one is given, until
    /// `goal` is reached or a failure ends it (a failed task's role stays failed); returns the
    /// statement of the placements, not yet committed.
    #[allow(clippy::too_many_arguments)]
    pub fn place(
        &mut self,
        ssn: &mut Session,
        q: QueueId,
        j: JobId,
        job_tasks: &mut PriorityQueue<TaskId>,
        failed_roles: &mut BTreeSet<String>,
        domain: Option<&[NodeId]>,
        goal: Goal<'_>,
    ) -> Statement {
        let mut stmt = Statement::new();
        while let Some(t) = job_tasks.pop(&mut |a, b| ssn.task_order_less(a, b)) {
            let nodes_total = domain.map_or(ssn.snap.nodes.len(), <[NodeId]>::len);
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
                if goal.go_on(ssn, j, failed_roles) {
                    continue;
                }
                break;
            }
            let mut fe = FitErrors::new(nodes_total);
            let nominated = nominated_node(ssn, t)
                .filter(|n| domain.is_none_or(|d| d.binary_search(n).is_ok()))
                .map(|n| [n]);
            let candidates = match &nominated {
                Some(n) => n,
                None => self.finder.feasible_in(
                    ssn,
                    t,
                    ResourceCheck::FutureIdle,
                    &mut self.cache,
                    &mut fe,
                    domain,
                ),
            };
            let Some(node) = select_best_node(ssn, t, candidates, &mut self.scratch) else {
                ssn.snap.job_mut(j).fit_errors.insert(t, fe);
                failed_roles.insert(role.unwrap_or_default());
                if goal.go_on(ssn, j, failed_roles) {
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
            if goal.reached(ssn, j) {
                break;
            }
        }
        stmt
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
