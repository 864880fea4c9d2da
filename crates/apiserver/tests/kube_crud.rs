//! kube-rs against the local server: create, get, list, patch, replace, delete and the pod
//! subresources, for Kubernetes and Volcano kinds.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod common;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use kube::api::{
    Api, DeleteParams, EvictParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams,
};
use kube::{Error, Resource, ResourceExt};
use serde_json::json;
use volcano_api::batch::{Job, JobSpec, TaskSpec};
use volcano_api::bus::Command;
use volcano_api::scheduling::{PodGroup, PodGroupSpec, Queue, QueueSpec, QueueStatus};

fn api_code(e: Error) -> (u16, String, String) {
    match e {
        Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("expected an API error, got {other}"),
    }
}

#[tokio::test]
async fn pod_lifecycle_with_errors_like_kubernetes() {
    let t = common::start().await;
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "default");
    let made = pods
        .create(&PostParams::default(), &common::pod("a", &["sleep", "1"]))
        .await
        .unwrap();
    assert!(made.metadata.uid.is_some());
    assert_eq!(
        made.status.and_then(|s| s.phase).as_deref(),
        Some("Pending")
    );

    let err = pods
        .create(&PostParams::default(), &common::pod("a", &[]))
        .await
        .unwrap_err();
    assert_eq!(
        api_code(err),
        (
            409,
            "AlreadyExists".into(),
            "pods \"a\" already exists".into()
        )
    );
    let err = pods.get("missing").await.unwrap_err();
    assert_eq!(
        api_code(err),
        (404, "NotFound".into(), "pods \"missing\" not found".into())
    );
    assert!(pods.get_opt("missing").await.unwrap().is_none());
    let elsewhere: Api<Pod> = Api::namespaced(t.client.clone(), "nowhere");
    let err = elsewhere
        .create(&PostParams::default(), &common::pod("a", &[]))
        .await
        .unwrap_err();
    assert_eq!(api_code(err).2, "namespaces \"nowhere\" not found");

    pods.create(&PostParams::default(), &common::pod("b", &[]))
        .await
        .unwrap();
    let labelled = pods
        .list(&ListParams::default().labels("app=test"))
        .await
        .unwrap();
    assert_eq!(labelled.items.len(), 2);
    assert!(labelled.metadata.resource_version.is_some());
    let named = pods
        .list(&ListParams::default().fields("metadata.name=b"))
        .await
        .unwrap();
    assert_eq!(named.items.len(), 1);

    let patch = json!({"metadata": {"labels": {"tier": "web"}}});
    let patched = pods
        .patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(
        patched.labels().get("tier").map(String::as_str),
        Some("web")
    );
    let strategic = json!({"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}});
    let patched = pods
        .patch("a", &PatchParams::default(), &Patch::Strategic(&strategic))
        .await
        .unwrap();
    let container = &patched.spec.as_ref().unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some("busybox:1.37"));
    assert_eq!(
        container.command.as_deref(),
        Some(&["sleep".to_string(), "1".to_string()][..])
    );

    // A replace based on the object before the patch is stale.
    let mut stale = made_again(&pods, "a").await;
    stale.metadata.resource_version = Some("1".into());
    let err = pods
        .replace("a", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    let (code, reason, message) = api_code(err);
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert!(message.contains("the object has been modified"));

    let deleted = pods.delete("a", &DeleteParams::default()).await.unwrap();
    assert!(deleted.is_left());
    assert!(pods.get_opt("a").await.unwrap().is_none());
    t.server.shutdown().await;
}

async fn made_again(pods: &Api<Pod>, name: &str) -> Pod {
    pods.get(name).await.unwrap()
}

#[tokio::test]
async fn binding_and_eviction_subresources() {
    let t = common::start().await;
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "default");
    pods.create(&PostParams::default(), &common::pod("p", &[]))
        .await
        .unwrap();
    let binding = Binding {
        metadata: ObjectMeta {
            name: Some("p".into()),
            ..ObjectMeta::default()
        },
        target: ObjectReference {
            kind: Some("Node".into()),
            name: Some("n1".into()),
            ..ObjectReference::default()
        },
    };
    let _: serde_json::Value = pods
        .create_subresource("binding", "p", &PostParams::default(), &binding)
        .await
        .unwrap();
    let bound = pods.get("p").await.unwrap();
    assert_eq!(bound.spec.unwrap().node_name.as_deref(), Some("n1"));
    let conditions = bound.status.unwrap().conditions.unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "True")
    );
    let again = pods
        .create_subresource::<_, serde_json::Value>(
            "binding",
            "p",
            &PostParams::default(),
            &binding,
        )
        .await
        .unwrap_err();
    assert_eq!(api_code(again).0, 409);

    // Bound and not finished, the pod is evicted gracefully: it waits for its kubelet (n1 has
    // none here), and a delete with grace period 0 removes it, as kubectl's --force does.
    pods.evict("p", &EvictParams::default()).await.unwrap();
    let terminating = pods.get("p").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(30));
    pods.delete("p", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    assert!(pods.get_opt("p").await.unwrap().is_none());
    assert_eq!(
        api_code(pods.evict("p", &EvictParams::default()).await.unwrap_err()).0,
        404
    );
    t.server.shutdown().await;
}

fn queue(name: &str, weight: i32) -> Queue {
    Queue::new(
        name,
        QueueSpec {
            weight,
            ..QueueSpec::default()
        },
    )
}

#[tokio::test]
async fn queues_are_cluster_scoped_with_a_status_subresource() {
    let t = common::start().await;
    let queues: Api<Queue> = Api::all(t.client.clone());
    let made = queues
        .create(&PostParams::default(), &queue("research", 2))
        .await
        .unwrap();
    assert_eq!(made.metadata.namespace, None);
    assert_eq!(made.metadata.generation, Some(1));

    let status = json!({"status": {"state": "Open"}});
    let opened = queues
        .patch_status("research", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(
        opened
            .status
            .as_ref()
            .map(|s| s.state.to_string())
            .as_deref(),
        Some("Open")
    );
    // The main resource does not change status, and a spec change bumps generation.
    let mut changed = opened.clone();
    changed.spec.weight = 5;
    changed.status = Some(QueueStatus::default());
    let replaced = queues
        .replace("research", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(replaced.spec.weight, 5);
    assert_eq!(replaced.metadata.generation, Some(2));
    assert_eq!(
        replaced.status.map(|s| s.state.to_string()).as_deref(),
        Some("Open")
    );

    let applied = queues
        .patch(
            "team",
            &PatchParams::apply("test"),
            &Patch::Apply(&queue("team", 1)),
        )
        .await
        .unwrap();
    assert_eq!(applied.spec.weight, 1);
    assert_eq!(
        queues
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        4,
        "root and default, which every cluster starts with, research and team"
    );
    t.server.shutdown().await;
}

fn job(name: &str) -> Job {
    let template = serde_json::from_value(
        json!({"spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    )
    .unwrap();
    Job::new(
        name,
        JobSpec {
            min_available: Some(1),
            queue: "default".into(),
            tasks: vec![TaskSpec {
                name: "worker".into(),
                replicas: 1,
                template,
                ..TaskSpec::default()
            }],
            ..JobSpec::default()
        },
    )
}

#[tokio::test]
async fn deleting_a_job_collects_its_pods_and_podgroup() {
    let t = common::start().await;
    let jobs: Api<Job> = Api::namespaced(t.client.clone(), "default");
    let j = jobs
        .create(&PostParams::default(), &job("train"))
        .await
        .unwrap();
    assert_eq!(
        api_code(
            jobs.create(&PostParams::default(), &job("train"))
                .await
                .unwrap_err()
        )
        .2,
        "jobs.batch.volcano.sh \"train\" already exists"
    );
    let owner = j.controller_owner_ref(&()).unwrap();

    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "default");
    let mut p = common::pod("train-worker-0", &[]);
    p.metadata.owner_references = Some(vec![owner.clone()]);
    pods.create(&PostParams::default(), &p).await.unwrap();
    let groups: Api<PodGroup> = Api::namespaced(t.client.clone(), "default");
    let mut pg = PodGroup::new(
        "train-pg",
        PodGroupSpec {
            min_member: 1,
            ..PodGroupSpec::default()
        },
    );
    pg.metadata.owner_references = Some(vec![owner]);
    groups.create(&PostParams::default(), &pg).await.unwrap();

    jobs.delete("train", &DeleteParams::default())
        .await
        .unwrap();
    assert!(pods.get_opt("train-worker-0").await.unwrap().is_none());
    assert!(groups.get_opt("train-pg").await.unwrap().is_none());
    t.server.shutdown().await;
}

#[tokio::test]
async fn commands_use_generate_name() {
    let t = common::start().await;
    let commands: Api<Command> = Api::namespaced(t.client.clone(), "default");
    let c = Command {
        metadata: ObjectMeta {
            generate_name: Some("train-abortjob-".into()),
            ..ObjectMeta::default()
        },
        action: "AbortJob".into(),
        ..Command::default()
    };
    let made = commands.create(&PostParams::default(), &c).await.unwrap();
    let name = made.metadata.name.unwrap();
    assert!(name.starts_with("train-abortjob-") && name.len() == "train-abortjob-".len() + 5);
    assert_eq!(made.action, "AbortJob");
    t.server.shutdown().await;
}

#[tokio::test]
async fn leases_conflict_on_stale_writes() {
    let t = common::start().await;
    let leases: Api<Lease> = Api::namespaced(t.client.clone(), "volcano-system");
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("vc-scheduler".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("a".into()),
            lease_duration_seconds: Some(15),
            ..LeaseSpec::default()
        }),
    };
    let first = leases.create(&PostParams::default(), &lease).await.unwrap();
    let mut by_b = first.clone();
    by_b.spec.as_mut().unwrap().holder_identity = Some("b".into());
    let taken = leases
        .replace("vc-scheduler", &PostParams::default(), &by_b)
        .await
        .unwrap();
    assert_eq!(taken.spec.unwrap().holder_identity.as_deref(), Some("b"));
    let mut by_c = first;
    by_c.spec.as_mut().unwrap().holder_identity = Some("c".into());
    let err = leases
        .replace("vc-scheduler", &PostParams::default(), &by_c)
        .await
        .unwrap_err();
    assert_eq!(api_code(err).0, 409);
    t.server.shutdown().await;
}

#[tokio::test]
async fn malformed_bodies_are_bad_requests() {
    let t = common::start().await;
    let s = &t.server;
    let (code, body) = common::raw(
        s,
        "POST",
        "/api/v1/namespaces/default/pods",
        "application/json",
        b"{not json",
    )
    .await;
    assert_eq!(code, 400);
    assert!(body.contains("\"reason\":\"BadRequest\""), "{body}");
    let (code, _) = common::raw(
        s,
        "PATCH",
        "/api/v1/namespaces/default/pods/x",
        "text/plain",
        b"{}",
    )
    .await;
    assert_eq!(code, 415);
    let (code, _) = common::raw(
        s,
        "PUT",
        "/api/v1/namespaces/default/pods/x",
        "application/json",
        b"[]",
    )
    .await;
    assert_eq!(code, 400);
    let (code, body) = common::raw(s, "GET", "/apis/nothing.io/v1/things", "", b"").await;
    assert_eq!(code, 404);
    assert!(body.contains("the server could not find the requested resource"));
    t.server.shutdown().await;
}

#[tokio::test]
async fn recorded_events_show_in_the_core_events_api() {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let t = common::start().await;
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "default");
    let pod = pods
        .create(&PostParams::default(), &common::pod("p", &[]))
        .await
        .unwrap();
    let reporter = Reporter {
        controller: "volcano-rs-test".into(),
        instance: None,
    };
    let recorder = Recorder::new(t.client.clone(), reporter);
    let event = Event {
        type_: EventType::Normal,
        reason: "Scheduled".into(),
        note: Some("assigned to n1".into()),
        action: "Binding".into(),
        secondary: None,
    };
    recorder
        .publish(&event, &pod.object_ref(&()))
        .await
        .unwrap();
    // The same event again is a series: a patch of the first.
    recorder
        .publish(&event, &pod.object_ref(&()))
        .await
        .unwrap();
    let events: Api<CoreEvent> = Api::namespaced(t.client.clone(), "default");
    let about_p = events
        .list(&ListParams::default().fields("involvedObject.name=p"))
        .await
        .unwrap();
    assert_eq!(about_p.items.len(), 1);
    let e = &about_p.items[0];
    assert_eq!(e.message.as_deref(), Some("assigned to n1"));
    assert_eq!(e.reporting_component.as_deref(), Some("volcano-rs-test"));
    assert_eq!(e.series.as_ref().and_then(|s| s.count), Some(2));
    t.server.shutdown().await;
}
