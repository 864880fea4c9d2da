//! A controller thrown away and rebuilt from the objects (a crash, a failover) repeats
//! nothing; and the controllers' work queues stay bounded by the objects under churn.

// Helpers outside #[test] functions drive the cluster; a failure there is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use volcano_api::{NamespacedName, ObjectKind, ObjectRef, WatchEvent};
use volcano_controllers::admission;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::{ControllerManager, ManagerOptions};
use volcano_controllers::time::Instant;
use volcano_controllers::view::ClusterView;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::Cluster;
use volcano_sim::churn::{self, Churn};

fn options() -> ManagerOptions {
    ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    }
}

fn job(name: &str, cpu: u32) -> String {
    format!(
        r#"
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: default}}
spec:
  minAvailable: 2
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - {{name: main, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}
"#
    )
}

const NODE: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}
"#;

const TAINTED_NODE: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
spec: {taints: [{key: maintenance, effect: NoSchedule}]}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}
"#;

fn load(text: &str) -> volcano_api::Objects {
    let mut s = volcano_api::scenario::load_str(Path::new("t.yaml"), text)
        .unwrap_or_else(|e| panic!("{e}"));
    for j in &mut s.objects.jobs {
        admission::default_job(j);
    }
    s.objects
}

fn round(c: &mut Cluster, conf: &SchedulerConf, i: u32) -> usize {
    c.now = c.now.after(Duration::from_secs(1));
    let settled = c.settle().unwrap();
    let d = c.run_session(conf, &format!("s{i}")).unwrap();
    settled.changes + usize::from(d.changed_anything())
}

/// A gang admitted but unplaceable (its only node is under maintenance), after three rounds.
fn gang_waiting_on_a_tainted_node() -> (Cluster, SchedulerConf) {
    let mut c = Cluster::new(
        load(&format!("{TAINTED_NODE}{}", job("big", 2))),
        options(),
        Instant(Duration::from_secs(1)),
    );
    let conf = SchedulerConf::default_conf();
    for i in 0..3 {
        round(&mut c, &conf, i);
    }
    (c, conf)
}

/// The Volcano Job `namespace/name`, as events name it.
fn job_ref(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new(ObjectKind::Job, NamespacedName::new(namespace, name))
}

/// PodGroupPending warnings of the job `big`.
fn warned(c: &Cluster) -> usize {
    c.store
        .events
        .iter()
        .filter(|e| e.object == job_ref("default", "big") && e.reason == "PodGroupPending")
        .count()
}

#[test]
fn a_rebuilt_controller_emits_nothing_for_running_jobs_and_creates_nothing() {
    // The only node is under maintenance: the gang is admitted but cannot be placed. Then the
    // taint goes and the gang runs, leaving a stale Unschedulable condition behind.
    let (mut c, conf) = gang_waiting_on_a_tainted_node();
    assert_eq!(
        warned(&c),
        1,
        "one warning when the gang became unschedulable"
    );

    let node = volcano_api::NamespacedName::of_kind(
        volcano_api::ObjectKind::Node,
        &c.store.objects().nodes[0].metadata,
    );
    c.store
        .modify::<volcano_api::k8s_openapi::api::core::v1::Node>(&node, |n| {
            if let Some(spec) = n.spec.as_mut() {
                spec.taints = None;
            }
        })
        .unwrap();
    for i in 3..8 {
        round(&mut c, &conf, i);
    }
    let pods: Vec<String> = c
        .store
        .objects()
        .pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    for p in &pods {
        c.set_pod_phase("default", p, "Running").unwrap();
    }
    round(&mut c, &conf, 8);
    c.settle().unwrap();
    let status = c
        .store
        .job("default", "big")
        .unwrap()
        .status
        .clone()
        .unwrap();
    assert_eq!(status.state.phase, "Running");
    let pg = &c.store.objects().pod_groups[0];
    let conds = &pg.status.as_ref().unwrap().conditions;
    assert!(
        conds.iter().any(|c| c.type_ == "Unschedulable"),
        "the PodGroup keeps its old Unschedulable condition: {conds:?}"
    );
    assert_eq!(warned(&c), 1, "no warning while it runs");

    // Crash: a new controller manager lists everything, as after a restart or a failover.
    let events_before = c.store.events.len();
    let objects_before = (
        c.store.objects().pods.len(),
        c.store.objects().pod_groups.len(),
        c.store.owned.len(),
    );
    c.controllers = ControllerManager::new(options());
    c.controllers.relist(&ClusterView::new(c.store.indexed()));
    let settled = c.settle().unwrap();
    assert_eq!(
        c.store.events[events_before..],
        [],
        "a rebuilt controller emits nothing for a running job"
    );
    assert_eq!(settled.changes, 0, "and changes nothing");
    assert_eq!(
        objects_before,
        (
            c.store.objects().pods.len(),
            c.store.objects().pod_groups.len(),
            c.store.owned.len()
        )
    );
}

#[test]
fn work_queues_stay_bounded_by_the_objects_under_conflicting_churn() {
    let mut text = String::from(NODE);
    for i in 0..50 {
        text.push_str(&job(&format!("j{i}"), 1));
    }
    let mut c = Cluster::new(load(&text), options(), Instant(Duration::from_secs(1)));
    c.settle().unwrap();
    let objects = c.store.into_objects();
    let report = churn::run(
        objects,
        options(),
        Churn {
            updates: 20_000,
            over: Duration::from_secs(60),
            conflict_every: 3,
        },
    );
    assert_eq!(report.updates, 20_000);
    assert!(
        report.conflicts * 3 >= report.writes - 2 && report.writes > 10_000,
        "a third of the writes conflict: {report:?}"
    );
    assert!(
        report.peak_job_queue <= 50 && report.peak_queue_queue <= 2,
        "work queues hold at most one entry per object: {report:?}"
    );
}

#[test]
fn a_pod_group_watch_event_delivered_twice_or_late_warns_once() {
    let (mut c, _) = gang_waiting_on_a_tainted_node();
    assert_eq!(warned(&c), 1);
    let unschedulable = c.store.objects().pod_groups[0].clone();
    let mut before = unschedulable.clone();
    if let Some(s) = before.status.as_mut() {
        s.conditions.clear();
    }

    // The same transition again, as a relist or a reconnected watch delivers it.
    let again = WatchEvent::PodGroup(
        Some(Box::new(before.clone())),
        Some(Box::new(unschedulable.clone())),
    );
    c.feed(&[again.clone(), again]);
    c.settle().unwrap();
    assert_eq!(warned(&c), 1, "a duplicated watch event warns no more");

    // A late event: by the time it arrives, the gang has been scheduled.
    let newer = |pg: &mut volcano_api::scheduling::PodGroup, type_: &str, secs: i64| {
        let s = pg.status.get_or_insert_with(Default::default);
        s.conditions
            .push(volcano_api::scheduling::PodGroupCondition {
                type_: type_.to_string(),
                status: "True".to_string(),
                last_transition_time: Some(
                    Instant(Duration::from_secs(100 + secs as u64)).to_time(),
                ),
                ..Default::default()
            });
    };
    let pg = volcano_api::NamespacedName::of(&c.store.objects().pod_groups[0].metadata);
    c.store
        .modify::<volcano_api::scheduling::PodGroup>(&pg, |pg| newer(pg, "Scheduled", 10))
        .unwrap();
    let mut late = unschedulable;
    newer(&mut late, "Unschedulable", 5);
    c.feed(&[WatchEvent::PodGroup(
        Some(Box::new(before)),
        Some(Box::new(late)),
    )]);
    c.settle().unwrap();
    assert_eq!(warned(&c), 1, "a stale watch event warns about nothing");
}
