//! Discovery documents (`/api`, `/apis`, resource lists), `/version` and OpenAPI stubs, all
//! derived from the kind table.
//!
//! Only the legacy (unaggregated) discovery format is served, with `Content-Type:
//! application/json`; clients that ask for aggregated discovery (kubectl 1.26+) see the plain
//! type and fall back to fetching each group-version.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::AppState;
use super::response::ok;
use crate::error::ApiError;
use crate::kinds::{self, KINDS, KindInfo};

/// The Kubernetes version the server says it is.
pub const GIT_VERSION: &str = "v1.33.0-volcano-rs";

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn group_version(group: &str, version: &str) -> Value {
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({"groupVersion": gv, "version": version})
}

fn api_group(group: &str, version: &str) -> Value {
    json!({
        "name": group,
        "versions": [group_version(group, version)],
        "preferredVersion": group_version(group, version),
    })
}

fn resource_entries(kind: &KindInfo) -> Vec<Value> {
    let mut main = json!({
        "name": kind.resource,
        "singularName": kind.singular,
        "namespaced": kind.namespaced,
        "kind": kind.kind,
        "verbs": VERBS,
    });
    if !kind.short_names.is_empty() {
        main["shortNames"] = json!(kind.short_names);
    }
    if !kind.categories.is_empty() {
        main["categories"] = json!(kind.categories);
    }
    let sub = |name: &str, kind_name: &str, verbs: &[&str]| {
        json!({
            "name": format!("{}/{name}", kind.resource),
            "singularName": "",
            "namespaced": kind.namespaced,
            "kind": kind_name,
            "verbs": verbs,
        })
    };
    let mut out = vec![main];
    if std::ptr::eq(kind, kinds::pods()) {
        out.push(sub("binding", "Binding", &["create"]));
        let mut eviction = sub("eviction", "Eviction", &["create"]);
        eviction["group"] = json!("policy");
        eviction["version"] = json!("v1");
        out.push(eviction);
        // Served so that kubectl reaches them and prints why a simulated pod has no streams.
        out.push(sub("log", "Pod", &["get"]));
        for (stream, options) in [
            ("exec", "PodExecOptions"),
            ("attach", "PodAttachOptions"),
            ("portforward", "PodPortForwardOptions"),
        ] {
            out.push(sub(stream, options, &["create", "get"]));
        }
    }
    if kind.status_subresource {
        out.push(sub("status", kind.kind, &["get", "patch", "update"]));
    }
    out
}

fn resource_list(group: &str, version: &str) -> Value {
    let resources: Vec<Value> = KINDS
        .iter()
        .filter(|k| k.group == group && k.version == version)
        .flat_map(resource_entries)
        .collect();
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version(group, version)["groupVersion"],
        "resources": resources,
    })
}

/// `GET /api`.
pub async fn api_versions(State(state): State<AppState>) -> Response {
    ok(&json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": state.addr.to_string()}
        ],
    }))
}

/// `GET /api/v1`.
pub async fn core_resources() -> Response {
    ok(&resource_list("", "v1"))
}

/// `GET /apis`.
pub async fn group_list() -> Response {
    let groups: Vec<Value> = kinds::groups()
        .into_iter()
        .map(|(g, v)| api_group(g, v))
        .collect();
    ok(&json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
}

/// `GET /apis/{group}`.
pub async fn group(Path(group): Path<String>) -> Response {
    match kinds::groups().into_iter().find(|(g, _)| *g == group) {
        Some((g, v)) => {
            let mut doc = api_group(g, v);
            doc["kind"] = json!("APIGroup");
            doc["apiVersion"] = json!("v1");
            ok(&doc)
        }
        None => ApiError::no_route().into_response(),
    }
}

/// `GET /apis/{group}/{version}`.
pub async fn group_resources(Path((group, version)): Path<(String, String)>) -> Response {
    if kinds::groups()
        .iter()
        .any(|(g, v)| *g == group && *v == version)
    {
        ok(&resource_list(&group, &version))
    } else {
        ApiError::no_route().into_response()
    }
}

/// `GET /version`.
pub async fn version() -> Response {
    ok(&json!({
        "major": "1",
        "minor": "33",
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, arch()),
    }))
}

/// The architecture by Go's names, which kubectl prints.
fn arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// `GET /healthz`, `/readyz`, `/livez`.
pub async fn healthy() -> &'static str {
    "ok"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_list_has_pod_subresources() {
        let list = resource_list("", "v1");
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        for want in [
            "pods",
            "pods/binding",
            "pods/eviction",
            "pods/status",
            "nodes/status",
        ] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        assert!(!names.contains(&"configmaps/status"));
    }

    #[test]
    fn volcano_jobs_are_discoverable_by_short_name() {
        let list = resource_list("batch.volcano.sh", "v1alpha1");
        assert_eq!(list["groupVersion"], "batch.volcano.sh/v1alpha1");
        assert_eq!(list["resources"][0]["shortNames"], json!(["vcjob", "vj"]));
        assert_eq!(list["resources"][1]["name"], "jobs/status");
    }
}
