//! What a session reports about each queue for monitoring: the queue's spec beside the view of
//! the plugin that keeps queue shares (`proportion` or `capacity`). Reporting only: no decision
//! reads it, so adding to it never changes what a session decides.

use volcano_api::NamespacedName;

use super::session::Session;
use crate::model::{QueueId, Snapshot};

pub use super::plugin::QueueShare;
use crate::resource::{PODS_DIM, Resource, UNBOUNDED};

/// Resource name → amount in Volcano's metric units: milli-CPU for `cpu`, bytes for `memory`,
/// milli-units for every other resource (Volcano's `Resource` keeps scalars in milli-units).
/// `pods` is left out, as Volcano's `Resource` keeps it apart from the scalars.
pub type Amounts = Vec<(String, i64)>;

/// One queue after the session, for metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueReport {
    /// Queue name.
    pub name: String,
    /// `spec.weight`.
    pub weight: i32,
    /// Σ requests of the queue's tasks in an allocated status (and of its children's).
    pub allocated: Amounts,
    /// `spec.capability`, bounded dimensions only.
    pub capability: Amounts,
    /// Whether a plugin finds the queue overused.
    pub overused: bool,
    /// The share-keeping plugin's view; `None` when no such plugin is configured or it does
    /// not weigh this queue (`proportion` leaves out queues without jobs).
    pub share: Option<ShareReport>,
}

/// [`QueueShare`] in metric units.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareReport {
    /// Deserved resources.
    pub deserved: Amounts,
    /// Real capability, bounded dimensions only.
    pub real_capability: Amounts,
    /// Requested resources.
    pub request: Amounts,
    /// Inqueue (admitted, not yet used) resources.
    pub inqueue: Amounts,
    /// The queue's dominant share.
    pub share: f64,
}

impl ShareReport {
    /// `q` in metric units.
    pub fn new(s: &Snapshot, q: &QueueShare) -> Self {
        ShareReport {
            deserved: amounts(s, &q.deserved),
            real_capability: amounts(s, &q.real_capability),
            request: amounts(s, &q.request),
            inqueue: amounts(s, &q.inqueue),
            share: q.share,
        }
    }
}

/// `r` by resource name, leaving out `pods` and unbounded dimensions.
pub fn amounts(s: &Snapshot, r: &Resource) -> Amounts {
    r.iter()
        .filter(|&(d, v)| d != PODS_DIM && v != UNBOUNDED)
        .map(|(d, v)| (s.dims.name(d).to_string(), v))
        .collect()
}

impl Session {
    /// Every queue's report, given its `allocated` by queue index.
    pub(super) fn queue_reports(&self, allocated: &[Resource]) -> Vec<QueueReport> {
        let s = &self.snap;
        let mut reports = Vec::with_capacity(s.queues.len());
        for (i, (q, a)) in s.queues.iter().zip(allocated).enumerate() {
            let qid = QueueId(i as u32);
            let share = self
                .tiers
                .iter()
                .flatten()
                .find_map(|slot| slot.plugin.queue_share(s, qid));
            reports.push(QueueReport {
                name: q.name.clone(),
                weight: q.weight,
                allocated: amounts(s, a),
                capability: amounts(s, &q.capability),
                overused: self.overused(qid),
                share: share.as_ref().map(|x| ShareReport::new(s, x)),
            });
        }
        reports
    }

    /// `(PodGroup, share)` of every job that a plugin weighs (`drf`); empty when none does.
    pub(super) fn job_shares(&self) -> Vec<(NamespacedName, f64)> {
        let s = &self.snap;
        s.job_ids()
            .filter_map(|j| {
                let job = s.job(j);
                let share = self
                    .tiers
                    .iter()
                    .flatten()
                    .find_map(|slot| slot.plugin.job_share(s, j))?;
                Some((job.key.clone(), share))
            })
            .collect()
    }
}
