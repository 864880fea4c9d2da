//! Jobs the job controller cannot run: a Job that keeps failing to reconcile is terminated
//! after its retries, as Volcano does; a Job Volcano's admission webhook would have refused
//! (on a cluster running none) fails at once. Each is reported once, even across a controller
//! restart, and nothing of an invalid Job is created.

// Helpers outside #[test] functions drive the cluster; a failure there is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use volcano_api::{NamespacedName, ObjectKind, ObjectRef, Objects};
use volcano_controllers::admission;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::{ControllerManager, ManagerOptions};
use volcano_controllers::time::Instant;
use volcano_controllers::view::ClusterView;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_sim::Cluster;

// The queue is declared so that the scenario loads, then deleted, as a queue removed from a
// live cluster would be.
const JOB_IN_MISSING_QUEUE: &str = r#"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: gone}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: orphan, namespace: default}
spec:
  queue: gone
  minAvailable: 1
  tasks:
  - name: worker
    replicas: 1
    template:
      spec:
        containers:
        - {name: main, image: x, resources: {requests: {cpu: "1"}}}
"#;

// Loaded valid, then broken in memory, as a Job written straight to the API server would be.
const JOB: &str = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: greedy, namespace: default}
spec:
  minAvailable: 2
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - {name: main, image: x, resources: {requests: {cpu: "1"}}}
"#;

fn options(max_retries: u32) -> ManagerOptions {
    ManagerOptions {
        retry: RetryPolicy {
            base: Duration::from_millis(10),
            cap: Duration::from_secs(1),
            max_retries: Some(max_retries),
        },
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    }
}

/// The objects of `yaml`, Jobs defaulted as admission would, then changed by `edit`.
fn objects(yaml: &str, edit: impl FnOnce(&mut Objects)) -> Objects {
    let mut s = volcano_api::scenario::load_str(Path::new("t.yaml"), yaml)
        .unwrap_or_else(|e| panic!("{e}"));
    for j in &mut s.objects.jobs {
        admission::default_job(j);
    }
    edit(&mut s.objects);
    s.objects
}

fn cluster(objects: Objects, max_retries: u32) -> Cluster {
    Cluster::new(
        objects,
        options(max_retries),
        Instant(Duration::from_secs(1)),
    )
}

/// The Volcano Job `namespace/name`, as events name it.
fn job_ref(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new(ObjectKind::Job, NamespacedName::new(namespace, name))
}

fn events(c: &Cluster, job: &str, reason: &str) -> Vec<String> {
    c.store
        .events
        .iter()
        .filter(|e| e.object == job_ref("default", job) && e.reason == reason)
        .map(|e| e.message.clone())
        .collect()
}

fn phase(c: &Cluster, job: &str) -> String {
    c.store
        .job("default", job)
        .and_then(|j| j.status.as_ref())
        .map(|s| s.state.phase.clone())
        .unwrap_or_default()
}

#[test]
fn a_job_that_keeps_failing_to_sync_is_terminated_after_its_retries() {
    let gone = objects(JOB_IN_MISSING_QUEUE, |o| {
        o.queues
            .retain(|q| q.metadata.name.as_deref() != Some("gone"));
    });
    let mut c = cluster(gone, 3);
    // Inside the budget the job is only retried.
    c.settle().unwrap();
    c.now = c.now.after(Duration::from_millis(35));
    c.settle().unwrap();
    assert_eq!(phase(&c, "orphan"), "", "still being retried");
    assert!(events(&c, "orphan", "ExecuteAction").is_empty());

    // 10 + 20 + 40 ms of backoff, then the fourth failure spends the budget.
    for _ in 0..10 {
        c.now = c.now.after(Duration::from_millis(100));
        c.settle().unwrap();
    }
    assert!(
        matches!(phase(&c, "orphan").as_str(), "Terminating" | "Terminated"),
        "phase {:?}",
        phase(&c, "orphan")
    );
    let warned = events(&c, "orphan", "ExecuteAction");
    assert_eq!(
        warned.len(),
        1,
        "one warning, not one per retry: {warned:?}"
    );
    assert!(
        warned[0].contains("retry limit reached") && warned[0].contains("terminating"),
        "{warned:?}"
    );
    let warning = c
        .store
        .events
        .iter()
        .find(|e| e.reason == "ExecuteAction")
        .unwrap();
    assert_eq!(warning.type_, volcano_api::event::EventType::Warning);

    // Terminated, the job is left alone: nothing more is retried or reported.
    for _ in 0..20 {
        c.now = c.now.after(Duration::from_secs(1));
        c.settle().unwrap();
    }
    assert_eq!(phase(&c, "orphan"), "Terminated");
    assert_eq!(events(&c, "orphan", "ExecuteAction").len(), 1);
    assert_eq!(
        c.controllers.stats().jobs,
        0,
        "the job's key left the queue"
    );
}

#[test]
fn an_invalid_job_fails_with_the_webhook_reason_and_creates_nothing() {
    let invalid = objects(JOB, |o| {
        for j in &mut o.jobs {
            j.spec.min_available = Some(5);
        }
    });
    let mut c = cluster(invalid, 15);
    c.settle().unwrap();
    let status = c
        .store
        .job("default", "greedy")
        .and_then(|j| j.status.clone())
        .unwrap();
    assert_eq!(status.state.phase, "Failed");
    assert_eq!(status.state.reason, "InvalidJob");
    assert!(
        status.state.message.contains("spec.minAvailable"),
        "{}",
        status.state.message
    );
    assert!(c.store.objects().pod_groups.is_empty());
    assert!(c.store.objects().pods.is_empty());
    assert_eq!(events(&c, "greedy", "InvalidJob").len(), 1);

    c.controllers = ControllerManager::new(options(15));
    c.controllers.relist(&ClusterView::new(c.store.indexed()));
    c.now = c.now.after(Duration::from_secs(5));
    c.settle().unwrap();
    assert_eq!(
        events(&c, "greedy", "InvalidJob").len(),
        1,
        "a restarted controller says nothing again"
    );
    assert!(c.store.objects().pod_groups.is_empty());
}
