//! `enqueue`: admission. Pending PodGroups become Inqueue, queue by queue, job by job, when the
//! plugins' votes allow; a rejected job does not block the jobs behind it.

use std::collections::HashMap;

use crate::framework::{PriorityQueue, Session};
use crate::model::{JobId, PgPhase, QueueId};

/// Reason recorded for a job that enqueue did not admit.
pub const NOT_ENQUEUED: &str = "NotEnqueued";

/// Runs enqueue.
pub fn execute(ssn: &mut Session) {
    let mut queues: PriorityQueue<QueueId> = PriorityQueue::new();
    let mut jobs: HashMap<QueueId, PriorityQueue<JobId>> = HashMap::new();
    for j in ssn.jobs() {
        let q = ssn.snap.job(j).queue;
        if let std::collections::hash_map::Entry::Vacant(e) = jobs.entry(q) {
            e.insert(PriorityQueue::new());
            queues.push(q, &mut |a, b| ssn.queue_order_less(a, b));
        }
        if ssn.snap.job(j).is_pending()
            && let Some(pq) = jobs.get_mut(&q)
        {
            pq.push(j, &mut |a, b| ssn.job_order_less(a, b));
        }
    }
    while let Some(q) = queues.pop(&mut |a, b| ssn.queue_order_less(a, b)) {
        let Some(j) = jobs
            .get_mut(&q)
            .and_then(|pq| pq.pop(&mut |a, b| ssn.job_order_less(a, b)))
        else {
            continue;
        };
        let verdict = if ssn.snap.job(j).min_resources.is_none() {
            Ok(())
        } else {
            ssn.job_enqueueable(j)
        };
        match verdict {
            Ok(()) => {
                ssn.job_enqueued(j);
                let job = ssn.snap.job_mut(j);
                job.phase = PgPhase::Inqueue;
                job.job_fit_error = None;
            }
            Err(reason) => {
                ssn.snap.job_mut(j).job_fit_error = Some((
                    NOT_ENQUEUED.to_string(),
                    format!("not admitted by enqueue: {reason}"),
                ));
            }
        }
        queues.push(q, &mut |a, b| ssn.queue_order_less(a, b));
    }
}
