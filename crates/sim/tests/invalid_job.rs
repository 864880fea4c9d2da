//! On a cluster without Volcano's admission webhook, an invalid Job still reaches the
//! controller: it must create nothing for it, fail it with the webhook's reason, and say so once,
//! even across a controller restart.

// Helpers outside #[test] functions drive the cluster; a failure there is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use volcano_controllers::admission;
use volcano_controllers::job::plugins::PlaceholderSshKeys;
use volcano_controllers::manager::{ControllerManager, ManagerOptions};
use volcano_controllers::time::Instant;
use volcano_controllers::view::ClusterView;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_sim::Cluster;

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

fn options() -> ManagerOptions {
    ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    }
}

fn warnings(c: &Cluster) -> usize {
    c.store
        .events
        .iter()
        .filter(|e| e.object == "Job/default/greedy" && e.reason == "InvalidJob")
        .count()
}

#[test]
fn an_invalid_job_fails_with_the_webhook_reason_and_creates_nothing() {
    let mut s =
        volcano_api::scenario::load_str(Path::new("t.yaml"), JOB).unwrap_or_else(|e| panic!("{e}"));
    for j in &mut s.objects.jobs {
        admission::default_job(j);
        j.spec.min_available = Some(5);
    }
    let mut c = Cluster::new(s.objects, options(), Instant(Duration::from_secs(1)));
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
    assert!(c.store.objects.pod_groups.is_empty());
    assert!(c.store.objects.pods.is_empty());
    assert_eq!(warnings(&c), 1);

    c.controllers = ControllerManager::new(options());
    c.controllers.relist(&ClusterView::new(&c.store.objects));
    c.now = c.now.after(Duration::from_secs(5));
    c.settle().unwrap();
    assert_eq!(warnings(&c), 1, "a restarted controller says nothing again");
    assert!(c.store.objects.pod_groups.is_empty());
}
