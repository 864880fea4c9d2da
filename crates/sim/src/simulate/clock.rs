//! The virtual clock and the events waiting on it. Events at one instant fire in the order
//! they were scheduled, so a run never depends on anything but its input. The events are
//! data only: `kubelet`, `disruptions` and the engine schedule and carry them out.

use std::collections::BTreeMap;
use std::time::Duration;

use volcano_api::k8s_openapi::api::core::v1::Node;
use volcano_api::scheduling::ResourceList;
use volcano_controllers::time::Instant;

use super::annotations::Outcome;
use super::plan::NodeChange;

/// A pod, pinned to one incarnation: a Job restart recreates pods under the same name, and an
/// event for the old one must not touch the new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// uid of the incarnation the event is for.
    pub uid: String,
}

/// Something that will happen.
#[derive(Debug, Clone)]
pub enum Event {
    /// The plan's submission at this index is created.
    Submit(usize),
    /// A bound pod's containers are up: it runs.
    PodStart(PodRef),
    /// A running pod ends.
    PodEnd(PodRef, Outcome),
    /// A node changes.
    Node(String, NodeChange),
    /// An injected fault strikes, or is undone.
    Fault(Disruption),
}

/// One node-level fault, or its undoing.
#[derive(Debug, Clone)]
pub enum Disruption {
    /// The node object is deleted; its pods are lost.
    Vanish(String),
    /// A vanished node comes back as it was.
    Return(Box<Node>),
    /// The node's allocatable drops to half of what its pods request.
    Shrink(String),
    /// A shrunk node gets its allocatable back.
    Restore(String, ResourceList),
    /// Another scheduler binds a pod taking half the node.
    ForeignPod(String),
}

/// The present and the future.
#[derive(Debug, Clone)]
pub struct Clock {
    now: Instant,
    period: Duration,
    queue: BTreeMap<(Instant, u64), Event>,
    scheduled: u64,
}

impl Clock {
    /// A clock at time zero whose sessions fall every `period` (zero counts as 1s).
    pub fn new(period: Duration) -> Self {
        Clock {
            now: Instant::default(),
            period: if period.is_zero() {
                Duration::from_secs(1)
            } else {
                period
            },
            queue: BTreeMap::new(),
            scheduled: 0,
        }
    }

    /// The present.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Moves the present to `t` (never backwards).
    pub fn advance_to(&mut self, t: Instant) {
        self.now = self.now.max(t);
    }

    /// Schedules `event` at `at` (an instant in the past fires at once).
    pub fn schedule(&mut self, at: Instant, event: Event) {
        self.scheduled += 1;
        self.queue.insert((at.max(self.now), self.scheduled), event);
    }

    /// Schedules `event` `after` from now.
    pub fn schedule_in(&mut self, after: Duration, event: Event) {
        self.schedule(self.now.after(after), event);
    }

    /// The next event due at or before now, in order.
    pub fn pop_due(&mut self) -> Option<Event> {
        let (&key, _) = self.queue.first_key_value()?;
        if key.0 > self.now {
            return None;
        }
        self.queue.remove(&key)
    }

    /// When the next event is due.
    pub fn next_event(&self) -> Option<Instant> {
        self.queue.keys().next().map(|(t, _)| *t)
    }

    /// Whether the present is a session tick.
    pub fn on_grid(&self) -> bool {
        self.now.0.as_nanos().is_multiple_of(self.period.as_nanos())
    }

    /// The first session tick strictly after now.
    pub fn next_tick(&self) -> Instant {
        let p = self.period.as_nanos();
        let ticks = self.now.0.as_nanos() / p + 1;
        Instant(nanos(ticks.saturating_mul(p)))
    }
}

/// Nanoseconds as a duration, saturating far beyond any run.
pub fn nanos(n: u128) -> Duration {
    let secs = u64::try_from(n / 1_000_000_000).unwrap_or(u64::MAX);
    let sub = u32::try_from(n % 1_000_000_000).unwrap_or(0);
    Duration::new(secs, sub)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Instant {
        Instant(Duration::from_secs(s))
    }

    #[test]
    fn events_fire_in_time_then_scheduling_order() {
        let mut c = Clock::new(Duration::from_secs(1));
        c.schedule(at(5), Event::Submit(1));
        c.schedule(at(2), Event::Submit(2));
        c.schedule(at(5), Event::Submit(3));
        assert_eq!(c.next_event(), Some(at(2)));
        assert!(c.pop_due().is_none());
        c.advance_to(at(5));
        let order: Vec<usize> = std::iter::from_fn(|| c.pop_due())
            .filter_map(|e| match e {
                Event::Submit(i) => Some(i),
                _ => None,
            })
            .collect();
        assert_eq!(order, vec![2, 1, 3]);
    }

    #[test]
    fn ticks_fall_on_the_period_grid() {
        let mut c = Clock::new(Duration::from_secs(10));
        assert!(c.on_grid());
        assert_eq!(c.next_tick(), at(10));
        c.advance_to(Instant(Duration::from_millis(10_500)));
        assert!(!c.on_grid());
        assert_eq!(c.next_tick(), at(20));
        c.advance_to(at(3));
        assert_eq!(
            c.now(),
            Instant(Duration::from_millis(10_500)),
            "never backwards"
        );
    }
}
