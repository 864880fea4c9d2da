//! The resource endpoints: `/api/v1/...` and `/apis/{group}/{version}/...`.
//!
//! The router hands over the rest of the path, which `target` parses; this module then serves
//! the request, or hands a watch to `watch`.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::AppState;
use super::response::{json as json_response, ok};
use super::table::{self, Include};
use super::target::{Params, STREAMS, Target, parse_target};
use super::{unknown, watch};
use crate::error::{ApiError, Reason, success_status};
use crate::store::fields::{self, FieldValidation};
use crate::store::{DeleteOptions, Part, PatchType, Preconditions, Selectors, WriteOptions, patch};

/// `/api/v1/{*rest}`.
pub async fn core(
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (Path(rest), body) = match (path, body) {
        (Ok(p), Ok(b)) => (p, b),
        (Err(e), _) => return ApiError::bad_request(e.body_text()).into_response(),
        (_, Err(e)) => return body_error(e).into_response(),
    };
    dispatch(&state, "", "v1", &rest, method, &uri, &headers, &body).await
}

/// `/apis/{group}/{version}/{*rest}`.
pub async fn grouped(
    State(state): State<AppState>,
    path: Result<Path<(String, String, String)>, PathRejection>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (Path((group, version, rest)), body) = match (path, body) {
        (Ok(p), Ok(b)) => (p, b),
        (Err(e), _) => return ApiError::bad_request(e.body_text()).into_response(),
        (_, Err(e)) => return body_error(e).into_response(),
    };
    dispatch(
        &state, &group, &version, &rest, method, &uri, &headers, &body,
    )
    .await
}

/// A body that could not be read: too large (413, as Kubernetes) or cut off.
fn body_error(e: BytesRejection) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            Reason::RequestEntityTooLarge,
            "the request body is too large",
        )
    } else {
        ApiError::bad_request(e.body_text())
    }
}

#[allow(clippy::too_many_arguments)] // The parts of one HTTP request.
async fn dispatch(
    state: &AppState,
    group: &str,
    version: &str,
    rest: &str,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let target = match parse_target(group, version, rest) {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    let params: Params = Query::try_from_uri(uri).map(|q| q.0).unwrap_or_default();
    let header_str = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let wants_table = table::wants_table(header_str(header::ACCEPT));
    let req = Request {
        state,
        target: &target,
        params: &params,
    };
    if let Some(refused) = state.faults.refuse(&method, &target) {
        return refused.into_response();
    }
    let result = match (&method, target.name.is_some(), target.sub.as_deref()) {
        (&Method::GET, false, None) if is_true(params.get("watch")) => {
            return watch::serve(state, &target, &params, wants_table);
        }
        (&Method::GET, false, None) => req.list(wants_table),
        (&Method::GET, true, None | Some("status")) => req.get(wants_table),
        (&Method::POST, false, None) => req.create(header_str(header::CONTENT_TYPE), body),
        (&Method::POST, true, Some("binding")) => req.bind(header_str(header::CONTENT_TYPE), body),
        (&Method::POST, true, Some("eviction")) => {
            req.evict(header_str(header::CONTENT_TYPE), body)
        }
        (&Method::PUT, true, None | Some("status")) => {
            req.update(header_str(header::CONTENT_TYPE), body)
        }
        (&Method::PATCH, true, None | Some("status")) => {
            req.patch(header_str(header::CONTENT_TYPE), body)
        }
        (_, true, Some(sub)) if STREAMS.contains(&sub) => req.no_containers(sub),
        (&Method::DELETE, true, None) => req.delete(body),
        (&Method::DELETE, false, None) => req.delete_collection(),
        _ => Err(ApiError::new(
            Reason::MethodNotAllowed,
            "the server does not allow this method on the requested resource",
        )),
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

fn is_true(v: Option<&String>) -> bool {
    v.is_some_and(|v| v == "true" || v == "1")
}

/// Parses a request body as a JSON (or YAML) object.
fn parse_body(content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
    let media = content_type.split(';').next().unwrap_or("").trim();
    if media.contains("protobuf") || media.contains("cbor") {
        return Err(ApiError::new(
            Reason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: \
                 application/json, application/yaml (this server does not decode {media})"
            ),
        ));
    }
    let parsed = if media == "application/yaml" {
        serde_yaml_ng::from_slice::<Value>(body).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice::<Value>(body).map_err(|e| e.to_string())
    };
    match parsed {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(ApiError::bad_request(
            "the body of the request was in an unknown format: expected an object",
        )),
        Err(e) => Err(ApiError::bad_request(format!(
            "the body of the request was in an unknown format - accepted media types include: \
             application/json, application/yaml: {e}"
        ))),
    }
}

struct Request<'a> {
    state: &'a AppState,
    target: &'a Target,
    params: &'a Params,
}

impl Request<'_> {
    fn ns(&self) -> Option<&str> {
        self.target.ns.as_deref()
    }

    fn name(&self) -> &str {
        self.target.name.as_deref().unwrap_or("")
    }

    fn part(&self) -> Part {
        if self.target.sub.as_deref() == Some("status") {
            Part::Status
        } else {
            Part::Main
        }
    }

    fn dry_run(&self) -> bool {
        self.params.get("dryRun").is_some_and(|v| !v.is_empty())
    }

    fn field_validation(&self) -> Result<FieldValidation, ApiError> {
        FieldValidation::parse(self.params.get("fieldValidation").map(String::as_str))
            .map_err(ApiError::bad_request)
    }

    /// See [`unknown::prune_body`].
    fn prune(&self, object: &mut Value) -> Result<Vec<String>, ApiError> {
        unknown::prune_body(self.target.kind, self.field_validation()?, object)
    }

    /// The response to a write, with the warnings `fieldValidation` asks for.
    fn written(&self, code: StatusCode, object: &Value, unknown: &[String]) -> Response {
        let mut response = json_response(code, object);
        if let Ok(validation) = self.field_validation() {
            unknown::warn(&mut response, validation, unknown);
        }
        response
    }

    fn selectors(&self) -> Result<Selectors, ApiError> {
        Selectors::parse(
            self.params.get("labelSelector").map(String::as_str),
            self.params.get("fieldSelector").map(String::as_str),
        )
    }

    /// Namespaced kinds are created and changed only through namespaced paths.
    fn require_namespace(&self) -> Result<(), ApiError> {
        if self.target.kind.namespaced && self.target.ns.is_none() {
            return Err(ApiError::no_route());
        }
        Ok(())
    }

    fn list(&self, wants_table: bool) -> Result<Response, ApiError> {
        let kind = self.target.kind;
        let selectors = self.selectors()?;
        let (items, rv) = self
            .state
            .store
            .read(|s| s.list(kind, self.ns(), &selectors));
        if wants_table {
            let include = Include::parse(self.params.get("includeObject").map(String::as_str));
            let now = self.state.store.now();
            let t = table::table(kind, items.iter().map(|v| &**v), Some(rv), include, now);
            return Ok(ok(&t));
        }
        let items: Vec<&Value> = items.iter().map(|v| &**v).collect();
        Ok(ok(&json!({
            "kind": format!("{}List", kind.kind),
            "apiVersion": kind.api_version(),
            "metadata": {"resourceVersion": rv.to_string()},
            "items": items,
        })))
    }

    fn get(&self, wants_table: bool) -> Result<Response, ApiError> {
        let kind = self.target.kind;
        let object = self
            .state
            .store
            .read(|s| s.get(kind, self.ns(), self.name()))?;
        if wants_table {
            let include = Include::parse(self.params.get("includeObject").map(String::as_str));
            let t = table::table(kind, [&*object], None, include, self.state.store.now());
            return Ok(ok(&t));
        }
        Ok(ok(&object))
    }

    fn create(&self, content_type: &str, body: &[u8]) -> Result<Response, ApiError> {
        self.require_namespace()?;
        let mut object = parse_body(content_type, body)?;
        let unknown = self.prune(&mut object)?;
        let kind = self.target.kind;
        let made = self
            .state
            .store
            .write(self.dry_run(), |s, w| s.create(kind, self.ns(), object, w))?;
        Ok(self.written(StatusCode::CREATED, &made, &unknown))
    }

    fn update(&self, content_type: &str, body: &[u8]) -> Result<Response, ApiError> {
        let mut object = parse_body(content_type, body)?;
        let unknown = self.prune(&mut object)?;
        let (kind, part) = (self.target.kind, self.part());
        let new = self.state.store.write(self.dry_run(), |s, w| {
            s.update(kind, self.ns(), self.name(), object, part, w)
        })?;
        Ok(self.written(StatusCode::OK, &new, &unknown))
    }

    fn patch(&self, content_type: &str, body: &[u8]) -> Result<Response, ApiError> {
        let patch_type = PatchType::from_content_type(content_type).ok_or_else(|| {
            ApiError::new(
                Reason::UnsupportedMediaType,
                format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type:?})"),
            )
        })?;
        let parsed =
            patch::parse(patch_type, body).map_err(|e| ApiError::bad_request(e.to_string()))?;
        let (kind, part) = (self.target.kind, self.part());
        let validation = self.field_validation()?;
        let (ns, name) = (self.ns(), self.name());
        let (created, new, unknown) = self.state.store.write(self.dry_run(), |s, w| {
            let old = s.get(kind, ns, name).ok();
            let existed = old.is_some();
            // The fields a patch leaves are judged on the patched object, as Kubernetes does.
            let probe = WriteOptions {
                dry_run: true,
                ..*w
            };
            let patched = s.patch(kind, ns, name, patch_type, &parsed, part, &probe)?;
            let mut pruned = (*patched).clone();
            let mut unknown = fields::prune_unknown(kind, &mut pruned);
            // What the stored object already held is not the patch's doing: this server writes
            // some objects itself (a kubelet's status), and the schema here may be older.
            if let Some(old) = old.filter(|_| !unknown.is_empty()) {
                let before = fields::prune_unknown(kind, &mut (*old).clone());
                unknown.retain(|f| !before.contains(f));
            }
            if unknown.is_empty() {
                let new = s.patch(kind, ns, name, patch_type, &parsed, part, w)?;
                return Ok((!existed, new, unknown));
            }
            if validation == FieldValidation::Strict {
                return Err(unknown::strict_patch_error(&patched, &unknown));
            }
            let new = if existed {
                s.update(kind, ns, name, pruned, part, w)?
            } else {
                s.create(kind, ns, pruned, w)?
            };
            Ok((!existed, new, unknown))
        })?;
        let code = if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        Ok(self.written(code, &new, &unknown))
    }

    /// The `DeleteOptions` of a request: its body (if any) and the `gracePeriodSeconds` query
    /// parameter, which wins as in Kubernetes.
    fn delete_options(&self, options: &Value) -> Result<DeleteOptions, ApiError> {
        let text = |pointer: &str| {
            options
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let mut grace = options.get("gracePeriodSeconds").and_then(Value::as_i64);
        if let Some(param) = self.params.get("gracePeriodSeconds") {
            grace = Some(param.parse().map_err(|_| {
                ApiError::bad_request(format!(
                    "gracePeriodSeconds: invalid value {param:?}: must be an integer"
                ))
            })?);
        }
        Ok(DeleteOptions {
            preconditions: Preconditions {
                uid: text("/preconditions/uid"),
                resource_version: text("/preconditions/resourceVersion"),
            },
            grace_period_seconds: grace,
        })
    }

    fn delete(&self, body: &[u8]) -> Result<Response, ApiError> {
        // DeleteOptions are optional; an unreadable body counts as none.
        let options: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let opts = self.delete_options(&options)?;
        let kind = self.target.kind;
        let last = self.state.store.write(self.dry_run(), |s, w| {
            s.delete(kind, self.ns(), self.name(), &opts, w)
        })?;
        Ok(ok(&last))
    }

    fn delete_collection(&self) -> Result<Response, ApiError> {
        let kind = self.target.kind;
        let selectors = self.selectors()?;
        let deleted = self.state.store.write(self.dry_run(), |s, w| {
            s.delete_collection(kind, self.ns(), &selectors, w)
        })?;
        let items: Vec<&Value> = deleted.iter().map(|v| &**v).collect();
        Ok(ok(&json!({
            "kind": format!("{}List", kind.kind),
            "apiVersion": kind.api_version(),
            "metadata": {"resourceVersion": self.state.store.resource_version().to_string()},
            "items": items,
        })))
    }

    fn bind(&self, content_type: &str, body: &[u8]) -> Result<Response, ApiError> {
        let binding = parse_body(content_type, body)?;
        let ns = self.ns().unwrap_or("");
        self.state
            .store
            .write(self.dry_run(), |s, w| s.bind(ns, self.name(), &binding, w))?;
        Ok(json_response(StatusCode::CREATED, &success_status(201)))
    }

    /// `kubectl logs`, `exec`, `attach` and `port-forward`: a clear refusal naming the pod,
    /// rather than an obscure failure to upgrade. 400 is what kubectl prints as
    /// `Error from server (BadRequest): <message>`, as it does for a container not started.
    fn no_containers(&self, sub: &str) -> Result<Response, ApiError> {
        let ns = self.ns().unwrap_or("");
        let kind = self.target.kind;
        self.state
            .store
            .read(|s| s.get(kind, Some(ns), self.name()))?;
        let what = match sub {
            "log" => "it has no logs",
            "exec" => "there is nothing to exec into",
            "attach" => "there is nothing to attach to",
            _ => "there is no port to forward",
        };
        Err(ApiError::bad_request(format!(
            "volcano up runs no containers: pod {ns}/{} is simulated, {what}",
            self.name()
        )))
    }

    fn evict(&self, content_type: &str, body: &[u8]) -> Result<Response, ApiError> {
        // A body this server cannot read is refused (415 for protobuf), not taken for none:
        // its delete options (a uid precondition, say) would be dropped.
        let eviction = parse_body(content_type, body)?;
        let options = eviction
            .get("deleteOptions")
            .cloned()
            .unwrap_or(Value::Null);
        let opts = self.delete_options(&options)?;
        let ns = self.ns().unwrap_or("");
        self.state
            .store
            .write(self.dry_run(), |s, w| s.evict(ns, self.name(), &opts, w))?;
        Ok(json_response(StatusCode::CREATED, &success_status(201)))
    }
}
