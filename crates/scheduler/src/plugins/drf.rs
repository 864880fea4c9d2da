//! `drf`: dominant resource fairness between jobs: the job with the smallest dominant share
//! goes first.

use std::cmp::Ordering;

use crate::framework::Plugin;
use crate::model::{JobId, Snapshot, TaskId};
use crate::resource::{Resource, share};

/// The drf plugin.
pub struct Drf {
    total: Resource,
    allocated: Vec<Resource>,
    shares: Vec<f64>,
}

impl Drf {
    /// Computes every job's share at session open.
    pub fn new(s: &Snapshot) -> Self {
        let allocated: Vec<Resource> = s.jobs.iter().map(|j| j.allocated.clone()).collect();
        let mut drf = Drf {
            total: s.total_resource.clone(),
            shares: vec![0.0; allocated.len()],
            allocated,
        };
        for i in 0..drf.allocated.len() {
            drf.update_share(i);
        }
        drf
    }

    fn update_share(&mut self, i: usize) {
        let a = &self.allocated[i];
        // Volcano's ResourceNames(): the dimensions the cluster actually has.
        let s = self
            .total
            .nonzero_dims()
            .map(|d| share(a.get(d), self.total.get(d)))
            .fold(0.0, f64::max);
        self.shares[i] = s;
    }

    /// The dominant share of job `j`.
    pub fn share_of(&self, j: JobId) -> f64 {
        self.shares.get(j.idx()).copied().unwrap_or(0.0)
    }
}

impl Plugin for Drf {
    fn name(&self) -> &'static str {
        "drf"
    }

    fn job_order(&self, _s: &Snapshot, l: JobId, r: JobId) -> Option<Ordering> {
        let (a, b) = (self.share_of(l), self.share_of(r));
        Some(if a == b {
            Ordering::Equal
        } else if a < b {
            Ordering::Less
        } else {
            Ordering::Greater
        })
    }

    fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        if let Some(j) = s.task(t).job {
            self.allocated[j.idx()].add(&s.task(t).resreq);
            self.update_share(j.idx());
        }
    }

    fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        if let Some(j) = s.task(t).job {
            self.allocated[j.idx()].sub_saturating(&s.task(t).resreq);
            self.update_share(j.idx());
        }
    }
}
