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

    fn preemptable(&self, s: &Snapshot, p: TaskId, candidates: &[TaskId]) -> Option<Vec<TaskId>> {
        let pt = s.task(p);
        let Some(pj) = pt.job else {
            return Some(Vec::new());
        };
        let victims = candidates
            .iter()
            .copied()
            .filter(|&v| {
                let vt = s.task(v);
                match vt.job {
                    // Within a job the tasks' priorities decide, between jobs the jobs'.
                    Some(vj) if vj == pj => vt.priority < pt.priority,
                    Some(vj) => s.job(vj).priority < s.job(pj).priority,
                    None => false,
                }
            })
            .collect();
        Some(victims)
    }

    fn job_starving(&self, s: &Snapshot, j: JobId) -> Option<bool> {
        let job = s.job(j);
        Some(((job.ready_task_num() + job.waiting_task_num()) as usize) < job.tasks.len())
    }
}
