//! Flat mode: every queue on its own.

use std::cmp::Ordering;

use super::{cluster, flat, job, q, task};
use crate::framework::{Plugin, Vote};

const GI: i64 = 1 << 30;

#[test]
fn deserved_is_capped_by_real_capability_and_raised_to_guarantee() {
    let s = cluster()
        .node("n1", "{cpu: '8', memory: 16Gi}")
        .queue(
            "q1",
            "deserved: {cpu: '10', memory: 4Gi}, capability: {cpu: '6'}",
        )
        .queue("q2", "guarantee: {resource: {cpu: '4'}}")
        .job("j1", "q1", "Running", None)
        .running("j1-a-0", "j1", "{cpu: '2', memory: 1Gi}", "n1")
        .snapshot();
    let p = flat(&s);

    let a1 = p.queue_attr(q(&s, "q1")).unwrap();
    // The cluster's 8 cpu less q2's guarantee of 4 is less than q1's capability of 6.
    assert_eq!(a1.real_capability.cpu(), 4000);
    assert_eq!(a1.real_capability.memory(), 16 * GI);
    assert_eq!(a1.deserved.cpu(), 4000);
    assert_eq!(a1.deserved.memory(), 4 * GI);
    assert_eq!(a1.share, 0.5);

    let a2 = p.queue_attr(q(&s, "q2")).unwrap();
    assert_eq!(a2.real_capability.cpu(), 8000);
    assert_eq!(a2.deserved.cpu(), 4000);
    assert!(p.hierarchy_problems().is_empty());
}

#[test]
fn allocatable_lets_a_queue_grow_to_its_capability_and_says_why_not_beyond() {
    let s = cluster()
        .node("n1", "{cpu: '8', memory: 16Gi}")
        .queue("q1", "deserved: {cpu: '1'}, capability: {cpu: '2'}")
        .closed_queue("qc", "")
        .job("j1", "q1", "Running", None)
        .running("j1-a-0", "j1", "{cpu: 1500m, memory: 1Gi}", "n1")
        .pending("j1-a-1", "j1", "{cpu: '1', memory: 1Gi}")
        .pending("j1-a-2", "j1", "{cpu: 500m}")
        .pending("j1-m-0", "j1", "{memory: 1Gi}")
        .job("jc", "qc", "Inqueue", None)
        .pending("jc-a-0", "jc", "{cpu: '1'}")
        .snapshot();
    let mut p = flat(&s);
    let q1 = q(&s, "q1");

    assert_eq!(
        p.allocatable(&s, q1, task(&s, "j1-a-1")),
        Some(Err(
            "queue q1 would exceed its capacity: cpu allocated 1500m + task 1 > limit 2".into()
        ))
    );
    // Beyond deserved (1 cpu) up to capability; memory is not limited at all.
    assert_eq!(p.allocatable(&s, q1, task(&s, "j1-a-2")), Some(Ok(())));
    assert_eq!(p.allocatable(&s, q1, task(&s, "j1-m-0")), Some(Ok(())));
    assert_eq!(
        p.allocatable(&s, q(&s, "qc"), task(&s, "jc-a-0")),
        Some(Err("queue qc is Closed".into()))
    );

    // The event handlers keep the accounting: freeing the running task makes room.
    p.on_deallocate(&s, task(&s, "j1-a-0"));
    assert_eq!(p.allocatable(&s, q1, task(&s, "j1-a-1")), Some(Ok(())));
    p.on_allocate(&s, task(&s, "j1-a-0"));
    assert!(matches!(
        p.allocatable(&s, q1, task(&s, "j1-a-1")),
        Some(Err(_))
    ));
}

#[test]
fn queue_order_is_priority_then_share_with_best_effort_queues_last() {
    let s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue("vip", "priority: 10, deserved: {cpu: '1'}")
        .queue("low", "deserved: {cpu: '4'}")
        .queue("full", "deserved: {cpu: '2'}")
        .queue("be", "")
        .job("jv", "vip", "Running", None)
        .running("jv-a-0", "jv", "{cpu: '1'}", "n1")
        .job("jl", "low", "Running", None)
        .running("jl-a-0", "jl", "{cpu: '1'}", "n1")
        .job("jf", "full", "Running", None)
        .running("jf-a-0", "jf", "{cpu: '2'}", "n1")
        .job("jb", "be", "Inqueue", None)
        .pending("jb-a-0", "jb", "{cpu: '1'}")
        .snapshot();
    let p = flat(&s);
    let order = |l: &str, r: &str| p.queue_order(&s, q(&s, l), q(&s, r));

    assert_eq!(p.queue_attr(q(&s, "be")).unwrap().share, 1.0);
    assert_eq!(order("vip", "low"), Some(Ordering::Less));
    assert_eq!(order("low", "full"), Some(Ordering::Less));
    // Equal shares of 1: the queue that deserves something goes first.
    assert_eq!(order("full", "be"), Some(Ordering::Less));
    assert_eq!(order("be", "full"), Some(Ordering::Greater));
    // No victim queue order in flat mode: the framework falls back to reverse queue order.
    assert_eq!(
        p.victim_queue_order(&s, q(&s, "be"), q(&s, "low"), q(&s, "vip")),
        None
    );
}

#[test]
fn enqueue_counts_allocated_and_admitted_against_real_capability() {
    let s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue("q1", "capability: {cpu: '4'}")
        .closed_queue("qc", "")
        .job("run", "q1", "Running", Some("{cpu: '2'}"))
        .running("run-a-0", "run", "{cpu: '2'}", "n1")
        .job("adm", "q1", "Inqueue", Some("{cpu: '1'}"))
        .job("big", "q1", "Pending", Some("{cpu: '2'}"))
        .job("small", "q1", "Pending", Some("{cpu: '1'}"))
        .job("small2", "q1", "Pending", Some("{cpu: '1'}"))
        .job("nomin", "q1", "Pending", None)
        .job("shut", "qc", "Pending", Some("{cpu: '1'}"))
        .snapshot();
    let mut p = flat(&s);
    let vote = |p: &super::Capacity, name: &str| p.job_enqueueable(&s, job(&s, name)).unwrap();

    let big = vote(&p, "big");
    assert_eq!(big.vote, Vote::Reject);
    assert_eq!(
        big.reason.as_deref(),
        Some(
            "queue q1 resource quota insufficient: cpu minResources 2 + allocated 2 + admitted 1 - elastic 0 > limit 4"
        )
    );
    assert_eq!(vote(&p, "small").vote, Vote::Permit);
    assert_eq!(vote(&p, "nomin").vote, Vote::Permit);
    assert_eq!(
        vote(&p, "shut").reason.as_deref(),
        Some("queue qc is Closed")
    );

    // An admitted job reserves its minimum for the next decision.
    p.job_enqueued(&s, job(&s, "small"));
    assert_eq!(vote(&p, "small2").vote, Vote::Reject);
}

#[test]
fn preemptive_needs_room_within_capability_and_one_dimension_below_deserved() {
    let s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue(
            "q1",
            "deserved: {cpu: '2', memory: 2Gi}, capability: {cpu: '4'}",
        )
        .closed_queue("qc", "deserved: {cpu: '2'}")
        .job("j1", "q1", "Running", None)
        .running("j1-a-0", "j1", "{cpu: '1', memory: 1Gi}", "n1")
        .pending("j1-a-1", "j1", "{cpu: '1', memory: 1Gi}")
        .pending("j1-a-2", "j1", "{cpu: '2', memory: 512Mi}")
        .pending("j1-a-3", "j1", "{cpu: '2', memory: 2Gi}")
        .pending("j1-a-4", "j1", "{cpu: '4'}")
        .job("jc", "qc", "Inqueue", None)
        .pending("jc-a-0", "jc", "{cpu: '1'}")
        .snapshot();
    let p = flat(&s);
    let q1 = q(&s, "q1");
    let preemptive = |t: &str| p.preemptive(&s, q1, task(&s, t));

    assert_eq!(preemptive("j1-a-1"), Some(true));
    // Over deserved on cpu, but memory stays within: still preemptive.
    assert_eq!(preemptive("j1-a-2"), Some(true));
    assert_eq!(preemptive("j1-a-3"), Some(false));
    // 1 + 4 cpu would pass the capability.
    assert_eq!(preemptive("j1-a-4"), Some(false));
    assert_eq!(
        p.preemptive(&s, q(&s, "qc"), task(&s, "jc-a-0")),
        Some(false)
    );
}

#[test]
fn reclaim_never_takes_a_queue_below_its_guarantee_and_keeps_the_given_order() {
    let s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue(
            "qv",
            "guarantee: {resource: {cpu: '2'}}, deserved: {cpu: '2'}",
        )
        .queue("qr", "deserved: {cpu: '8'}")
        .job("v", "qv", "Running", None)
        .running("v-a-0", "v", "{cpu: '1'}", "n1")
        .running("v-a-1", "v", "{cpu: '1'}", "n1")
        .running("v-a-2", "v", "{cpu: '1'}", "n1")
        .running("v-a-3", "v", "{cpu: '1'}", "n1")
        .job("r", "qr", "Inqueue", None)
        .pending("r-a-0", "r", "{cpu: '1'}")
        .snapshot();
    let p = flat(&s);
    let r = task(&s, "r-a-0");
    let v: Vec<_> = (0..4).map(|i| task(&s, &format!("v-a-{i}"))).collect();

    // 4 allocated, deserved and guarantee 2: two may go, the third would break the guarantee.
    assert_eq!(p.reclaimable(&s, r, &v), Some(vec![v[0], v[1]]));
    let reversed: Vec<_> = v.iter().rev().copied().collect();
    assert_eq!(p.reclaimable(&s, r, &reversed), Some(vec![v[3], v[2]]));
}

#[test]
fn reclaim_takes_immediate_victims_and_skips_tasks_freeing_nothing_wanted() {
    let s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue("qm", "deserved: {memory: 4Gi}")
        .queue("qr", "deserved: {cpu: '8', memory: 8Gi}")
        .job("m", "qm", "Running", None)
        .running("m-c-0", "m", "{cpu: '1'}", "n1")
        .running("m-m-0", "m", "{memory: 1Gi}", "n1")
        .job("r", "qr", "Inqueue", None)
        .pending("r-c-0", "r", "{cpu: '1'}")
        .pending("r-m-0", "r", "{memory: 1Gi}")
        .snapshot();
    let p = flat(&s);
    let (cpu_task, mem_task) = (task(&s, "m-c-0"), task(&s, "m-m-0"));

    // qm deserves no cpu at all: its cpu task goes whatever qm holds.
    assert_eq!(
        p.reclaimable(&s, task(&s, "r-c-0"), &[cpu_task, mem_task]),
        Some(vec![cpu_task])
    );
    // Within its deserved memory: the memory task stays.
    assert_eq!(
        p.reclaimable(&s, task(&s, "r-m-0"), &[cpu_task, mem_task]),
        Some(vec![])
    );
}

#[test]
fn guarantees_above_the_cluster_and_double_deallocation_do_not_break_anything() {
    let s = cluster()
        .node("n1", "{cpu: '4', memory: 8Gi}")
        .queue("q1", "guarantee: {resource: {cpu: '10'}}")
        .queue("q2", "deserved: {cpu: '2'}")
        .job("j2", "q2", "Running", None)
        .running("j2-a-0", "j2", "{cpu: '1'}", "n1")
        .pending("j2-a-1", "j2", "{cpu: '1'}")
        .snapshot();
    let mut p = flat(&s);

    assert_eq!(
        p.queue_attr(q(&s, "q1")).unwrap().real_capability.cpu(),
        10_000
    );
    let q2 = q(&s, "q2");
    assert_eq!(p.queue_attr(q2).unwrap().real_capability.cpu(), 0);
    assert_eq!(
        p.allocatable(&s, q2, task(&s, "j2-a-1")),
        Some(Err(
            "queue q2 would exceed its capacity: cpu allocated 1 + task 1 > limit 0".into()
        ))
    );
    // Deallocating more than was allocated must not produce a negative share.
    p.on_deallocate(&s, task(&s, "j2-a-0"));
    p.on_deallocate(&s, task(&s, "j2-a-0"));
    for qid in s.queue_ids() {
        let share = p.queue_attr(qid).unwrap().share;
        assert!(share.is_finite() && share >= 0.0, "share {share}");
    }
}
