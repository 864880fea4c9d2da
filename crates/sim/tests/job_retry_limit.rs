//! A job the controller cannot reconcile is not retried forever: once the retry budget is
//! spent it is terminated and its resources released, as Volcano does, with one warning.

// Helpers outside #[test] functions drive the cluster; a failure there is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use volcano_controllers::admission;
use volcano_controllers::job::plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::time::Instant;
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

fn cluster(max_retries: u32) -> Cluster {
    let mut s = volcano_api::scenario::load_str(Path::new("t.yaml"), JOB_IN_MISSING_QUEUE)
        .unwrap_or_else(|e| panic!("{e}"));
    for j in &mut s.objects.jobs {
        admission::default_job(j);
    }
    s.objects
        .queues
        .retain(|q| q.metadata.name.as_deref() != Some("gone"));
    let opts = ManagerOptions {
        retry: RetryPolicy {
            base: Duration::from_millis(10),
            cap: Duration::from_secs(1),
            max_retries: Some(max_retries),
        },
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    };
    Cluster::new(s.objects, opts, Instant(Duration::from_secs(1)))
}

fn phase(c: &Cluster) -> String {
    c.store
        .job("default", "orphan")
        .and_then(|j| j.status.as_ref())
        .map(|s| s.state.phase.clone())
        .unwrap_or_default()
}

fn retry_limit_events(c: &Cluster) -> Vec<String> {
    c.store
        .events
        .iter()
        .filter(|e| e.object == "Job/default/orphan" && e.reason == "ExecuteAction")
        .map(|e| e.message.clone())
        .collect()
}

#[test]
fn a_job_that_keeps_failing_to_sync_is_terminated_after_its_retries() {
    let mut c = cluster(3);
    // Inside the budget the job is only retried.
    c.settle().unwrap();
    c.now = c.now.after(Duration::from_millis(35));
    c.settle().unwrap();
    assert_eq!(phase(&c), "", "still being retried");
    assert!(retry_limit_events(&c).is_empty());

    // 10 + 20 + 40 ms of backoff, then the fourth failure spends the budget.
    for _ in 0..10 {
        c.now = c.now.after(Duration::from_millis(100));
        c.settle().unwrap();
    }
    assert!(
        matches!(phase(&c).as_str(), "Terminating" | "Terminated"),
        "phase {:?}",
        phase(&c)
    );
    let events = retry_limit_events(&c);
    assert_eq!(
        events.len(),
        1,
        "one warning, not one per retry: {events:?}"
    );
    assert!(
        events[0].contains("retry limit reached") && events[0].contains("terminating"),
        "{events:?}"
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
    assert_eq!(phase(&c), "Terminated");
    assert_eq!(retry_limit_events(&c).len(), 1);
    assert_eq!(
        c.controllers.stats().jobs,
        0,
        "the job's key left the queue"
    );
}
