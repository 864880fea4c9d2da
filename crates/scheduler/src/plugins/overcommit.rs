//! `overcommit`: admits a job only while the minimum resources of everything admitted fit in
//! the cluster's idle resources scaled by `overcommit-factor` (default 1.2).

use super::queue_accounting::{InqueueRule, job_inqueue};
use crate::conf::Arguments;
use crate::framework::{Plugin, Verdict};
use crate::model::{JobId, Snapshot};
use crate::resource::Resource;

const DEFAULT_FACTOR: f64 = 1.2;

/// The overcommit plugin.
pub struct Overcommit {
    idle: Resource,
    inqueue: Resource,
    factor: f64,
}

impl Overcommit {
    /// Computes the cluster's overcommitted idle resources and what admitted jobs reserve.
    pub fn new(args: &Arguments, s: &Snapshot) -> Self {
        let mut factor = args.f64_or("overcommit-factor", DEFAULT_FACTOR);
        if factor.is_nan() || factor < 1.0 || !factor.is_finite() {
            factor = DEFAULT_FACTOR;
        }
        let mut idle = s.dims.zero();
        for (d, v) in s.total_resource.iter() {
            idle.set(d, (v as f64 * factor + 0.1).floor() as i64);
        }
        for n in &s.nodes {
            idle.sub_saturating(&n.used);
        }
        let mut inqueue = s.dims.zero();
        for j in s.job_ids() {
            if let Some(r) = job_inqueue(s, j, InqueueRule::WholeMinimum) {
                inqueue.add(&r);
            }
        }
        Overcommit {
            idle,
            inqueue,
            factor,
        }
    }
}

impl Plugin for Overcommit {
    fn name(&self) -> &'static str {
        "overcommit"
    }

    fn job_enqueueable(&self, s: &Snapshot, j: JobId) -> Option<Verdict> {
        let Some(min) = &s.job(j).min_resources else {
            return Some(Verdict::permit());
        };
        let mut want = self.inqueue.clone();
        want.add(min);
        if want.fits_in_on_requested(&self.idle, min) {
            return Some(Verdict::permit());
        }
        Some(Verdict::reject(format!(
            "resource in cluster is overused: minResources {} + already admitted {} exceed idle {} (overcommit-factor {})",
            s.dims.describe(min),
            s.dims.describe(&self.inqueue),
            s.dims.describe(&self.idle),
            self.factor
        )))
    }

    fn job_enqueued(&mut self, s: &Snapshot, j: JobId) {
        if let Some(min) = &s.job(j).min_resources {
            self.inqueue.add(min);
        }
    }
}
