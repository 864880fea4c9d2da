//! `priority`: higher-priority tasks and jobs first; a job starves until all its tasks are
//! placed.

use std::cmp::Ordering;

use crate::framework::Plugin;
use crate::model::{JobId, Snapshot, TaskId};

/// The priority plugin.
pub struct Priority;

impl Plugin for Priority {
    fn name(&self) -> &'static str {
        "priority"
    }

    fn task_order(&self, s: &Snapshot, l: TaskId, r: TaskId) -> Option<Ordering> {
        Some(s.task(r).priority.cmp(&s.task(l).priority))
    }

    fn job_order(&self, s: &Snapshot, l: JobId, r: JobId) -> Option<Ordering> {
        Some(s.job(r).priority.cmp(&s.job(l).priority))
    }

    fn job_starving(&self, s: &Snapshot, j: JobId) -> Option<bool> {
        let job = s.job(j);
        Some(((job.ready_task_num() + job.waiting_task_num()) as usize) < job.tasks.len())
    }
}
