//! Hierarchy mode: queues form a tree under `root`.

use std::cmp::Ordering;

use super::super::{HierarchyProblem, check_hierarchy};
use super::{cluster, hierarchical, job, plugin_with, q, task};
use crate::framework::{Plugin, Vote};
use crate::resource::UNBOUNDED;

#[test]
fn usage_counts_for_every_ancestor_and_limits_come_down_from_parents() {
    let s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue(
            "a",
            "capability: {cpu: '8'}, guarantee: {resource: {cpu: '2'}}, deserved: {cpu: '4'}",
        )
        .queue(
            "a1",
            "parent: a, guarantee: {resource: {cpu: '1'}}, deserved: {cpu: '2'}",
        )
        .queue("a2", "parent: a, deserved: {cpu: '2'}")
        .queue(
            "b",
            "guarantee: {resource: {cpu: '2'}}, deserved: {cpu: '2'}",
        )
        .job("j1", "a1", "Running", None)
        .running("j1-a-0", "j1", "{cpu: '2', memory: 1Gi}", "n1")
        .pending("j1-a-1", "j1", "{cpu: '1', memory: 1Gi}")
        .snapshot();
    let mut p = hierarchical(&s);
    assert_eq!(p.hierarchy_problems(), &[] as &[HierarchyProblem]);
    let (root, a, a1, a2) = (q(&s, "root"), q(&s, "a"), q(&s, "a1"), q(&s, "a2"));
    let attr = |p: &super::Capacity, x| p.queue_attr(x).unwrap().clone();

    assert_eq!(attr(&p, a1).ancestors, vec![root, a]);
    assert_eq!(attr(&p, a).children, vec![a1, a2]);
    assert_eq!(attr(&p, a).allocated.cpu(), 2000);
    assert_eq!(attr(&p, a).request.cpu(), 3000);
    assert_eq!(attr(&p, root).allocated.cpu(), 2000);
    // Root guarantees and deserves what its children do.
    assert_eq!(attr(&p, root).guarantee.cpu(), 4000);
    assert_eq!(attr(&p, root).deserved.cpu(), 6000);
    assert_eq!(attr(&p, root).real_capability.cpu(), UNBOUNDED);
    // a1 inherits a's cpu capability; a's limit less a1's guarantee is left to a2.
    assert_eq!(attr(&p, a1).capability.cpu(), 8000);
    assert_eq!(attr(&p, a).real_capability.cpu(), 8000);
    assert_eq!(attr(&p, a1).real_capability.cpu(), 8000);
    assert_eq!(attr(&p, a2).real_capability.cpu(), 7000);

    p.on_allocate(&s, task(&s, "j1-a-1"));
    assert_eq!(attr(&p, a1).allocated.cpu(), 3000);
    assert_eq!(attr(&p, a).allocated.cpu(), 3000);
    assert_eq!(attr(&p, root).allocated.cpu(), 3000);
    // As in Volcano, only the leaf's share moves within a session; ancestors keep the share
    // they had at session open, which orders sibling subtrees.
    assert_eq!(attr(&p, a).share, 0.5);
    p.on_deallocate(&s, task(&s, "j1-a-1"));
    assert_eq!(attr(&p, root).allocated.cpu(), 2000);
    assert_eq!(attr(&p, a).share, 0.5);
}

#[test]
fn ancestors_limit_allocation_and_admission_and_only_leaves_run_jobs() {
    let s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue("p", "capability: {cpu: '4'}")
        .queue("p1", "parent: p")
        .queue("p2", "parent: p")
        .job("j2", "p2", "Running", Some("{cpu: '3'}"))
        .running("j2-a-0", "j2", "{cpu: '3'}", "n1")
        .job("j1", "p1", "Inqueue", None)
        .pending("j1-a-0", "j1", "{cpu: '2'}")
        .pending("j1-a-1", "j1", "{cpu: '1'}")
        .job("big", "p1", "Pending", Some("{cpu: '2'}"))
        .snapshot();
    let p = hierarchical(&s);
    let (pq, p1) = (q(&s, "p"), q(&s, "p1"));

    assert_eq!(
        p.allocatable(&s, p1, task(&s, "j1-a-0")),
        Some(Err(
            "ancestor queue p of queue p1 would exceed its capacity: cpu allocated 3 + task 2 > limit 4"
                .into()
        ))
    );
    assert_eq!(p.allocatable(&s, p1, task(&s, "j1-a-1")), Some(Ok(())));
    assert_eq!(
        p.allocatable(&s, pq, task(&s, "j1-a-1")),
        Some(Err(
            "queue p is not a leaf queue (child queues: p1, p2); only leaf queues run jobs".into()
        ))
    );
    let big = p.job_enqueueable(&s, job(&s, "big")).unwrap();
    assert_eq!(big.vote, Vote::Reject);
    assert_eq!(
        big.reason.as_deref(),
        Some(
            "ancestor queue p of queue p1 resource quota insufficient: cpu minResources 2 + allocated 3 + admitted 0 - elastic 0 > limit 4"
        )
    );
}

#[test]
fn leaves_compare_as_the_siblings_below_their_common_ancestor() {
    let s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue("pa", "deserved: {cpu: '4'}")
        .queue("pa1", "parent: pa, deserved: {cpu: '2'}")
        .queue("pa2", "parent: pa, deserved: {cpu: '2'}")
        .queue("pb", "deserved: {cpu: '4'}")
        .queue("pb1", "parent: pb, deserved: {cpu: '4'}")
        .job("ja", "pa1", "Running", None)
        .running("ja-a-0", "ja", "{cpu: '2'}", "n1")
        .job("jb", "pb1", "Running", None)
        .running("jb-a-0", "jb", "{cpu: '3'}", "n1")
        .snapshot();
    let p = hierarchical(&s);
    let order = |l: &str, r: &str| p.queue_order(&s, q(&s, l), q(&s, r));

    // pa1 holds its whole deserved share, but its subtree pa (2 of 4) is below pb (3 of 4).
    assert_eq!(order("pa1", "pb1"), Some(Ordering::Less));
    assert_eq!(order("pa1", "pa2"), Some(Ordering::Greater));
    assert_eq!(order("pa1", "pa"), Some(Ordering::Less));
    assert_eq!(order("pa", "pb"), Some(Ordering::Less));
    // A preemptor in pa1 takes from its sibling pa2 before its cousin pb1.
    let victim_order =
        |l: &str, r: &str| p.victim_queue_order(&s, q(&s, l), q(&s, r), q(&s, "pa1"));
    assert_eq!(victim_order("pa2", "pb1"), Some(Ordering::Less));
    assert_eq!(victim_order("pb1", "pa2"), Some(Ordering::Greater));
}

#[test]
fn ancestor_reclaim_level_looks_at_parents() {
    let s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue("pa", "deserved: {cpu: '4'}")
        .queue("pa1", "parent: pa, deserved: {cpu: '1'}")
        .queue("pb", "deserved: {cpu: '6'}")
        .queue("pb1", "parent: pb, deserved: {cpu: '1'}")
        .job("ja", "pa1", "Running", None)
        .running("ja-a-0", "ja", "{cpu: '1'}", "n1")
        .pending("ja-a-1", "ja", "{cpu: '1'}")
        .job("jb", "pb1", "Running", None)
        .running("jb-a-0", "jb", "{cpu: '1'}", "n1")
        .running("jb-a-1", "jb", "{cpu: '1'}", "n1")
        .snapshot();
    let reclaimer = task(&s, "ja-a-1");
    let victims = [task(&s, "jb-a-0"), task(&s, "jb-a-1")];

    let leaf_only = hierarchical(&s);
    // pa1 is at its deserved share: on its own it may not reclaim.
    assert_eq!(
        leaf_only.preemptive(&s, q(&s, "pa1"), reclaimer),
        Some(false)
    );
    // pb1 holds 2 of its 1 deserved: one task may go.
    assert_eq!(
        leaf_only.reclaimable(&s, reclaimer, &victims),
        Some(vec![victims[0]])
    );

    let one_up = plugin_with(
        &s,
        "    enableHierarchy: true\n    arguments: {ancestorReclaimLevel: 1}\n",
    );
    // Its parent pa is well below its deserved share.
    assert_eq!(one_up.preemptive(&s, q(&s, "pa1"), reclaimer), Some(true));
    // pb holds 2 of its 6 deserved: no contention at that level, nothing is taken.
    assert_eq!(one_up.reclaimable(&s, reclaimer, &victims), Some(vec![]));
}

#[test]
fn children_asking_more_than_their_parent_are_warned_about_but_still_scheduled() {
    let s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue(
            "b",
            "guarantee: {resource: {cpu: '4'}}, deserved: {cpu: '4'}, capability: {cpu: '8'}",
        )
        .queue(
            "a",
            "parent: b, guarantee: {resource: {cpu: '8'}}, capability: {cpu: '16'}",
        )
        .queue("c", "guarantee: {resource: {cpu: '4'}}")
        .queue("c1", "parent: c, guarantee: {resource: {cpu: '3'}}")
        .queue("c2", "parent: c, guarantee: {resource: {cpu: '3'}}")
        .job("j", "a", "Inqueue", None)
        .pending("j-a-0", "j", "{cpu: '1'}")
        .snapshot();
    let p = hierarchical(&s);
    let messages: Vec<(&str, bool)> = p
        .hierarchy_problems()
        .iter()
        .map(|x| (x.message.as_str(), x.blocks_scheduling))
        .collect();
    assert_eq!(
        messages,
        [
            (
                "queue a: capability cpu 16 exceeds parent b's capability cpu 8; the parent's limit applies",
                false
            ),
            (
                "queue a: guarantee cpu 8 exceeds parent b's guarantee cpu 4",
                false
            ),
            (
                "queue a: deserved cpu 8 exceeds parent b's deserved cpu 4",
                false
            ),
            (
                "queue c: its child queues' guarantee adds up to cpu 6 (c1, c2), more than its own guarantee cpu 4",
                false
            ),
            (
                "queue c: its child queues' deserved adds up to cpu 6 (c1, c2), more than its own deserved cpu 4",
                false
            ),
        ]
    );
    // Limits stay non-negative and the parent's applies.
    assert_eq!(
        p.queue_attr(q(&s, "a")).unwrap().real_capability.cpu(),
        8000
    );
    assert_eq!(
        p.allocatable(&s, q(&s, "a"), task(&s, "j-a-0")),
        Some(Ok(()))
    );
}

#[test]
fn jobs_in_a_parent_queue_stop_scheduling_with_the_reason() {
    let s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue("p", "")
        .queue("c", "parent: p")
        .job("jp", "p", "Inqueue", None)
        .pending("jp-a-0", "jp", "{cpu: '1'}")
        .job("jd", "default", "Pending", Some("{cpu: '1'}"))
        .pending("jd-a-0", "jd", "{cpu: '1'}")
        .snapshot();
    let p = hierarchical(&s);
    let why = "capacity plugin schedules nothing: the queue hierarchy is invalid: queue p has jobs but is not a leaf queue (child queues: c); jobs must be submitted to leaf queues";

    let d = q(&s, "default");
    assert_eq!(
        p.allocatable(&s, d, task(&s, "jd-a-0")),
        Some(Err(why.into()))
    );
    let v = p.job_enqueueable(&s, job(&s, "jd")).unwrap();
    assert_eq!((v.vote, v.reason.as_deref()), (Vote::Reject, Some(why)));
    assert_eq!(p.preemptive(&s, d, task(&s, "jd-a-0")), Some(false));
    assert_eq!(
        p.reclaimable(&s, task(&s, "jd-a-0"), &[task(&s, "jp-a-0")]),
        Some(vec![])
    );
    assert_eq!(p.queue_order(&s, d, q(&s, "c")), None);
}

#[test]
fn cycles_and_missing_parents_are_reported_not_followed() {
    let mut s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue("x", "")
        .queue("y", "")
        .queue("z", "")
        .queue("w", "")
        .job("jd", "default", "Inqueue", None)
        .pending("jd-a-0", "jd", "{cpu: '1'}")
        .snapshot();
    let (x, y, z, w) = (q(&s, "x"), q(&s, "y"), q(&s, "z"), q(&s, "w"));
    s.queue_mut(x).parent = "y".into();
    s.queue_mut(y).parent = "x".into();
    s.queue_mut(z).parent = "z".into();
    s.queue_mut(w).parent = "nope".into();

    let problems = check_hierarchy(&s);
    let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "queue w: parent queue nope does not exist",
            "queue x: its parents form a cycle (x -> y -> x) that never reaches root",
            "queue z: its parents form a cycle (z -> z) that never reaches root",
        ]
    );
    assert!(problems.iter().all(|p| p.blocks_scheduling));

    let p = hierarchical(&s);
    let Some(Err(why)) = p.allocatable(&s, q(&s, "default"), task(&s, "jd-a-0")) else {
        panic!("an invalid tree must refuse allocation");
    };
    assert!(why.contains("parent queue nope does not exist"), "{why}");
    assert!(why.contains("(x -> y -> x)"), "{why}");
    for qid in s.queue_ids() {
        let share = p.queue_attr(qid).unwrap().share;
        assert!(share.is_finite() && share >= 0.0);
    }
    // The same snapshot in flat mode knows nothing of parents and schedules normally.
    let flat = super::flat(&s);
    assert_eq!(
        flat.allocatable(&s, q(&s, "default"), task(&s, "jd-a-0")),
        Some(Ok(()))
    );
}

#[test]
fn resources_no_node_offers_are_out_of_reach_without_warnings() {
    let s = cluster()
        .node("n1", "{cpu: '8', memory: 16Gi}")
        .queue("a", "capability: {nvidia.com/gpu: '4'}")
        .job("g", "a", "Pending", Some("{nvidia.com/gpu: '1'}"))
        .job("c", "a", "Pending", Some("{cpu: '1'}"))
        .snapshot();
    let p = hierarchical(&s);
    assert!(p.hierarchy_problems().is_empty());
    let g = p.job_enqueueable(&s, job(&s, "g")).unwrap();
    assert_eq!(
        g.reason.as_deref(),
        Some(
            "queue a resource quota insufficient: nvidia.com/gpu minResources 1 + allocated 0 + admitted 0 - elastic 0 > limit 0"
        )
    );
    assert_eq!(
        p.job_enqueueable(&s, job(&s, "c")).unwrap().vote,
        Vote::Permit
    );
}

#[test]
fn siblings_deserving_none_of_a_resource_do_not_reclaim_it_from_each_other() {
    let s = cluster()
        .node("n1", "{cpu: '16', memory: 32Gi}")
        .queue("p", "deserved: {cpu: '4'}")
        .queue("l1", "parent: p, deserved: {memory: 1Gi}")
        .queue("l2", "parent: p, deserved: {memory: 1Gi}")
        .job("j2", "l2", "Running", None)
        .running("j2-c-0", "j2", "{cpu: '1'}", "n1")
        .job("j1", "l1", "Inqueue", None)
        .pending("j1-c-0", "j1", "{cpu: '1'}")
        .snapshot();
    let (reclaimer, victim) = (task(&s, "j1-c-0"), task(&s, "j2-c-0"));

    // l2 deserves no cpu: its cpu task is an immediate victim.
    let leaf_only = hierarchical(&s);
    assert_eq!(
        leaf_only.reclaimable(&s, reclaimer, &[victim]),
        Some(vec![victim])
    );
    // Under their shared parent neither leaf deserves cpu: there is nothing to settle.
    let one_up = plugin_with(
        &s,
        "    enableHierarchy: true\n    arguments: {ancestorReclaimLevel: 1}\n",
    );
    assert_eq!(one_up.reclaimable(&s, reclaimer, &[victim]), Some(vec![]));
}
