//! `enqueue`: admission. Pending PodGroups become Inqueue, queue by queue, job by job, when the
//! plugins' votes allow; a rejected job does not block the jobs behind it.

use super::job_queues::JobQueues;
use crate::framework::Session;
use crate::framework::conditions::NOT_ENQUEUED;
use crate::model::PgPhase;

/// Runs enqueue.
pub fn execute(ssn: &mut Session) {
    let mut order = JobQueues::new();
    for j in ssn.jobs() {
        order.add_queue(ssn, ssn.snap.job(j).queue);
        if ssn.snap.job(j).is_pending() {
            order.push_job(ssn, j);
        }
    }
    while let Some(q) = order.pop_queue(ssn) {
        let Some(j) = order.pop_job(ssn, q) else {
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
        order.push_queue(ssn, q);
    }
}
