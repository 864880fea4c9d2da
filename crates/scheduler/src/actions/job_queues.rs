//! The two-level order every action walks: queues by QueueOrderFn, and within each queue its
//! jobs by JobOrderFn, both re-evaluated on every push and pop as Volcano's heaps are.

use std::collections::HashMap;

use crate::framework::{PriorityQueue, Session};
use crate::model::{JobId, QueueId};

/// Queues and, per queue, jobs, in session order.
pub struct JobQueues {
    queues: PriorityQueue<QueueId>,
    jobs: HashMap<QueueId, PriorityQueue<JobId>>,
}

impl Default for JobQueues {
    fn default() -> Self {
        JobQueues::new()
    }
}

impl JobQueues {
    /// Nothing queued.
    pub fn new() -> Self {
        JobQueues {
            queues: PriorityQueue::new(),
            jobs: HashMap::new(),
        }
    }

    /// Makes `q` known (once), even before it has jobs.
    pub fn add_queue(&mut self, ssn: &Session, q: QueueId) {
        if let std::collections::hash_map::Entry::Vacant(e) = self.jobs.entry(q) {
            e.insert(PriorityQueue::new());
            self.queues.push(q, &mut |a, b| ssn.queue_order_less(a, b));
        }
    }

    /// Queues job `j` under its queue, adding the queue if it is new.
    pub fn push_job(&mut self, ssn: &Session, j: JobId) {
        let q = ssn.snap.job(j).queue;
        self.add_queue(ssn, q);
        if let Some(pq) = self.jobs.get_mut(&q) {
            pq.push(j, &mut |a, b| ssn.job_order_less(a, b));
        }
    }

    /// The best queue, removed until pushed back.
    pub fn pop_queue(&mut self, ssn: &Session) -> Option<QueueId> {
        self.queues.pop(&mut |a, b| ssn.queue_order_less(a, b))
    }

    /// Puts a popped queue back (its order is recomputed from the current shares).
    pub fn push_queue(&mut self, ssn: &Session, q: QueueId) {
        self.queues.push(q, &mut |a, b| ssn.queue_order_less(a, b));
    }

    /// The best job of queue `q`, removed.
    pub fn pop_job(&mut self, ssn: &Session, q: QueueId) -> Option<JobId> {
        self.jobs
            .get_mut(&q)?
            .pop(&mut |a, b| ssn.job_order_less(a, b))
    }
}
