//! Named `volcano-scheduler.conf` texts the tests run under, so that one configuration has one
//! name wherever it is used. Texts, not parsed configurations: the kit does not depend on the
//! scheduler, whose own tests use it. The built-in configuration is the scheduler's
//! (`SchedulerConf::default_conf`), not repeated here.

/// Volcano's usual tiers with preempt and reclaim on, without overcommit: what eviction tests
/// and benchmarks run under.
pub fn evicting() -> &'static str {
    r#"actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"#
}

/// [`evicting`] with `capacity` keeping the queue shares instead of `proportion`: queues
/// borrow beyond their deserved share up to their capability, and reclaim brings it back.
pub fn capacity_evicting() -> &'static str {
    r#"actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: capacity
  - name: nodeorder
"#
}

/// The built-in actions without overcommit, scoring with `binpack`: the second configuration
/// the scheduler's properties run under.
pub fn binpack() -> &'static str {
    r#"actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"#
}

/// Placement decided by the predicates alone (with gang and queue admission), ties going to the
/// first node by name: for tests of what may go where.
pub fn predicates_only() -> &'static str {
    r#"actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
"#
}
