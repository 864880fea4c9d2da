//! Keyed work queues with capped exponential backoff, in the manner of client-go's rate-limiting
//! workqueue but with two differences that come from Volcano's production failures
//! (`reference/volcano-semantics.md` §7(d)): keys are values, so every event about one object
//! lands on the same single entry, and the queue reads no clock, so the simulator's virtual time
//! and a real one drive the same code.
//!
//! A key is, at any moment, in at most one queued state: *ready* (poppable now), *delayed* (ready
//! at a given instant) or *dirty* (added while being processed; ready again at [`WorkQueue::done`]).
//! Independently it may be *processing* (popped, not yet done) and may carry a failure count.
//! The queue holds state for a key only while one of these applies, so memory is bounded by the
//! number of distinct keys with pending work or failures, never by the event rate.
//!
//! Time: the queue's "now" is the latest instant it was given (by [`WorkQueue::pop`] or
//! [`WorkQueue::retry`]); [`WorkQueue::add`] makes a key ready at that instant, and an
//! [`WorkQueue::add_after`] for an instant not after it counts as an add. Ready keys pop in the
//! order in which they became ready, ties in the order they were queued.
//!
//! Retry and done: [`WorkQueue::retry`] may be called before or after [`WorkQueue::done`] with the
//! same outcome. The backoff delay is kept in the key's one entry; if it falls due while the key
//! is still processing, the key turns dirty and becomes ready at `done`, exactly as an add would.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::time::Instant;

/// How failed keys are retried: `base · 2^n` after the n-th consecutive failure (counting from
/// zero), capped at `cap`, at most `max_retries` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Delay before the first retry; each further failure doubles it.
    pub base: Duration,
    /// Longest delay between two retries.
    pub cap: Duration,
    /// Retries allowed before a key is given up on; `None` retries forever.
    pub max_retries: Option<u32>,
}

impl Default for RetryPolicy {
    /// client-go's default backoff (5ms doubling up to 1000s) and Volcano's `--max-requeue-num` 15.
    fn default() -> Self {
        RetryPolicy {
            base: Duration::from_millis(5),
            cap: Duration::from_secs(1000),
            max_retries: Some(15),
        }
    }
}

impl RetryPolicy {
    /// The delay after a key's `failures`-th earlier failure: `base · 2^failures`, at most `cap`.
    pub fn backoff(&self, failures: u32) -> Duration {
        1u32.checked_shl(failures)
            .and_then(|factor| self.base.checked_mul(factor))
            .map_or(self.cap, |d| d.min(self.cap))
    }
}

/// What [`WorkQueue::retry`] did with a failed key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// The key was re-queued to become ready at this instant.
    After(Instant),
    /// The key failed more than `max_retries` times in a row: it was not re-queued and its
    /// failure count was forgotten. `attempts` counts the failed attempts, this one included.
    GaveUp {
        /// Failed attempts, the first try and every retry.
        attempts: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Queued {
    #[default]
    No,
    Ready,
    Delayed {
        at: Instant,
        seq: u64,
    },
    Dirty,
}

#[derive(Debug, Default)]
struct Slot {
    queued: Queued,
    processing: bool,
    failures: u32,
}

impl Slot {
    fn is_idle(&self) -> bool {
        self.queued == Queued::No && !self.processing && self.failures == 0
    }
}

/// The queued entries, kept apart from the per-key slots so that a slot can be borrowed while
/// they change.
#[derive(Debug)]
struct Lanes<K> {
    // Keys are appended in the order they become ready, and the queue's clock never goes back,
    // so a plain FIFO is already sorted by ready time.
    ready: VecDeque<K>,
    // The sequence number breaks ties between equal instants in insertion order and makes the
    // map key unique without requiring `K` in it.
    delayed: BTreeMap<(Instant, u64), K>,
    dirty: usize,
    seq: u64,
}

impl<K> Lanes<K> {
    fn len(&self) -> usize {
        self.ready.len() + self.delayed.len() + self.dirty
    }

    /// Queues a key whose slot holds no entry: ready now if `at` is `None`, else delayed.
    fn place(&mut self, slot: &mut Slot, key: K, at: Option<Instant>) {
        slot.queued = match at {
            Some(at) => {
                let seq = self.seq;
                self.seq = self.seq.wrapping_add(1);
                self.delayed.insert((at, seq), key);
                Queued::Delayed { at, seq }
            }
            None if slot.processing => {
                self.dirty += 1;
                Queued::Dirty
            }
            None => {
                self.ready.push_back(key);
                Queued::Ready
            }
        };
    }
}

/// A keyed, deduplicating, rate-limited work queue driven by caller-supplied time.
#[derive(Debug)]
pub struct WorkQueue<K> {
    policy: RetryPolicy,
    slots: BTreeMap<K, Slot>,
    lanes: Lanes<K>,
    processing: usize,
    clock: Instant,
    peak: usize,
}

impl<K: Ord + Clone> WorkQueue<K> {
    /// An empty queue retrying failed keys by `policy`.
    pub fn new(policy: RetryPolicy) -> Self {
        WorkQueue {
            policy,
            slots: BTreeMap::new(),
            lanes: Lanes {
                ready: VecDeque::new(),
                delayed: BTreeMap::new(),
                dirty: 0,
                seq: 0,
            },
            processing: 0,
            clock: Instant::default(),
            peak: 0,
        }
    }

    /// The retry policy of this queue.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// Queues `key` as ready now; a key already queued keeps its one entry (a delayed one becomes
    /// ready now), and a key being processed is re-queued when it is done.
    pub fn add(&mut self, key: K) {
        self.enqueue(key, None);
    }

    /// Queues `key` to become ready at `at`; a key already ready stays ready, and a key already
    /// delayed keeps the earlier of its two instants.
    pub fn add_after(&mut self, key: K, at: Instant) {
        let at = (at > self.clock).then_some(at);
        self.enqueue(key, at);
    }

    /// Takes the next ready key at `now` and marks it processing; keys delayed until `now` or
    /// earlier become ready first, in time order.
    pub fn pop(&mut self, now: Instant) -> Option<K> {
        self.advance(now);
        let key = self.lanes.ready.pop_front()?;
        match self.slots.get_mut(&key) {
            Some(slot) => {
                slot.queued = Queued::No;
                slot.processing = true;
            }
            // Unreachable while the invariants hold; recovering keeps the key's accounting sane.
            None => {
                let slot = Slot {
                    processing: true,
                    ..Slot::default()
                };
                self.slots.insert(key.clone(), slot);
            }
        }
        self.processing += 1;
        Some(key)
    }

    /// Ends the processing of `key`; if it was added meanwhile, it becomes ready now. Does nothing
    /// for a key that is not being processed.
    pub fn done(&mut self, key: &K) {
        let Some(slot) = self.slots.get_mut(key) else {
            return;
        };
        if !slot.processing {
            return;
        }
        slot.processing = false;
        self.processing = self.processing.saturating_sub(1);
        if slot.queued == Queued::Dirty {
            self.lanes.dirty = self.lanes.dirty.saturating_sub(1);
            slot.queued = Queued::No;
            self.lanes.place(slot, key.clone(), None);
        }
        if slot.is_idle() {
            self.slots.remove(key);
        }
    }

    /// Records a failure of `key` at `now` and re-queues it after its backoff, or gives up once
    /// it has been retried `max_retries` times. Works before or after [`WorkQueue::done`].
    pub fn retry(&mut self, key: K, now: Instant) -> Retry {
        self.advance(now);
        let failures = self.failures(&key);
        let attempts = failures.saturating_add(1);
        if self.policy.max_retries.is_some_and(|max| failures >= max) {
            // Entries that other adds made stay: they stand for new events, not for this failure.
            self.forget(&key);
            return Retry::GaveUp { attempts };
        }
        let at = now.after(self.policy.backoff(failures));
        match self.slots.get_mut(&key) {
            Some(slot) => slot.failures = attempts,
            None => {
                let slot = Slot {
                    failures: attempts,
                    ..Slot::default()
                };
                self.slots.insert(key.clone(), slot);
            }
        }
        self.add_after(key, at);
        Retry::After(at)
    }

    /// Clears the failure count of `key`, so that its next failure backs off from `base` again.
    pub fn forget(&mut self, key: &K) {
        if let Some(slot) = self.slots.get_mut(key) {
            slot.failures = 0;
            if slot.is_idle() {
                self.slots.remove(key);
            }
        }
    }

    /// Consecutive failures recorded for `key` since it was last forgotten.
    pub fn failures(&self, key: &K) -> u32 {
        self.slots.get(key).map_or(0, |slot| slot.failures)
    }

    /// Queued entries (ready, delayed, and dirty ones waiting for `done`), not counting keys
    /// being processed.
    pub fn len(&self) -> usize {
        self.lanes.len()
    }

    /// Whether no entry is queued (keys may still be processing).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys popped and not yet done.
    pub fn processing_len(&self) -> usize {
        self.processing
    }

    /// The largest [`WorkQueue::len`] this queue ever had.
    pub fn peak_len(&self) -> usize {
        self.peak
    }

    /// Keys the queue holds any state for; its memory is proportional to this.
    pub fn tracked_keys(&self) -> usize {
        self.slots.len()
    }

    /// When [`WorkQueue::pop`] may next return a key: the queue's current time if a key is
    /// ready, else the earliest delayed instant, else `None` (dirty keys wait for `done`, not for
    /// time). A delayed key still being processed turns dirty at that instant instead of ready.
    pub fn next_ready_at(&self) -> Option<Instant> {
        if !self.lanes.ready.is_empty() {
            return Some(self.clock);
        }
        self.lanes.delayed.keys().next().map(|&(at, _)| at)
    }

    /// Queues `key` ready now (`at` is `None`) or at `at`, which is after the clock.
    fn enqueue(&mut self, key: K, at: Option<Instant>) {
        if let Some(slot) = self.slots.get_mut(&key) {
            match slot.queued {
                Queued::Ready | Queued::Dirty => return,
                Queued::Delayed { at: old, seq } => {
                    if at.is_some_and(|at| at >= old) {
                        return;
                    }
                    self.lanes.delayed.remove(&(old, seq));
                    slot.queued = Queued::No;
                    self.lanes.place(slot, key, at);
                }
                Queued::No => self.lanes.place(slot, key, at),
            }
        } else {
            let mut slot = Slot::default();
            self.lanes.place(&mut slot, key.clone(), at);
            self.slots.insert(key, slot);
        }
        self.peak = self.peak.max(self.len());
    }

    /// Moves the clock to `now` (never back) and makes the keys delayed until then ready.
    fn advance(&mut self, now: Instant) {
        self.clock = self.clock.max(now);
        while let Some(entry) = self.lanes.delayed.first_entry() {
            if entry.key().0 > self.clock {
                break;
            }
            let key = entry.remove();
            if let Some(slot) = self.slots.get_mut(&key) {
                slot.queued = Queued::No;
                self.lanes.place(slot, key, None);
            }
        }
    }
}
