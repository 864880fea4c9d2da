//! The queue rules and the update rules.

use volcano_api::scheduling::{Queue, QueueSpec, QueueStatus};

use super::super::{check_leaf_queue, check_queue, validate_job_update};
use super::*;

fn queue(name: &str, state: &str) -> Queue {
    let mut q = Queue::new(name, QueueSpec::default());
    q.status = Some(QueueStatus {
        state: state.to_string(),
        ..QueueStatus::default()
    });
    q
}

// ---- queue ----

#[test]
fn open_queues_accept_jobs() {
    assert_eq!(check_queue("q1", Some(&queue("q1", "Open"))), Ok(()));
    assert_eq!(
        check_queue("q1", Some(&Queue::new("q1", QueueSpec::default()))),
        Ok(()),
        "a queue whose state is not written yet counts as Open"
    );
}

#[test]
fn missing_queue() {
    let e = check_queue("q1", None).err();
    assert_eq!(
        e.map(|e| (e.field, e.message)),
        Some((
            "spec.queue".to_string(),
            "unable to find job queue: queue.scheduling.volcano.sh \"q1\" not found".to_string()
        ))
    );
    let e = check_queue("", None).err();
    assert!(e.is_some_and(|e| e.message.contains("\"default\" not found")));
}

#[test]
fn queues_not_open_refuse_jobs() {
    for state in ["Closed", "Closing", "Unknown"] {
        let e = check_queue("q1", Some(&queue("q1", state))).err();
        assert_eq!(
            e.map(|e| (e.field, e.message)),
            Some((
                "spec.queue".to_string(),
                format!(
                    "can only submit job to queue with state `Open`, queue `q1` status is `{state}`"
                )
            ))
        );
    }
}

#[test]
fn root_and_parent_queues_refuse_jobs() {
    let e = check_queue("root", Some(&queue("root", "Open"))).err();
    assert_eq!(
        e.map(|e| e.message),
        Some("can not submit job to root queue".to_string())
    );
    assert_eq!(check_leaf_queue("eng", 0), Ok(()));
    assert_eq!(
        check_leaf_queue("eng", 2).err().map(|e| e.message),
        Some("can only submit job to leaf queue, queue `eng` has 2 child queues".to_string())
    );
}

// ---- update ----

fn update(change: impl FnOnce(&mut Job)) -> Vec<(String, String)> {
    let old = good_job();
    let mut new = old.clone();
    change(&mut new);
    violations(validate_job_update(&old, &new))
}

fn one(field: &str, message: &str) -> Vec<(String, String)> {
    vec![(field.to_string(), message.to_string())]
}

const IMMUTABLE: &str = "job updates may not change fields other than `minAvailable`, \
                         `tasks[*].replicas under spec` and `PriorityClassName`";

#[test]
fn rescaling_and_reprioritising_is_allowed() {
    assert_eq!(
        update(|j| {
            j.spec.tasks[1].replicas = 5;
            j.spec.tasks[1].min_available = Some(4);
            j.spec.min_available = Some(5);
            j.spec.priority_class_name = "high".into();
        }),
        []
    );
}

#[test]
fn other_changes_are_refused_naming_the_field() {
    assert_eq!(
        update(|j| j.spec.queue = "other".into()),
        one("spec.queue", IMMUTABLE)
    );
    assert_eq!(
        update(|j| j.spec.tasks[1].name = "workers".into()),
        one("spec.tasks[1].name", IMMUTABLE)
    );
    assert_eq!(
        update(|j| j.spec.policies.push(on_event("PodFailed", "RestartJob"))),
        one("spec.policies", IMMUTABLE)
    );
    assert_eq!(
        update(|j| {
            if let Some(pod) = j.spec.tasks[0].template.spec.as_mut() {
                pod.containers[0].image = Some("busybox:2".into());
            }
        }),
        one("spec.tasks[0].template.spec.containers[0].image", IMMUTABLE)
    );
}

#[test]
fn filled_in_claim_names_are_not_a_change() {
    let mut old = good_job();
    old.spec.volumes = vec![claim("/data", "")];
    old.spec.volumes[0].volume_claim = Some(serde_json::json!({"storageClassName": "x"}));
    let mut new = old.clone();
    new.spec.volumes[0].volume_claim_name = "train-volume-abcde".into();
    assert_eq!(validate_job_update(&old, &new), Ok(()));
}

#[test]
fn tasks_may_not_be_added_or_removed() {
    assert_eq!(
        update(|j| {
            j.spec.tasks.push(task("eval", 0));
        }),
        one("spec.tasks", "job updates may not add or remove tasks")
    );
}

#[test]
fn updated_counts_must_be_consistent() {
    assert_eq!(
        update(|j| j.spec.tasks[0].replicas = -1),
        vec![
            (
                "spec.tasks[0].replicas".to_string(),
                "'replicas' must be >= 0 in task: ps".to_string()
            ),
            (
                "spec.tasks[0].minAvailable".to_string(),
                "'minAvailable' must be <= 'replicas' in task: ps".to_string()
            ),
            (
                "spec.minAvailable".to_string(),
                "job 'minAvailable' must not be greater than total replicas".to_string()
            ),
        ]
    );
    assert_eq!(
        update(|j| j.spec.tasks[1].min_available = Some(-1)),
        one(
            "spec.tasks[1].minAvailable",
            "'minAvailable' must be >= 0 in task: worker"
        )
    );
    assert_eq!(
        update(|j| j.spec.min_available = Some(-1)),
        one("spec.minAvailable", "job 'minAvailable' must be >= 0")
    );
    assert_eq!(
        update(|j| j.spec.min_available = Some(4)),
        one(
            "spec.minAvailable",
            "job 'minAvailable' must not be greater than total replicas"
        )
    );
}
