//! Prometheus metrics under Volcano's names, types, labels and units, so dashboards and alerts
//! built for Volcano keep working: the scheduler's (`pkg/scheduler/metrics` in Volcano) in
//! [`SchedulerMetrics`], the controllers' (`pkg/controllers/metrics`, `job/state`,
//! `jobflow/state`) in [`ControllerMetrics`]. Both are served in the text format 0.0.4, as
//! Volcano serves them (see [`crate::exposition`]); the counters Volcano names without `_total`
//! are listed in [`UNSUFFIXED_COUNTERS`].
//!
//! Series about a queue or a job are written as a whole each session or turn ([`GaugeVec`]):
//! a label set not written again is removed, so a deleted queue stops exporting.

mod controller;
mod queue;
mod scheduler;
mod session_timer;

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::TypedMetric;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

pub use controller::ControllerMetrics;
pub use queue::QueueMetrics;
pub use scheduler::{
    ON_CLOSE, ON_OPEN, STAGE_ASSUMED, STAGE_BIND, STAGE_BOUND, STAGE_WATCHED, SchedulerMetrics, ms,
};
pub use session_timer::SessionTimer;

/// One label: `[(name, value)]`.
pub type Label = [(&'static str, String); 1];
/// Two labels.
pub type Labels2 = [(&'static str, String); 2];
/// Three labels.
pub type Labels3 = [(&'static str, String); 3];

/// A float gauge, as Go's gauges are.
pub type FGauge = Gauge<f64, AtomicU64>;

/// The PodGroup phases counted per queue, in [`ControllerMetrics::queue_pod_groups`] order.
pub const POD_GROUP_PHASES: [&str; 5] = ["Inqueue", "Pending", "Running", "Unknown", "Completed"];

/// Counters Volcano names without the `_total` suffix; every other counter is exported as
/// `<registered name>_total`.
pub const UNSUFFIXED_COUNTERS: [&str; 6] = [
    "volcano_total_preemption_attempts",
    "volcano_job_retry_counts",
    "volcano_job_completed_phase_count",
    "volcano_job_failed_phase_count",
    "volcano_jobflow_succeed_phase_count",
    "volcano_jobflow_failed_phase_count",
];

/// A label value.
pub fn label(name: &'static str, value: impl Into<String>) -> Label {
    [(name, value.into())]
}

/// Go's `prometheus.ExponentialBucketsRange(min, max, count)`: `count` buckets from `min` to
/// `max`, each a constant factor above the one before, computed the way Go computes them.
pub fn exponential_buckets_range(min: f64, max: f64, count: u16) -> Vec<f64> {
    let count = count.max(1);
    let factor = (max / min).powf(1.0 / f64::from(count.saturating_sub(1).max(1)));
    (0..count)
        .map(|i| min * factor.powf(f64::from(i)))
        .collect()
}

/// A histogram with Go's `ExponentialBucketsRange(min, max, count)`.
pub fn histogram(min: f64, max: f64, count: u16) -> Histogram {
    Histogram::new(exponential_buckets_range(min, max, count))
}

/// A histogram family whose members have Go's `ExponentialBucketsRange(min, max, count)`.
pub type HistogramVec<S> = Family<S, Histogram, fn() -> Histogram>;

/// A family whose label sets are tracked, so those of objects that are gone can be removed:
/// written as a whole each round ([`Tracked::sweep`] removes the label sets not written since
/// the last sweep) or kept until their object goes ([`Tracked::retain`]).
#[derive(Clone, Debug)]
pub struct Tracked<S: Clone + Eq + std::hash::Hash + Ord, M> {
    /// The exported family.
    pub family: Family<S, M>,
    sets: Arc<Mutex<Sets<S>>>,
}

/// A float gauge family with tracked label sets.
pub type GaugeVec<S> = Tracked<S, FGauge>;
/// A counter family with tracked label sets.
pub type CounterVec<S> = Tracked<S, Counter>;

#[derive(Debug)]
struct Sets<S> {
    this_round: BTreeSet<S>,
    last_round: BTreeSet<S>,
}

impl<S, M> Tracked<S, M>
where
    S: Clone
        + Eq
        + std::hash::Hash
        + Ord
        + EncodeLabelSet
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    M: EncodeMetric + TypedMetric + Default + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    fn new() -> Self {
        Tracked {
            family: Family::default(),
            sets: Arc::new(Mutex::new(Sets {
                this_round: BTreeSet::new(),
                last_round: BTreeSet::new(),
            })),
        }
    }

    fn sets(&self) -> MutexGuard<'_, Sets<S>> {
        // A panic elsewhere while holding the lock leaves plain sets behind; they stay usable.
        self.sets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The member for `labels`, written in this round.
    pub fn member(&self, labels: S) -> M {
        let m = self.family.get_or_create_owned(&labels);
        self.sets().this_round.insert(labels);
        m
    }

    /// Ends the round: removes the label sets of the last round not written in this one.
    pub fn sweep(&self) {
        let mut sets = self.sets();
        let this_round = std::mem::take(&mut sets.this_round);
        for gone in sets.last_round.difference(&this_round) {
            self.family.remove(gone);
        }
        sets.last_round = this_round;
    }

    /// Keeps, of every label set written so far, those `keep` accepts; for series that last
    /// until their object is gone rather than for one round.
    pub fn retain(&self, keep: impl Fn(&S) -> bool) {
        let mut sets = self.sets();
        let this_round = std::mem::take(&mut sets.this_round);
        let all: BTreeSet<S> = sets.last_round.union(&this_round).cloned().collect();
        let (kept, gone): (BTreeSet<S>, BTreeSet<S>) = all.into_iter().partition(|s| keep(s));
        for s in &gone {
            self.family.remove(s);
        }
        sets.last_round = kept;
    }

    fn register(&self, reg: &mut Registry, name: &str, help: &str) {
        reg.register(name, help, self.family.clone());
    }
}

impl<S> GaugeVec<S>
where
    S: Clone
        + Eq
        + std::hash::Hash
        + Ord
        + EncodeLabelSet
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    /// Sets `labels` to `v` for this round.
    pub fn set(&self, labels: S, v: f64) {
        self.member(labels).set(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_gos_exponential_range() {
        let b = exponential_buckets_range(1.0, 5000.0, 20);
        assert_eq!(b.len(), 20);
        assert_eq!(b[0], 1.0);
        assert!((b[19] - 5000.0).abs() < 1e-9, "{}", b[19]);
        assert!((b[1] - 5000f64.powf(1.0 / 19.0)).abs() < 1e-12);
    }

    #[test]
    fn a_label_set_not_set_again_is_swept() {
        let g: GaugeVec<Label> = GaugeVec::new();
        g.set(label("queue_name", "a"), 1.0);
        g.set(label("queue_name", "b"), 2.0);
        g.sweep();
        g.set(label("queue_name", "a"), 3.0);
        g.sweep();
        assert!(g.family.get(&label("queue_name", "a")).is_some());
        assert!(g.family.get(&label("queue_name", "b")).is_none());
    }
}
