//! The validation of a custom resource against the structural schema of its CRD, as the API
//! server does before anything else sees the object: a value of the wrong type, or outside an
//! enumeration, is refused with 422 and one cause per field
//! (`spec.minAvailable: Invalid value: "string": spec.minAvailable in body must be of type
//! integer: "string"`), where a reader of the object would only say that it cannot be read.

use serde_json::Value;

use super::fields::crd_schema;
use crate::error::{ApiError, FieldError, FieldErrorType};
use crate::kinds::KindInfo;

/// The schema type name of a JSON value, as the API server names it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn fits(ty: &str, v: &Value) -> bool {
    match ty {
        // An integer is a number too.
        "number" => v.is_number(),
        other => type_name(v) == other,
    }
}

/// `path: Invalid value: "<type>": path in body must be of type <want>: "<type>"`.
fn type_invalid(path: &str, want: &str, value: &Value) -> FieldError {
    let got = type_name(value);
    FieldError::new(
        FieldErrorType::TypeInvalid,
        path,
        Value::String(got.to_string()),
        format!("{path} in body must be of type {want}: \"{got}\""),
    )
}

fn check(value: &Value, schema: &Value, path: &str, out: &mut Vec<FieldError>) {
    // Null where the schema does not allow it is dropped by the server, not refused.
    if value.is_null() {
        return;
    }
    if schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        if !(fits("integer", value) || value.is_string()) {
            out.push(type_invalid(path, "integer,string", value));
        }
        return;
    }
    if let Some(ty) = schema.get("type").and_then(Value::as_str)
        && !fits(ty, value)
    {
        out.push(type_invalid(path, ty, value));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let listed: Vec<String> = allowed.iter().map(Value::to_string).collect();
        out.push(FieldError::new(
            FieldErrorType::NotSupported,
            path,
            value.clone(),
            format!("supported values: {}", listed.join(", ")),
        ));
    }
    match value {
        Value::Object(map) => {
            missing(map, schema, &format!("{path}."), out);
            for (key, v) in map {
                let sub = schema
                    .get("properties")
                    .and_then(|p| p.get(key))
                    .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()));
                if let Some(sub) = sub {
                    check(v, sub, &format!("{path}.{key}"), out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    check(v, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

/// Records a `Required value` for each field the schema requires that `map` lacks (a null
/// counts as absent), as the server's structural validation does.
fn missing(
    map: &serde_json::Map<String, Value>,
    schema: &Value,
    prefix: &str,
    out: &mut Vec<FieldError>,
) {
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        if map.get(name).is_none_or(Value::is_null) {
            out.push(FieldError::required(format!("{prefix}{name}"), ""));
        }
    }
}

/// Refuses a custom resource whose `spec` or `status` does not match its CRD's schema, or
/// that lacks a field the schema requires (a Queue without `spec`).
pub fn custom_resource(kind: &KindInfo, object: &Value) -> Result<(), ApiError> {
    let Some(schema) = crd_schema(kind) else {
        return Ok(());
    };
    let mut errors = Vec::new();
    if let Value::Object(map) = object {
        missing(map, schema, "", &mut errors);
        for (key, v) in map {
            if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            if let Some(sub) = schema.get("properties").and_then(|p| p.get(key)) {
                check(v, sub, key, &mut errors);
            }
        }
    }
    if errors.is_empty() {
        return Ok(());
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    Err(ApiError::invalid_fields(kind, name, errors))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;
    use serde_json::json;

    #[test]
    fn a_queue_without_its_required_spec_is_refused_as_a_real_server_refuses_it() {
        let queues = kinds::find("queues").unwrap();
        let bare = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                          "metadata": {"name": "bare"}});
        let e = custom_resource(queues, &bare).unwrap_err();
        assert!(e.message.contains("spec: Required value"), "{}", e.message);
        let ok = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                        "metadata": {"name": "q"}, "spec": {"weight": 1}});
        assert!(custom_resource(queues, &ok).is_ok());
    }

    #[test]
    fn a_job_of_the_wrong_shape_is_refused_field_by_field() {
        let jobs = kinds::find("jobs").unwrap();
        let job = json!({"metadata": {"name": "j"}, "spec": {"minAvailable": "two",
            "queue": "default", "tasks": [{"name": "t", "replicas": 1.5,
            "policies": [{"event": "PodExploded", "action": "RestartJob"}]}]}});
        let e = custom_resource(jobs, &job).unwrap_err();
        assert_eq!(e.code(), 422);
        let causes: Vec<String> = e.causes().iter().map(ToString::to_string).collect();
        assert!(
            causes.contains(&"spec.minAvailable: Invalid value: \"string\": spec.minAvailable in body must be of type integer: \"string\"".to_string()),
            "{causes:?}"
        );
        assert!(
            causes
                .iter()
                .any(|c| c.starts_with("spec.tasks[0].replicas: Invalid value: \"number\"")),
            "{causes:?}"
        );
        assert!(
            causes.iter().any(|c| c.starts_with("spec.tasks[0].policies[0].event: Unsupported value: \"PodExploded\": supported values: ")),
            "{causes:?}"
        );
        assert_eq!(e.causes()[0].kind.reason(), "FieldValueTypeInvalid");
        assert!(
            e.message
                .starts_with("Job.batch.volcano.sh \"j\" is invalid: [")
        );
    }

    #[test]
    fn a_well_formed_job_passes() {
        let jobs = kinds::find("jobs").unwrap();
        let job = json!({"metadata": {"name": "j"}, "spec": {"minAvailable": 1, "queue": "q",
            "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": 1}}}]}}}]},
            "status": null});
        custom_resource(jobs, &job).unwrap();
    }
}
