//! Tests of `job view`'s description.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use volcano_api::batch::{Job, JobStatus};

use super::*;

fn time(s: &str) -> Time {
    serde_json::from_value(serde_json::json!(s)).unwrap()
}

fn job() -> Job {
    let mut job: Job = serde_json::from_value(serde_json::json!({
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": "train", "namespace": "team", "uid": "u-1", "resourceVersion": "7",
            "generation": 1, "creationTimestamp": "2024-03-05T10:00:00Z",
            "labels": {"app": "x"}
        },
        "spec": {
            "minAvailable": 2, "queue": "q1", "schedulerName": "volcano",
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
            "tasks": [{
                "name": "worker", "replicas": 2,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "busybox", "command": ["sleep", "60"],
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}
                }]}}
            }]
        }
    }))
    .unwrap();
    job.status = Some(JobStatus {
        min_available: 2,
        running: 2,
        ..JobStatus::default()
    });
    if let Some(s) = job.status.as_mut() {
        s.state.phase = "Running".into();
    }
    job
}

fn event(name: &str, kind: &str, uid: Option<&str>, reason: &str, count: i32) -> Event {
    Event {
        metadata: ObjectMeta {
            name: Some(format!("{name}.1")),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            kind: Some(kind.into()),
            name: Some(name.into()),
            uid: uid.map(String::from),
            ..ObjectReference::default()
        },
        reason: Some(reason.into()),
        message: Some(" all pods scheduled \n".into()),
        type_: Some("Normal".into()),
        count: Some(count),
        first_timestamp: Some(time("2024-03-05T10:00:00Z")),
        last_timestamp: Some(time("2024-03-05T10:05:00Z")),
        source: Some(EventSource {
            component: Some("vc-controller-manager".into()),
            host: None,
        }),
        ..Event::default()
    }
}

#[test]
fn the_description_reads_like_vcctl() {
    let now = epoch_seconds(&time("2024-03-05T10:10:00Z"));
    let events = vec![event("train", "Job", Some("u-1"), "Scheduled", 3)];
    let text = describe_job(&job(), &events, now);
    let want = "\
Name:         train
Namespace:    team
Labels:       app=x
Annotations:  <none>
API Version:  batch.volcano.sh/v1alpha1
Kind:         Job
Metadata:
  Creation Timestamp:  2024-03-05T10:00:00Z
  Generation:          1
  Resource Version:    7
  UID:                 u-1
Spec:
  Min Available:   2
  Queue:           q1
  Scheduler Name:  volcano
  Policies:
    PodEvicted -> RestartJob
  Tasks:
    Name:      worker
    Replicas:  2
    Template:
      Containers:
        Name:      c
        Image:     busybox
        Command:   sleep 60
        Requests:  cpu=1, memory=1Gi
      Restart Policy:  Never
Status:
  State:
    Phase:  Running
  Min Available:  2
  Running:        2
Events:
  Type    Reason          Age               From                   Message
  ----    ------          ---               ----                   -------
  Normal  Scheduled       5m (x3 over 10m)  vc-controller-manager  all pods scheduled
";
    assert_eq!(text, want, "got:\n{text}");
}

#[test]
fn without_events_it_says_none() {
    let text = describe_job(&job(), &[], 0);
    assert!(text.ends_with("Events:  <none>\n"), "{text}");
}

#[test]
fn only_the_jobs_own_events_are_shown() {
    let events = vec![
        event("train", "Job", Some("u-1"), "Mine", 1),
        event("train", "Job", None, "MineNoUid", 1),
        event("train", "Job", Some("u-old"), "OlderJobSameName", 1),
        event("train", "PodGroup", Some("u-1"), "NotAJob", 1),
        event("other", "Job", None, "OtherJob", 1),
    ];
    let reasons: Vec<String> = events_of(&job(), events)
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert_eq!(reasons, ["Mine", "MineNoUid"]);
}

#[test]
fn a_new_job_has_an_empty_phase_and_status_details_show_when_present() {
    let mut fresh = job();
    fresh.status = None;
    let text = describe_job(&fresh, &[], 0);
    assert!(
        text.contains("\nStatus:\n  State:\n    Phase:\nEvents:"),
        "{text}"
    );

    let mut busy = job();
    let status: JobStatus = serde_json::from_value(serde_json::json!({
        "state": {"phase": "Running"},
        "taskStatusCount": {"worker": {"phase": {"Running": 2, "Pending": 1}}},
        "conditions": [
            {"status": "Pending", "lastTransitionTime": "2024-03-05T10:00:00Z"},
            {"status": "Running", "lastTransitionTime": "2024-03-05T10:01:00Z"}
        ]
    }))
    .unwrap();
    busy.status = Some(status);
    let text = describe_job(&busy, &[], 0);
    let want = "\
  Task Status Count:
    worker:  Pending=1, Running=2
  Conditions:
    Status   Transition Time
    Pending  2024-03-05T10:00:00Z
    Running  2024-03-05T10:01:00Z
";
    assert!(text.contains(want), "{text}");
}
