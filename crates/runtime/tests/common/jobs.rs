//! Volcano Jobs on a test cluster: create them, wait for their phases, read the events
//! about them.

use kube::api::{Api, ListParams, PostParams};
use kube::core::DynamicObject;
use serde_json::Value;
use volcano_api::batch::Job;

use super::eventually;

/// A Job's phase, empty before its first status.
pub fn phase(j: &Job) -> String {
    j.status
        .as_ref()
        .map(|s| s.state.phase.clone())
        .unwrap_or_default()
}

/// Creates the Volcano Job `body` in `default`.
pub async fn create(client: &kube::Client, body: Value) {
    let job: Job = serde_json::from_value(body).unwrap();
    Api::<Job>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
}

/// Waits up to `secs` for Job `name` to reach `want`; the phases seen on the way.
pub async fn wait_phase(client: &kube::Client, name: &str, want: &str, secs: u64) -> Vec<String> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let mut seen: Vec<String> = Vec::new();
    let (ok, _) = eventually(secs, async || {
        let p = phase(&jobs.get(name).await.unwrap());
        if seen.last() != Some(&p) {
            seen.push(p.clone());
        }
        (p == want, ())
    })
    .await;
    assert!(ok, "job {name} never reached {want}; phases seen: {seen:?}");
    seen
}

/// Events (events.k8s.io) about `kind` `name`, as (reason, note, occurrences: a repeat
/// aggregated into the event's series counts as many times as it happened).
pub async fn events_about(
    client: &kube::Client,
    kind: &str,
    name: &str,
) -> Vec<(String, String, u64)> {
    let events: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::discovery::ApiResource::erase::<volcano_api::k8s_openapi::api::events::v1::Event>(
            &(),
        ),
    );
    let s = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|e| s(&e.data, "/regarding/kind") == kind && s(&e.data, "/regarding/name") == name)
        .map(|e| {
            let n = e
                .data
                .pointer("/series/count")
                .and_then(Value::as_u64)
                .unwrap_or(1);
            (s(&e.data, "/reason"), s(&e.data, "/note"), n)
        })
        .collect()
}

/// Asserts that no write for Job `name` was refused (no `Failed*` event on it).
pub async fn assert_no_write_refused(client: &kube::Client, name: &str) {
    let refused: Vec<_> = events_about(client, "Job", name)
        .await
        .into_iter()
        .filter(|(r, _, _)| r.starts_with("Failed"))
        .collect();
    assert!(refused.is_empty(), "writes were refused: {refused:?}");
}
