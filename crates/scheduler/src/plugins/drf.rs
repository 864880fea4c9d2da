//! `drf`: dominant resource fairness between jobs: the job with the smallest dominant share
//! goes first.

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::framework::Plugin;
use crate::model::{JobId, Snapshot, TaskId};
use crate::resource::{Resource, share};

/// Shares closer than this count as equal (Volcano's `shareDelta`).
const SHARE_DELTA: f64 = 0.000_001;

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
        self.shares[i] = self.dominant_share(&self.allocated[i]);
    }

    /// The largest share of any resource the cluster has (Volcano's `ResourceNames()`).
    fn dominant_share(&self, a: &Resource) -> f64 {
        self.total
            .nonzero_dims()
            .map(|d| share(a.get(d), self.total.get(d)))
            .fold(0.0, f64::max)
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

    fn job_share(&self, _s: &Snapshot, j: JobId) -> Option<f64> {
        Some(self.share_of(j))
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

    fn preemptable(&self, s: &Snapshot, p: TaskId, candidates: &[TaskId]) -> Option<Vec<TaskId>> {
        let Some(pj) = s.task(p).job else {
            return Some(Vec::new());
        };
        let mut mine = self.allocated.get(pj.idx())?.clone();
        mine.add(&s.task(p).resreq);
        let ls = self.dominant_share(&mine);
        // Victims are taken while their job, without them, would still hold at least the
        // preemptor's share after it is placed.
        let mut allocations: HashMap<JobId, Resource> = HashMap::new();
        let mut victims = Vec::new();
        for &v in candidates {
            let Some(vj) = s.task(v).job else { continue };
            let Some(theirs) = self.allocated.get(vj.idx()) else {
                continue;
            };
            let remaining = allocations.entry(vj).or_insert_with(|| theirs.clone());
            remaining.sub_saturating(&s.task(v).resreq);
            let rs = self.dominant_share(remaining);
            if ls < rs || (ls - rs).abs() <= SHARE_DELTA {
                victims.push(v);
            }
        }
        Some(victims)
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
