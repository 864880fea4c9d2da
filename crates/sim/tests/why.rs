//! Why a job failed when a session evicted its pod: a low-priority Job whose policy aborts it
//! on `PodEvicted` is preempted by a high-priority one, and its failure names the eviction
//! and what took the pod's place; the preemptor's wait names the message it waited under.

// Helpers outside #[test] functions drive the simulation; a failure there is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::simulate::SimOptions;
use volcano_testkit::conf;

const SCENARIO: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 1
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: low, namespace: default}
spec:
  minAvailable: 1
  priorityClassName: low
  policies: [{event: PodEvicted, action: AbortJob}]
  tasks:
  - name: w
    replicas: 2
    template:
      metadata: {annotations: {sim.volcano-rs.io/duration: 1h}}
      spec:
        priorityClassName: low
        containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: high, namespace: default, annotations: {sim.volcano-rs.io/submit-at: 5m}}
spec:
  minAvailable: 1
  priorityClassName: high
  tasks:
  - name: w
    replicas: 1
    template:
      metadata: {annotations: {sim.volcano-rs.io/duration: 10m}}
      spec:
        priorityClassName: high
        containers: [{name: c, image: x, resources: {requests: {cpu: "2"}}}]
"#;

#[test]
fn a_job_aborted_on_eviction_names_the_eviction() {
    let (conf, _) = SchedulerConf::parse(conf::evicting()).unwrap();
    let opts = SimOptions {
        timings: false,
        ..Default::default()
    };
    let m = common::simulate_text("t.yaml", SCENARIO, &conf, &opts);
    let job = |name: &str| m.jobs.iter().find(|j| j.name == name).unwrap();

    let low = job("default/low");
    assert_eq!(low.phase, "Aborted", "{low:?}");
    let f = low.failure.as_ref().expect("an aborted job says why");
    assert_eq!(f.reason, "PodEvicted", "{f:?}");
    assert!(
        f.pod
            .as_deref()
            .is_some_and(|p| p.starts_with("default/low-")),
        "{f:?}"
    );
    assert!(
        f.message.contains("default/high"),
        "names the preemptor: {f:?}"
    );
    assert!(
        f.phases
            .ends_with(&["Aborting".to_string(), "Aborted".to_string()]),
        "{f:?}"
    );
    assert_eq!(f.exit_code, None);

    let high = job("default/high");
    assert_eq!(high.phase, "Completed");
    assert!(high.failure.is_none());
}
