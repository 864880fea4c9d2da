//! What a session reports about each queue for monitoring: the queue's spec beside the view of
//! the plugin that keeps queue shares (`proportion` or `capacity`). Reporting only: no decision
//! reads it, so adding to it never changes what a session decides.

use super::close::Decisions;
use super::session::Session;
use crate::model::{QueueId, Snapshot};
use crate::resource::{PODS_DIM, Resource, UNBOUNDED};

/// Resource name → amount in Volcano's metric units: milli-CPU for `cpu`, bytes for `memory`,
/// milli-units for every other resource (Volcano's `Resource` keeps scalars in milli-units).
/// `pods` is left out, as Volcano's `Resource` keeps it apart from the scalars.
pub type Amounts = Vec<(String, f64)>;

/// A share-keeping plugin's view of one queue.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueShare {
    /// What the queue should get when the cluster is contended.
    pub deserved: Resource,
    /// The most the queue may hold now.
    pub real_capability: Resource,
    /// `allocated` + Σ request of pending tasks.
    pub request: Resource,
    /// Reserved by admitted jobs and not yet used.
    pub inqueue: Resource,
    /// max over deserved dimensions of allocated/deserved.
    pub share: f64,
}

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
        .map(|(d, v)| (s.dims.name(d).to_string(), v as f64))
        .collect()
}

impl Session {
    /// Adds the reporting-only parts of `d`: every queue's report (with `allocated`, by queue
    /// index) and, where `drf` runs, every job's share.
    pub(super) fn report(&self, d: &mut Decisions, allocated: &[Resource]) {
        let s = &self.snap;
        for (i, (q, a)) in s.queues.iter().zip(allocated).enumerate() {
            let qid = QueueId(i as u32);
            let share = self
                .tiers
                .iter()
                .flatten()
                .find_map(|slot| slot.plugin.queue_share(s, qid));
            d.queue_reports.push(QueueReport {
                name: q.name.clone(),
                weight: q.weight,
                allocated: amounts(s, a),
                capability: amounts(s, &q.capability),
                overused: self.overused(qid),
                share: share.as_ref().map(|x| ShareReport::new(s, x)),
            });
        }
        if let Some(drf) = self
            .tiers
            .iter()
            .flatten()
            .find(|x| x.plugin.name() == "drf")
        {
            d.job_shares = s
                .job_ids()
                .filter_map(|j| {
                    let job = s.job(j);
                    let share = drf.plugin.job_share(s, j)?;
                    Some((job.namespace.clone(), job.name.clone(), share))
                })
                .collect();
        }
    }
}
