//! What a real kube-apiserver refuses, the local one refuses the same way, over HTTP: field
//! causes of a 422, extended resources, unknown fields under `fieldValidation`, graceful
//! deletion of a bound pod, and the streams a simulated pod does not have.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod common;

use common::{raw, raw_with_headers};
use serde_json::{Value, json};

const JSON: &str = "application/json";
const PODS: &str = "/api/v1/namespaces/default/pods";
const JOBS: &str = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs";

fn gpu_pod(name: &str, resources: Value) -> Vec<u8> {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": resources}]}})
    .to_string()
    .into_bytes()
}

fn job(extra: Value) -> Vec<u8> {
    let mut job = json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"queue": "default", "tasks": [{"name": "t", "replicas": 1,
            "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}});
    if let (Some(spec), Value::Object(extra)) = (job["spec"].as_object_mut(), extra) {
        spec.extend(extra);
    }
    job.to_string().into_bytes()
}

fn parse(body: &str) -> Value {
    serde_json::from_str(body).unwrap()
}

#[tokio::test]
async fn an_invalid_pod_gets_422_with_a_cause_per_field() {
    let t = common::start().await;
    let body = gpu_pod(
        "g",
        json!({"requests": {"nvidia.com/gpu": "1", "cpu": "2"}, "limits": {"cpu": "1"}}),
    );
    let (code, status) = raw(&t.server, "POST", PODS, JSON, &body).await;
    assert_eq!(code, 422, "{status}");
    let status = parse(&status);
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "Pod \"g\" is invalid: [spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1, spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources]"
    );
    assert_eq!(status["details"]["kind"], "Pod");
    assert_eq!(status["details"]["name"], "g");
    assert_eq!(
        status["details"]["causes"],
        json!([
            {"reason": "FieldValueInvalid", "field": "spec.containers[0].resources.requests",
             "message": "Invalid value: \"2\": must be less than or equal to cpu limit of 1"},
            {"reason": "FieldValueRequired", "field": "spec.containers[0].resources.limits",
             "message": "Required value: Limit must be set for non overcommitable resources"}
        ])
    );
    // A limit alone is also the request.
    let body = gpu_pod("ok", json!({"limits": {"nvidia.com/gpu": "2"}}));
    let (code, made) = raw(&t.server, "POST", PODS, JSON, &body).await;
    assert_eq!(code, 201, "{made}");
    assert_eq!(
        parse(&made)["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"],
        "2"
    );
    t.server.shutdown().await;
}

#[tokio::test]
async fn unknown_fields_follow_field_validation() {
    let t = common::start().await;
    let misspelt = job(json!({"minAvaliable": 1}));
    let strict = format!("{JOBS}?fieldValidation=Strict");
    let (code, status) = raw(&t.server, "POST", &strict, JSON, &misspelt).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        parse(&status)["message"],
        "Job in version \"v1alpha1\" cannot be handled as a Job: strict decoding error: unknown field \"spec.minAvaliable\""
    );
    let (code, _) = raw(&t.server, "GET", &format!("{JOBS}/j"), JSON, b"").await;
    assert_eq!(code, 404, "a refused job is not stored");

    // Warn is the default: stored without the field, one warning per field.
    let (code, head, made) = raw_with_headers(&t.server, "POST", JOBS, JSON, &misspelt).await;
    assert_eq!(code, 201, "{made}");
    // HTTP/1.1 header names are case-insensitive; this server writes them in lower case.
    let warning = "warning: 299 - \"unknown field \\\"spec.minavaliable\\\"\"";
    assert!(head.to_lowercase().contains(warning), "{head}");
    assert!(parse(&made)["spec"].get("minAvaliable").is_none(), "{made}");

    // A merge patch that leaves an unknown field: 422 about `patch` under Strict.
    let patch = br#"{"spec": {"minAvaliable": 2}}"#;
    let path = format!("{JOBS}/j?fieldValidation=Strict");
    let (code, status) = raw(
        &t.server,
        "PATCH",
        &path,
        "application/merge-patch+json",
        patch,
    )
    .await;
    assert_eq!(code, 422, "{status}");
    let status = parse(&status);
    assert_eq!(status["details"]["causes"][0]["field"], "patch");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .ends_with("strict decoding error: unknown field \"spec.minAvaliable\""),
        "{status}"
    );
    let path = format!("{JOBS}/j?fieldValidation=Ignore");
    let (code, head, patched) = raw_with_headers(
        &t.server,
        "PATCH",
        &path,
        "application/merge-patch+json",
        patch,
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert!(!head.to_lowercase().contains("warning"), "{head}");
    assert!(parse(&patched)["spec"].get("minAvaliable").is_none());

    let path = format!("{JOBS}?fieldValidation=Loud");
    let (code, _) = raw(&t.server, "POST", &path, JSON, &job(json!({}))).await;
    assert_eq!(code, 400);
    t.server.shutdown().await;
}

#[tokio::test]
async fn a_bound_pod_is_deleted_gracefully_unless_grace_is_zero() {
    let t = common::start().await;
    for name in ["a", "b"] {
        let pod = json!({"metadata": {"name": name},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}});
        let (code, _) = raw(&t.server, "POST", PODS, JSON, pod.to_string().as_bytes()).await;
        assert_eq!(code, 201);
    }
    let options = br#"{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 10}"#;
    let (code, marked) = raw(&t.server, "DELETE", &format!("{PODS}/a"), JSON, options).await;
    assert_eq!(code, 200);
    let marked = parse(&marked);
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 10);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let (code, _) = raw(&t.server, "GET", &format!("{PODS}/a"), JSON, b"").await;
    assert_eq!(code, 200, "kept until its kubelet confirms");
    // kubectl delete --force --grace-period=0.
    let path = format!("{PODS}/b?gracePeriodSeconds=0");
    let (code, _) = raw(&t.server, "DELETE", &path, JSON, b"").await;
    assert_eq!(code, 200);
    let (code, _) = raw(&t.server, "GET", &format!("{PODS}/b"), JSON, b"").await;
    assert_eq!(code, 404);
    t.server.shutdown().await;
}

#[tokio::test]
async fn a_simulated_pod_has_no_logs_and_nothing_to_exec() {
    let t = common::start().await;
    let (code, _) = raw(&t.server, "POST", PODS, JSON, &gpu_pod("p", json!({}))).await;
    assert_eq!(code, 201);
    let (code, status) = raw(&t.server, "GET", &format!("{PODS}/p/log"), JSON, b"").await;
    assert_eq!(code, 400);
    assert_eq!(
        parse(&status)["message"],
        "volcano up runs no containers: pod default/p is simulated, it has no logs"
    );
    let path = format!("{PODS}/p/exec?command=ls&stdout=true");
    let (code, status) = raw(&t.server, "POST", &path, JSON, b"").await;
    assert_eq!(code, 400);
    assert!(
        parse(&status)["message"]
            .as_str()
            .unwrap()
            .contains("nothing to exec into")
    );
    let (code, _) = raw(&t.server, "GET", &format!("{PODS}/nope/log"), JSON, b"").await;
    assert_eq!(code, 404);
    t.server.shutdown().await;
}
