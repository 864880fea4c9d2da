//! Behaviour of the keyed work queue: one entry per key, dirty re-queue, delays, backoff and
//! bounded memory.

use std::collections::BTreeSet;
use std::time::Duration;

use proptest::prelude::*;
use volcano_controllers::time::Instant;
use volcano_controllers::workqueue::{Retry, RetryPolicy, WorkQueue};

fn t(ms: u64) -> Instant {
    Instant(Duration::from_millis(ms))
}

fn policy(base_ms: u64, cap_ms: u64, max_retries: Option<u32>) -> RetryPolicy {
    RetryPolicy {
        base: Duration::from_millis(base_ms),
        cap: Duration::from_millis(cap_ms),
        max_retries,
    }
}

fn drain<K: Ord + Clone>(q: &mut WorkQueue<K>, now: Instant) -> Vec<K> {
    let mut out = Vec::new();
    while let Some(k) = q.pop(now) {
        q.done(&k);
        out.push(k);
    }
    out
}

#[test]
fn defaults_are_client_go_backoff_and_volcano_requeue_limit() {
    let p = RetryPolicy::default();
    assert_eq!(p.base, Duration::from_millis(5));
    assert_eq!(p.cap, Duration::from_secs(1000));
    assert_eq!(p.max_retries, Some(15));
}

#[test]
fn adding_one_key_ten_thousand_times_keeps_one_entry() {
    let mut q = WorkQueue::new(RetryPolicy::default());
    for _ in 0..10_000 {
        // A fresh allocation each time: equality by value is what must deduplicate.
        q.add(String::from("default/job-1"));
    }
    assert_eq!(q.len(), 1);
    assert_eq!(q.peak_len(), 1);
    assert_eq!(q.pop(t(0)).as_deref(), Some("default/job-1"));
    assert_eq!(q.pop(t(0)), None);
    assert!(q.is_empty());
}

#[test]
fn ready_keys_pop_in_fifo_order_each_once() {
    let mut q = WorkQueue::new(RetryPolicy::default());
    for k in [3, 1, 2, 1, 3] {
        q.add(k);
    }
    assert_eq!(q.len(), 3);
    assert_eq!(drain(&mut q, t(0)), vec![3, 1, 2]);
    assert_eq!(q.tracked_keys(), 0);
}

#[test]
fn key_added_while_processing_is_requeued_once_at_done() {
    let mut q = WorkQueue::new(RetryPolicy::default());
    q.add("a");
    assert_eq!(q.pop(t(0)), Some("a"));
    assert_eq!(q.processing_len(), 1);
    for _ in 0..5 {
        q.add("a");
    }
    assert_eq!(q.len(), 1);
    // Never processed twice concurrently.
    assert_eq!(q.pop(t(0)), None);
    q.done(&"a");
    assert_eq!(q.processing_len(), 0);
    assert_eq!(q.pop(t(0)), Some("a"));
    q.done(&"a");
    assert_eq!(q.pop(t(0)), None);
    assert!(q.is_empty());
    assert_eq!(q.tracked_keys(), 0);
}

#[test]
fn done_of_unknown_or_idle_key_is_harmless() {
    let mut q: WorkQueue<u32> = WorkQueue::new(RetryPolicy::default());
    q.done(&7);
    q.add(7);
    q.done(&7);
    assert_eq!(q.len(), 1);
    assert_eq!(q.processing_len(), 0);
    assert_eq!(q.pop(t(0)), Some(7));
}

#[test]
fn delayed_keys_become_ready_at_their_time() {
    let mut q = WorkQueue::new(RetryPolicy::default());
    q.add_after("a", t(50));
    assert_eq!(q.len(), 1);
    assert_eq!(q.next_ready_at(), Some(t(50)));
    assert_eq!(q.pop(t(49)), None);
    assert_eq!(q.pop(t(50)), Some("a"));
    assert_eq!(q.next_ready_at(), None);
}

#[test]
fn promoted_keys_pop_in_time_order_ties_by_insertion_before_later_adds() {
    let mut q = WorkQueue::new(RetryPolicy::default());
    q.add_after('b', t(7));
    q.add_after('a', t(5));
    q.add_after('c', t(5));
    assert_eq!(q.pop(t(10)), Some('a'));
    q.add('d');
    q.done(&'a');
    assert_eq!(drain(&mut q, t(10)), vec!['c', 'b', 'd']);
}

#[test]
fn add_after_in_the_past_is_an_add() {
    let mut q = WorkQueue::new(RetryPolicy::default());
    assert_eq!(q.pop(t(100)), None);
    q.add_after(1, t(40));
    assert_eq!(q.next_ready_at(), Some(t(100)));
    q.add(2);
    assert_eq!(drain(&mut q, t(100)), vec![1, 2]);
}

#[test]
fn earlier_time_wins_and_ready_beats_delayed() {
    let mut q = WorkQueue::new(RetryPolicy::default());
    q.add_after("a", t(100));
    q.add_after("a", t(30));
    q.add_after("a", t(60));
    assert_eq!(q.len(), 1);
    assert_eq!(q.next_ready_at(), Some(t(30)));
    assert_eq!(q.pop(t(29)), None);
    assert_eq!(q.pop(t(30)), Some("a"));
    q.done(&"a");

    q.add_after("b", t(500));
    q.add("b");
    assert_eq!(q.len(), 1);
    assert_eq!(q.next_ready_at(), Some(t(30)));
    q.add_after("b", t(40));
    assert_eq!(drain(&mut q, t(30)), vec!["b"]);
    assert_eq!(q.pop(t(1000)), None);
}

#[test]
fn backoff_doubles_then_caps() {
    let mut q = WorkQueue::new(policy(1000, 10_000, None));
    let mut now = t(0);
    let mut delays = Vec::new();
    for _ in 0..6 {
        match q.retry("a", now) {
            Retry::After(at) => {
                delays.push(at.since(now).as_millis());
                now = at;
            }
            Retry::GaveUp { .. } => panic!("unlimited retries gave up"),
        }
        assert_eq!(q.pop(now), Some("a"));
        q.done(&"a");
    }
    assert_eq!(delays, vec![1000, 2000, 4000, 8000, 10_000, 10_000]);
    assert_eq!(q.failures(&"a"), 6);
    let p = policy(5, 1_000_000, None);
    assert_eq!(p.backoff(31), Duration::from_millis(1_000_000));
    assert_eq!(p.backoff(u32::MAX), Duration::from_millis(1_000_000));
    assert_eq!(RetryPolicy::default().backoff(3), Duration::from_millis(40));
}

#[test]
fn gives_up_after_max_retries_and_forgets_the_key() {
    let mut q = WorkQueue::new(policy(1, 1000, Some(3)));
    let mut now = t(0);
    q.add("a");
    assert_eq!(q.pop(now), Some("a"));
    for n in 1..=3u64 {
        // Retry before done.
        let Retry::After(at) = q.retry("a", now) else {
            panic!("retry {n} gave up");
        };
        assert_eq!(at, now.after(Duration::from_millis(1 << (n - 1))));
        q.done(&"a");
        now = at;
        assert_eq!(q.pop(now), Some("a"));
    }
    assert_eq!(q.retry("a", now), Retry::GaveUp { attempts: 4 });
    assert_eq!(q.failures(&"a"), 0);
    q.done(&"a");
    assert!(q.is_empty());
    assert_eq!(q.pop(t(1_000_000)), None);
    assert_eq!(q.tracked_keys(), 0);
    // A later failure starts over from the base delay.
    assert_eq!(
        q.retry("a", now),
        Retry::After(now.after(Duration::from_millis(1)))
    );
}

#[test]
fn giving_up_keeps_an_entry_from_a_new_event() {
    let mut q = WorkQueue::new(policy(1, 1000, Some(0)));
    q.add("a");
    assert_eq!(q.pop(t(0)), Some("a"));
    q.add("a");
    assert_eq!(q.retry("a", t(0)), Retry::GaveUp { attempts: 1 });
    q.done(&"a");
    assert_eq!(q.pop(t(0)), Some("a"));
}

#[test]
fn forget_resets_backoff() {
    let mut q = WorkQueue::new(policy(10, 1000, Some(15)));
    assert_eq!(q.retry("a", t(0)), Retry::After(t(10)));
    assert_eq!(q.pop(t(10)), Some("a"));
    assert_eq!(q.retry("a", t(10)), Retry::After(t(30)));
    q.done(&"a");
    assert_eq!(q.pop(t(30)), Some("a"));
    q.forget(&"a");
    q.done(&"a");
    assert_eq!(q.failures(&"a"), 0);
    assert_eq!(q.tracked_keys(), 0);
    assert_eq!(q.retry("a", t(30)), Retry::After(t(40)));
}

#[test]
fn retry_before_or_after_done_gives_the_same_outcome() {
    let mut before = WorkQueue::new(policy(10, 1000, None));
    let mut after = WorkQueue::new(policy(10, 1000, None));
    for q in [&mut before, &mut after] {
        q.add(1);
        assert_eq!(q.pop(t(0)), Some(1));
    }
    assert_eq!(before.retry(1, t(0)), Retry::After(t(10)));
    before.done(&1);
    after.done(&1);
    assert_eq!(after.retry(1, t(0)), Retry::After(t(10)));
    for q in [&mut before, &mut after] {
        assert_eq!(q.len(), 1);
        assert_eq!(q.next_ready_at(), Some(t(10)));
        assert_eq!(q.pop(t(9)), None);
        assert_eq!(q.pop(t(10)), Some(1));
    }
}

#[test]
fn backoff_due_while_still_processing_requeues_at_done() {
    let mut q = WorkQueue::new(policy(10, 1000, None));
    q.add(1);
    assert_eq!(q.pop(t(0)), Some(1));
    assert_eq!(q.retry(1, t(0)), Retry::After(t(10)));
    assert_eq!(q.pop(t(20)), None);
    assert_eq!(q.len(), 1);
    q.done(&1);
    assert_eq!(q.pop(t(20)), Some(1));
}

#[test]
fn memory_is_bounded_by_distinct_keys_not_events() {
    let mut q = WorkQueue::new(policy(1, 64, Some(15)));
    let mut now = t(0);
    for round in 0..1000u64 {
        for k in 0..50u64 {
            q.add(k);
            q.add_after(k, now.after(Duration::from_millis(round % 7)));
        }
        while let Some(k) = q.pop(now) {
            if (k + round) % 3 == 0 {
                q.retry(k, now);
            } else {
                q.forget(&k);
            }
            q.done(&k);
        }
        assert!(q.len() <= 50);
        assert!(q.tracked_keys() <= 50);
        now = now.after(Duration::from_millis(1));
    }
    assert!(q.peak_len() <= 50);
    while let Some(at) = q.next_ready_at() {
        now = now.max(at);
        for k in drain(&mut q, now) {
            q.forget(&k);
        }
    }
    for k in 0..50u64 {
        q.forget(&k);
    }
    assert_eq!(q.tracked_keys(), 0);
}

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    AddAfter(u8, u16),
    Pop,
    Done(usize),
    Retry(u8),
    Forget(u8),
    Advance(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..8).prop_map(Op::Add),
        2 => (0u8..8, 0u16..40).prop_map(|(k, d)| Op::AddAfter(k, d)),
        4 => Just(Op::Pop),
        3 => (0usize..8).prop_map(Op::Done),
        2 => (0u8..8).prop_map(Op::Retry),
        1 => (0u8..8).prop_map(Op::Forget),
        2 => (0u16..30).prop_map(Op::Advance),
    ]
}

proptest! {
    /// `pending` holds the keys added (or retried) since they were last popped: the queue must
    /// hold exactly one entry for each, pop each exactly once, and pop nothing else.
    #[test]
    fn every_add_burst_is_popped_exactly_once(ops in prop::collection::vec(op(), 0..200)) {
        let mut q = WorkQueue::new(policy(1, 16, Some(3)));
        let mut now = t(0);
        let mut pending = BTreeSet::new();
        let mut processing: Vec<u8> = Vec::new();
        let mut seen = BTreeSet::new();
        for op in ops {
            match op {
                Op::Add(k) => {
                    seen.insert(k);
                    q.add(k);
                    pending.insert(k);
                }
                Op::AddAfter(k, d) => {
                    seen.insert(k);
                    q.add_after(k, now.after(Duration::from_millis(u64::from(d))));
                    pending.insert(k);
                }
                Op::Pop => {
                    if let Some(k) = q.pop(now) {
                        prop_assert!(pending.remove(&k), "popped {k} with no add since its last pop");
                        prop_assert!(!processing.contains(&k), "{k} popped while processing");
                        processing.push(k);
                    }
                }
                Op::Done(i) => {
                    if !processing.is_empty() {
                        let k = processing.remove(i % processing.len());
                        q.done(&k);
                    }
                }
                Op::Retry(k) => {
                    seen.insert(k);
                    if let Retry::After(at) = q.retry(k, now) {
                        prop_assert!(at > now);
                        pending.insert(k);
                    }
                }
                Op::Forget(k) => q.forget(&k),
                Op::Advance(d) => now = now.after(Duration::from_millis(u64::from(d))),
            }
            prop_assert_eq!(q.len(), pending.len());
            prop_assert!(q.len() <= seen.len());
            prop_assert!(q.tracked_keys() <= seen.len());
            prop_assert!(q.peak_len() >= q.len());
            prop_assert_eq!(q.processing_len(), processing.len());
        }
        for k in processing.drain(..) {
            q.done(&k);
        }
        let mut rounds = 0;
        while let Some(at) = q.next_ready_at() {
            rounds += 1;
            prop_assert!(rounds <= 64, "queue did not drain");
            now = now.max(at);
            for k in drain(&mut q, now) {
                prop_assert!(pending.remove(&k), "popped {k} twice for one burst");
            }
        }
        prop_assert!(q.is_empty());
        prop_assert!(pending.is_empty(), "never popped: {pending:?}");
        for k in seen {
            q.forget(&k);
        }
        prop_assert_eq!(q.tracked_keys(), 0);
    }
}
