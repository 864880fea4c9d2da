//! A write the API server refuses for a lasting reason (an RBAC verb missing, a pod template a
//! real server finds invalid): the user is told on the Job at once, the turn is not hammered
//! with fast retries, and the job is never terminated for it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use volcano_api::event::EventType;
use volcano_api::{NamespacedName, ObjectKind, ObjectRef};
use volcano_controllers::admission;
use volcano_controllers::change::Change;
use volcano_controllers::job::controller::{REFUSED_FIRST_RETRY, REFUSED_RETRY, Refusal};
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::{ControllerManager, ManagerOptions, WorkKey};
use volcano_controllers::time::Instant;
use volcano_controllers::view::ClusterView;
use volcano_controllers::workqueue::RetryPolicy;

const JOB: &str = r#"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: default}
spec: {weight: 1}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: gpu, namespace: default}
spec:
  minAvailable: 1
  tasks:
  - name: worker
    replicas: 1
    template:
      spec:
        containers:
        - {name: main, image: x, resources: {requests: {cpu: "1"}}}
"#;

fn refusal(round: usize) -> Refusal {
    if round < 10 {
        Refusal {
            reason: "FailedCreate",
            what: "create Pod default/gpu-worker-0".into(),
            message: "Pod \"gpu-worker-0\" is invalid: spec.containers[0].resources.limits: \
                      Required value: Limit must be set for non overcommitable resources (422 \
                      Invalid)"
                .into(),
        }
    } else {
        Refusal {
            reason: "FailedCreate",
            what: "create Pod default/gpu-worker-0".into(),
            message: "pods \"gpu-worker-0\" is forbidden: exceeded quota (403 Forbidden)".into(),
        }
    }
}

#[test]
fn a_lasting_refusal_is_told_on_the_job_at_once_and_never_terminates_it() {
    let mut scenario = volcano_api::scenario::load_str(Path::new("t.yaml"), JOB).unwrap();
    for j in &mut scenario.objects.jobs {
        admission::default_job(j);
    }
    let store = volcano_api::ObjectStore::new(scenario.objects);
    let view = ClusterView::new(&store);
    let mut m = ControllerManager::new(ManagerOptions {
        retry: RetryPolicy {
            base: Duration::from_millis(5),
            cap: Duration::from_secs(1),
            max_retries: Some(3),
        },
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    });
    m.relist(&view);
    let mut now = Instant(Duration::from_secs(100));
    let mut told = Vec::new();
    // Twelve refusals in a row: with the fast retry budget of 3, the job would have been
    // terminated after the fourth. The first ten are one refusal, the last two another.
    let mut wait = REFUSED_FIRST_RETRY;
    for round in 0..12 {
        let work = loop {
            let w = m
                .next(&view, now)
                .unwrap_or_else(|| panic!("round {round}: no turn due"));
            if let WorkKey::Events = w.key {
                told.extend(w.changes.into_iter().filter_map(|c| match c {
                    Change::Event(e) => Some(e),
                    _ => None,
                }));
                continue;
            }
            break w;
        };
        assert!(
            matches!(work.key, WorkKey::Job(_)),
            "round {round}: {:?}",
            work.key
        );
        m.refused(&work.key, &refusal(round), now);
        // Told at once, before any retry, and once for one refusal in a row.
        if round == 0 || round == 10 {
            let events = m.next(&view, now).expect("the event is the next turn");
            assert!(matches!(events.key, WorkKey::Events));
            told.extend(events.changes.into_iter().filter_map(|c| match c {
                Change::Event(e) => Some(e),
                _ => None,
            }));
        }
        assert_eq!(told.len(), if round < 10 { 1 } else { 2 }, "round {round}");
        // Not retried at once: the job's next turn waits, longer each time up to
        // REFUSED_RETRY (the queue controller's own turns may come first).
        let soon = now.after(Duration::from_millis(100));
        while let Some(other) = m.next(&view, soon) {
            assert!(
                !matches!(other.key, WorkKey::Job(_)),
                "round {round}: the job was retried at once"
            );
            m.finish(&other.key, true, soon);
        }
        assert_eq!(m.next_due(), Some(now.after(wait)), "round {round}");
        now = now.after(wait);
        wait = (wait * 2).min(REFUSED_RETRY);
    }
    assert_eq!(wait, REFUSED_RETRY);
    let first = &told[0];
    assert_eq!(
        first.object,
        ObjectRef::new(ObjectKind::Job, NamespacedName::new("default", "gpu"))
    );
    assert_eq!(first.type_, EventType::Warning);
    assert_eq!(first.reason, "FailedCreate");
    assert!(
        first.message.contains("Limit must be set") && first.message.contains("gpu-worker-0"),
        "{}",
        first.message
    );
    assert!(told[1].message.contains("exceeded quota"), "{told:?}");
    assert!(
        told.iter().all(|e| e.reason == "FailedCreate"),
        "the job was given up on: {told:?}"
    );
}
