//! What a queue holds and asks for at session open, shared by the queue-share plugins.

use crate::model::{JobId, PgPhase, QueueId, Snapshot, TaskStatus};
use crate::resource::Resource;

/// How an Inqueue job's reservation is counted.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum InqueueRule {
    /// The whole `minResources` (overcommit).
    WholeMinimum,
    /// `minResources` less what the job already holds (proportion: what is allocated is
    /// already in the queue's `allocated`).
    UnusedMinimum,
}

/// Resources a job has reserved through admission but not yet used: an Inqueue job's
/// `minResources` (whole or unused part, per `rule`); a Running job with all its gang
/// allocated, the part of `minResources` it does not use yet.
pub fn job_inqueue(s: &Snapshot, j: JobId, rule: InqueueRule) -> Option<Resource> {
    let job = s.job(j);
    let min = job.min_resources.as_ref()?;
    match job.phase {
        PgPhase::Inqueue if rule == InqueueRule::WholeMinimum => Some(min.clone()),
        PgPhase::Inqueue => Some(min.exceeded_part(&job.allocated)),
        PgPhase::Running => {
            let allocated_tasks = job
                .tasks
                .iter()
                .filter(|&&t| s.task(t).status.is_allocated())
                .count();
            (allocated_tasks as i64 >= i64::from(job.min_available))
                .then(|| min.exceeded_part(&job.allocated))
        }
        _ => None,
    }
}

/// A queue's sums over its jobs.
#[derive(Debug, Clone)]
pub struct QueueSums {
    /// Σ request of allocated-status tasks.
    pub allocated: Resource,
    /// `allocated` + Σ request of pending tasks.
    pub request: Resource,
    /// Reserved by admitted jobs and not yet used.
    pub inqueue: Resource,
    /// Σ of what jobs hold beyond their `minResources`.
    pub elastic: Resource,
}

/// Sums per queue; `None` for queues without jobs (Volcano's plugins ignore those).
pub fn queue_sums(s: &Snapshot) -> Vec<Option<QueueSums>> {
    let mut sums: Vec<Option<QueueSums>> = vec![None; s.queues.len()];
    for j in s.job_ids() {
        let job = s.job(j);
        let entry = sums[job.queue.idx()].get_or_insert_with(|| QueueSums {
            allocated: s.dims.zero(),
            request: s.dims.zero(),
            inqueue: s.dims.zero(),
            elastic: s.dims.zero(),
        });
        for &t in &job.tasks {
            let task = s.task(t);
            if task.status.is_allocated() {
                entry.allocated.add(&task.resreq);
                entry.request.add(&task.resreq);
            } else if task.status == TaskStatus::Pending {
                entry.request.add(&task.resreq);
            }
        }
        if let Some(r) = job_inqueue(s, j, InqueueRule::UnusedMinimum) {
            entry.inqueue.add(&r);
        }
        let min = job.min_resources.clone().unwrap_or_else(|| s.dims.zero());
        entry.elastic.add(&job.allocated.exceeded_part(&min));
    }
    sums
}

/// The queue ids that have jobs.
pub fn queues_with_jobs(sums: &[Option<QueueSums>]) -> impl Iterator<Item = QueueId> + '_ {
    sums.iter()
        .enumerate()
        .filter(|(_, s)| s.is_some())
        .map(|(i, _)| QueueId(i as u32))
}
