//! Fault injection: crashes, refused writes, duplicated and reordered watch events, nodes
//! that vanish or shrink and pods bound by another scheduler, with the invariants checked
//! after every step of the run. Each fault on its own, all of them at once over many seeds,
//! and the checker itself shown to catch what it is there to catch.

// Helpers outside #[test] functions drive the simulation; a failure there is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use volcano_api::event::{Event, EventType};
use volcano_api::{NamespacedName, ObjectKind, ObjectRef, Objects};
use volcano_controllers::admission;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::framework::Decisions;
use volcano_scheduler::invariants::Violation as Oracle;
use volcano_sim::faults::{FaultCounts, FaultPlan, Invariants, Violation};
use volcano_sim::generate::{self, GenerateSpec};
use volcano_sim::metrics::{FaultReport, SimMetrics};
use volcano_sim::simulate::{SimOptions, simulate};

/// A busy little cluster: 60 gangs of 1-4 pods of 4-16 CPUs over ten minutes on 8 nodes of
/// 64 CPUs, so that faults strike while gangs wait, start and end.
const WORKLOAD: &str = "nodes=8,jobs=60,over=10m,job-size=1-4,pod-cpu=4-16,duration=uniform:1m-5m";

fn options() -> ManagerOptions {
    ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    }
}

fn workload(seed: u64) -> Objects {
    let spec: GenerateSpec = WORKLOAD.parse().unwrap();
    let mut objects = generate::generate(&spec, seed);
    for j in &mut objects.jobs {
        admission::default_job(j);
    }
    objects
}

fn run(objects: Objects, plan: &str) -> SimMetrics {
    let opts = SimOptions {
        timings: false,
        faults: Some(FaultPlan::parse(plan).unwrap_or_else(|e| panic!("{e}"))),
        ..Default::default()
    };
    let conf = SchedulerConf::default_conf();
    simulate(
        objects,
        &Default::default(),
        &conf,
        &opts,
        options(),
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{plan}: {e}"))
}

/// The run's fault report, with every invariant held and every job finished.
fn held(m: &SimMetrics, plan: &str) -> FaultReport {
    let f = m.faults.clone().expect("a run with faults reports them");
    assert!(
        f.violations.is_empty(),
        "{plan}: invariants broken:\n{}",
        f.violations.join("\n")
    );
    assert_eq!(m.summary.unfinished, 0, "{plan}: every job ends");
    assert_eq!(m.summary.jobs, 60, "{plan}");
    f
}

#[test]
fn each_fault_on_its_own_leaves_the_invariants_whole() {
    type Count = fn(&FaultCounts) -> u64;
    let faults: [(&str, Count); 10] = [
        ("controller-crash=5%", |c| c.controller_crashes),
        ("scheduler-crash=30%", |c| c.scheduler_crashes),
        ("conflict=30%", |c| c.conflicts),
        ("bind-failure=30%", |c| c.bind_failures),
        ("status-failure=50%", |c| c.status_failures),
        ("duplicate-watch=100%", |c| c.duplicated_watch_events),
        ("reorder-watch=on", |c| c.reordered_batches),
        ("node-vanish=3", |c| c.nodes_vanished),
        ("node-shrink=4", |c| c.nodes_shrunk),
        ("foreign-pods=6", |c| c.foreign_pods),
    ];
    for (fault, count) in faults {
        let plan = format!("seed=11,none,{fault}");
        let f = held(&run(workload(3), &plan), &plan);
        assert!(count(&f.injected) > 0, "{plan}: the fault struck: {f:?}");
    }
}

#[test]
fn every_fault_at_once_over_many_seeds_leaves_the_invariants_whole() {
    for seed in 0..8 {
        let plan = format!("seed={seed}");
        let f = held(&run(workload(seed), &plan), &plan);
        let i = f.injected;
        assert!(
            i.controller_crashes > 0 && i.conflicts > 0 && i.bind_failures > 0,
            "{plan}: {i:?}"
        );
    }
}

#[test]
fn a_run_with_faults_repeats_exactly_from_its_seed() {
    let a = run(workload(5), "seed=42");
    let b = run(workload(5), "seed=42");
    assert_eq!(a, b);
    let c = run(workload(5), "seed=43");
    assert_ne!(
        a.faults.map(|f| f.injected),
        c.faults.map(|f| f.injected),
        "another seed, other faults"
    );
}

#[test]
fn a_restarted_controller_after_crashes_recreates_no_pod_and_repeats_no_warning() {
    // Crashes at a tenth of all controller writes: a Job's pods are created over several
    // lives of the controller, and each new one lists the cluster and starts over.
    let plan = "seed=5,none,controller-crash=10%";
    let m = run(workload(8), plan);
    let f = held(&m, plan);
    assert!(f.injected.controller_crashes > 20, "{f:?}");
    // Pods are never created twice: a gang of n pods is bound n times unless a pod failed.
    let pods: u64 = m.jobs.iter().map(|j| u64::from(j.pods)).sum();
    assert_eq!(m.summary.pods_bound, pods, "one bind per pod");
}

// ---------------------------------------------------------------------------------------------
// The checker catches what it is there to catch

fn scenario(text: &str) -> Objects {
    volcano_api::scenario::load_str(Path::new("t.yaml"), text)
        .unwrap_or_else(|e| panic!("{e}"))
        .objects
}

const CLUSTER: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: n1
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "10"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: capped
spec:
  weight: 1
  capability: {cpu: "2"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: g
  namespace: default
spec:
  minMember: 2
  queue: capped
---
apiVersion: v1
kind: Pod
metadata:
  name: a
  namespace: default
  annotations:
    scheduling.k8s.io/group-name: g
spec:
  schedulerName: volcano
  containers:
  - name: c
    resources:
      requests: {cpu: "2"}
---
apiVersion: v1
kind: Pod
metadata:
  name: b
  namespace: default
  annotations:
    scheduling.k8s.io/group-name: g
spec:
  schedulerName: volcano
  nodeName: n1
  containers:
  - name: c
    resources:
      requests: {cpu: "3"}
"#;

/// The PodGroup `default/name`, as events name it.
fn pod_group_ref(name: &str) -> ObjectRef {
    ObjectRef::new(ObjectKind::PodGroup, NamespacedName::new("default", name))
}

fn binds(pairs: &[(&str, &str)]) -> Decisions {
    Decisions {
        binds: pairs
            .iter()
            .map(|(p, n)| (NamespacedName::new("default", *p), n.to_string()))
            .collect(),
        ..Default::default()
    }
}

/// What the checker found in a session's decisions: the scheduler's oracle's violations, and
/// nothing of its own kinds (those are about events and the run's end).
fn session_violations(check: &Invariants) -> Vec<Oracle> {
    check
        .violations()
        .iter()
        .map(|v| match v {
            Violation::Session(v) => v.clone(),
            other => panic!("a session check found a run's violation: {other}"),
        })
        .collect()
}

#[test]
fn the_checker_catches_a_double_bind_an_overfull_node_a_broken_gang_and_a_queue_over_capability() {
    let objs = scenario(CLUSTER);
    let mut check = Invariants::new();
    // `b` is already on n1; `a` (2 CPUs) does not fit next to it (3 of 4 CPUs used); the
    // gang needs 2 members ready and has 2 only counting `b`; the capped queue had 3 CPUs in
    // use already, over its 2, so only a bind from within capability would count there.
    check.session(&objs, &binds(&[("a", "n1"), ("b", "n1")]));
    let v = session_violations(&check);
    assert!(
        v.iter()
            .any(|v| matches!(v, Oracle::BoundTwice { pod, .. } if pod == "default/b")),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|v| matches!(v, Oracle::NodeOverAllocatable { node, .. } if node == "n1")),
        "{v:?}"
    );

    // A gang bound below its minMember, into a queue that was within its capability.
    let objs = scenario(
        &CLUSTER
            .replace("  nodeName: n1\n", "")
            .replace("cpu: \"3\"", "cpu: \"1\""),
    );
    let mut check = Invariants::new();
    check.session(&objs, &binds(&[("a", "n1")]));
    let v = session_violations(&check);
    assert!(
        v.iter().any(|v| matches!(
            v,
            Oracle::GangPartlyPlaced {
                ready: 1,
                min_member: 2,
                ..
            }
        )),
        "{v:?}"
    );
    let mut check = Invariants::new();
    check.session(&objs, &binds(&[("a", "n1"), ("b", "n1")]));
    let v = session_violations(&check);
    assert!(
        v.iter()
            .any(|v| matches!(v, Oracle::QueueOverCapability { queue, .. } if queue == "capped")),
        "{v:?}"
    );
    assert!(
        !v.iter()
            .any(|v| matches!(v, Oracle::GangPartlyPlaced { .. })),
        "a whole gang is fine: {v:?}"
    );
}

#[test]
fn the_checker_catches_an_event_repeated_without_a_change_in_between() {
    let objs = scenario(CLUSTER);
    let warn = Event {
        object: pod_group_ref("g"),
        type_: EventType::Warning,
        reason: "Unschedulable".to_string(),
        message: "0/1 nodes are available".to_string(),
    };
    let mut check = Invariants::new();
    let mut events = vec![warn.clone()];
    check.observe(&objs);
    check.events(&events);
    assert!(check.violations().is_empty());

    // The PodGroup changes, then becomes unschedulable again: a second warning is news.
    let mut changed = objs.clone();
    changed.pod_groups[0].status = Some(Default::default());
    changed.pod_groups[0].status.as_mut().unwrap().phase = "Running".to_string();
    check.observe(&changed);
    events.push(warn.clone());
    check.events(&events);
    assert!(check.violations().is_empty(), "{:?}", check.violations());

    // Nothing changes: the same warning again is the same transition reported twice.
    check.observe(&changed);
    events.push(warn);
    check.events(&events);
    assert!(
        matches!(check.violations(), [Violation::EventRepeated { object, .. }] if *object == pod_group_ref("g")),
        "{:?}",
        check.violations()
    );
}

#[test]
fn the_checker_catches_a_job_left_unfinished() {
    let mut objs = workload(1);
    let mut check = Invariants::new();
    objs.jobs.truncate(1);
    check.end(&objs);
    assert!(
        matches!(check.violations(), [Violation::JobNotFinished { .. }]),
        "{:?}",
        check.violations()
    );
}
