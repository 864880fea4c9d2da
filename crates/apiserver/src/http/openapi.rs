//! Just enough OpenAPI for kubectl to apply without `--validate=false`.
//!
//! kubectl (1.27+) asks `/openapi/v3` whether PATCH of the kind takes the `fieldValidation`
//! parameter; if so it leaves validation to the server. Each group-version document here
//! declares exactly that for every kind, with no schemas. The server then judges unknown fields
//! itself (`store::fields`): `fieldValidation=Strict`, kubectl's default, refuses them.
//!
//! Older kubectl (1.20) downloads `/openapi/v2` as protobuf for client-side validation and
//! skips kinds the document does not describe; it gets a valid, empty document. The PATCH
//! operations carry no request body types, so kubectl computes apply patches from its built-in
//! types (strategic merge for Kubernetes kinds, JSON merge for Volcano's), as against a server
//! without OpenAPI schemas.

use axum::body::Body;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::discovery::GIT_VERSION;
use super::response::ok;
use crate::error::ApiError;
use crate::kinds::{KINDS, KindInfo};

/// The media type of the protobuf answer. Not the `...spec.v2@v1.0+protobuf` that clients put
/// in Accept: Go's `mime.ParseMediaType` rejects the `@`, and client-go fails the whole request
/// on a Content-Type it cannot parse. Any parseable type works, the body is read raw.
const PROTOBUF_V2: &str = "application/octet-stream";

/// The group-versions served, as OpenAPI v3 path keys (`api/v1`, `apis/g/v`).
fn group_versions() -> Vec<(String, &'static str, &'static str)> {
    let mut out: Vec<(String, &str, &str)> = Vec::new();
    for k in KINDS {
        let key = if k.group.is_empty() {
            format!("api/{}", k.version)
        } else {
            format!("apis/{}/{}", k.group, k.version)
        };
        if !out.iter().any(|(p, _, _)| *p == key) {
            out.push((key, k.group, k.version));
        }
    }
    out
}

/// A hash of what the documents contain, for the client's cache: the documents only change
/// with the kind table, so the server version and table size stand in for it.
fn doc_hash() -> String {
    format!("{}-{}", GIT_VERSION.replace('.', ""), KINDS.len())
}

/// `GET /openapi/v3`.
pub async fn v3_root() -> Response {
    let paths: Map<String, Value> = group_versions()
        .into_iter()
        .map(|(key, _, _)| {
            let url = format!("/openapi/v3/{key}?hash={}", doc_hash());
            (key, json!({"serverRelativeURL": url}))
        })
        .collect();
    ok(&json!({"paths": paths}))
}

fn object_path(kind: &KindInfo) -> String {
    let prefix = if kind.group.is_empty() {
        format!("/api/{}", kind.version)
    } else {
        format!("/apis/{}/{}", kind.group, kind.version)
    };
    if kind.namespaced {
        format!(
            "{prefix}/namespaces/{{namespace}}/{}/{{name}}",
            kind.resource
        )
    } else {
        format!("{prefix}/{}/{{name}}", kind.resource)
    }
}

/// `GET /openapi/v3/{api/v1 | apis/g/v}`.
pub async fn v3_group_version(Path(path): Path<String>) -> Response {
    let Some((_, group, version)) = group_versions().into_iter().find(|(p, _, _)| *p == path)
    else {
        return ApiError::no_route().into_response();
    };
    let paths: Map<String, Value> = KINDS
        .iter()
        .filter(|k| k.group == group && k.version == version)
        .map(|k| {
            let op = json!({
                "x-kubernetes-group-version-kind":
                    {"group": k.group, "version": k.version, "kind": k.kind},
                "parameters": [
                    {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "OK"}},
            });
            (object_path(k), json!({"patch": op}))
        })
        .collect();
    ok(&json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}

/// Appends a length-delimited protobuf field.
fn proto_bytes(out: &mut Vec<u8>, field: u8, bytes: &[u8]) {
    out.push((field << 3) | 2);
    let mut len = bytes.len();
    while len >= 0x80 {
        out.push((len as u8) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(bytes);
}

/// `GET /openapi/v2`: protobuf (gnostic `openapi_v2.Document` with `swagger` and `info` only)
/// when asked for, else the same as JSON.
pub async fn v2(headers: HeaderMap) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.contains("protobuf") {
        let mut info = Vec::new();
        proto_bytes(&mut info, 1, b"Kubernetes");
        proto_bytes(&mut info, 2, GIT_VERSION.as_bytes());
        let mut doc = Vec::new();
        proto_bytes(&mut doc, 1, b"2.0");
        proto_bytes(&mut doc, 2, &info);
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, PROTOBUF_V2)],
            Body::from(doc),
        )
            .into_response();
    }
    ok(&json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": {},
        "definitions": {},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_version_has_a_document() {
        let gvs = group_versions();
        assert!(gvs.iter().any(|(p, _, _)| p == "api/v1"));
        assert!(
            gvs.iter()
                .any(|(p, _, _)| p == "apis/scheduling.volcano.sh/v1beta1")
        );
        assert_eq!(
            object_path(crate::kinds::find("queues").unwrap()),
            "/apis/scheduling.volcano.sh/v1beta1/queues/{name}"
        );
    }

    #[test]
    fn protobuf_lengths_are_varints() {
        let mut out = Vec::new();
        proto_bytes(&mut out, 1, &[0u8; 200]);
        assert_eq!(&out[..3], &[0x0a, 0xc8, 0x01]);
    }
}
