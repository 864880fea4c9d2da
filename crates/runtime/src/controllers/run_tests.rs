//! The controller-manager's loop against a fake API server: it keeps taking watch events and
//! starting turns while another turn's writes are in flight.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use prometheus_client::registry::Registry;
use prost::bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::watch;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;

use super::*;

fn job(name: &str) -> Value {
    json!({
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "resourceVersion": "2"},
        "spec": {"schedulerName": "volcano", "queue": "default", "minAvailable": 2,
            "tasks": [{"name": "worker", "replicas": 2, "template": {"spec": {
                "containers": [{"name": "main", "image": "busybox"}]}}}]},
    })
}

/// Job `a`'s PodGroup, admitted: its pods are due.
fn pod_group_a() -> Value {
    json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "a-uid-a", "namespace": "default", "uid": "pg-a",
            "resourceVersion": "3", "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job", "name": "a", "uid": "uid-a", "controller": true}]},
        "spec": {"minMember": 2, "queue": "default"},
        "status": {"phase": "Inqueue"},
    })
}

/// What the fake server shares between requests.
struct Shared {
    /// `a`'s first pod creation arrived: job `b` is now told on the jobs watch.
    a_writing: watch::Sender<bool>,
    /// Job `b`'s PodGroup was created: `a`'s pod creations are answered.
    b_pod_group: watch::Sender<bool>,
    answered: Mutex<Vec<String>>,
}

/// Waits until `signal` is raised.
async fn raised(signal: &watch::Sender<bool>) {
    let _ = signal.subscribe().wait_for(|up| *up).await;
}

type Answer = http::Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>;

fn answer(code: u16, body: &Value) -> Answer {
    let bytes = Bytes::from(serde_json::to_vec(body).unwrap_or_default());
    let mut r = http::Response::new(http_body_util::Full::new(bytes).boxed());
    *r.status_mut() = http::StatusCode::from_u16(code).unwrap_or_default();
    r
}

/// A watch that says `first` (when given) once `ready` is notified, then nothing, never ending.
fn watch_answer(shared: Arc<Shared>, first: Option<Value>) -> Answer {
    let lines = futures::stream::unfold((shared, first), |(shared, first)| async move {
        match first {
            Some(object) => {
                raised(&shared.a_writing).await;
                let line = format!("{}\n", json!({"type": "ADDED", "object": object}));
                Some((
                    Ok::<_, Infallible>(Frame::data(Bytes::from(line))),
                    (shared, None),
                ))
            }
            None => futures::future::pending().await,
        }
    });
    http::Response::new(StreamBody::new(lines).boxed())
}

async fn serve(shared: Arc<Shared>, req: http::Request<kube::client::Body>) -> Answer {
    let (method, uri) = (req.method().clone(), req.uri().clone());
    let path = uri.path().to_string();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let mut sent: Value = serde_json::from_slice(&body).unwrap_or(json!({}));
    let name = sent["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let note = |code: u16| {
        if let Ok(mut a) = shared.answered.lock() {
            a.push(format!("{code} {method} {path} {name}"));
        }
    };
    if method == http::Method::GET {
        let is_watch = uri.query().is_some_and(|q| q.contains("watch=true"));
        if is_watch {
            let first = path.ends_with("/jobs").then(|| job("b"));
            return watch_answer(shared.clone(), first);
        }
        let items = if path.ends_with("/jobs") {
            vec![job("a")]
        } else if path.ends_with("/podgroups") {
            vec![pod_group_a()]
        } else if path.ends_with("/queues") {
            vec![
                json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                "metadata": {"name": "default", "resourceVersion": "1"},
                "spec": {"weight": 1}, "status": {"state": "Open"}}),
            ]
        } else {
            Vec::new()
        };
        let list = json!({"apiVersion": "v1", "kind": "List",
            "metadata": {"resourceVersion": "5"}, "items": items});
        return answer(200, &list);
    }
    if method == http::Method::POST && path.ends_with("/pods") {
        if name.starts_with("a-") {
            shared.a_writing.send_replace(true);
            if tokio::time::timeout(Duration::from_secs(5), raised(&shared.b_pod_group))
                .await
                .is_err()
            {
                note(500);
                return answer(500, &json!({"kind": "Status", "code": 500}));
            }
        }
    } else if method == http::Method::POST && path.ends_with("/podgroups") && name.starts_with("b-")
    {
        shared.b_pod_group.send_replace(true);
    } else if method == http::Method::PATCH {
        // The object patched, as the server would give it back.
        let job_name = path
            .split("/jobs/")
            .nth(1)
            .and_then(|r| r.split('/').next());
        sent = match job_name {
            Some(j) => job(j),
            None => pod_group_a(),
        };
    }
    sent["metadata"]["resourceVersion"] = "9".into();
    note(201);
    answer(201, &sent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_created_while_anothers_pods_are_written_gets_its_pod_group_meanwhile() {
    let shared = Arc::new(Shared {
        a_writing: watch::channel(false).0,
        b_pod_group: watch::channel(false).0,
        answered: Mutex::default(),
    });
    let server = shared.clone();
    let service = tower::service_fn(move |req| {
        let shared = server.clone();
        async move { Ok::<_, Infallible>(serve(shared, req).await) }
    });
    let client = Client::new(service, "default");
    let runtime = ControllerRuntime::new(
        client,
        ManagerOptions {
            retry: RetryPolicy::default(),
            scheduler_names: vec!["volcano".into()],
            ssh_keys: Box::new(PlaceholderSshKeys),
        },
        "test",
        ControllerMetrics::register(&mut Registry::default()),
    );
    let (stop_tx, stop) = watch::channel(false);
    let run = tokio::spawn(runtime.run(Leadership::always(), Readiness::default(), stop));

    let created = |answered: &[String]| {
        answered
            .iter()
            .filter(|a| a.starts_with("201 POST") && a.contains("/pods a-"))
            .count()
    };
    let mut answered = Vec::new();
    for _ in 0..100 {
        answered = shared
            .answered
            .lock()
            .map(|a| a.clone())
            .unwrap_or_default();
        if created(&answered) == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = stop_tx.send(true);
    let _ = run.await;
    assert_eq!(
        created(&answered),
        2,
        "job a's two pods are created: {answered:#?}"
    );
    assert!(
        !answered.iter().any(|a| a.starts_with("500")),
        "job b's PodGroup was created while job a's pods waited for it, so none timed out: \
         {answered:#?}"
    );
}
