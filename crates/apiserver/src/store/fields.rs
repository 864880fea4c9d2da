//! Unknown fields: what the Kubernetes API server drops from a written object because its
//! schema does not name it, and reports under `fieldValidation` (`Strict` refuses the write,
//! `Warn`, the default, answers with a warning per field, `Ignore` says nothing).
//!
//! Custom resources are judged by the structural schema of their CRD (the ones `volcano_api`
//! generates, which are those installed on a cluster), with the API server's pruning rules:
//! an object schema names its fields, `x-kubernetes-preserve-unknown-fields` keeps the rest,
//! and `apiVersion`, `kind` and `metadata` of an embedded resource are always known. Pods are
//! judged by their OpenAPI schema (that of `k8s-openapi`, Kubernetes 1.33). Other kinds keep
//! every field.

use std::collections::HashMap;
use std::sync::OnceLock;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::kinds::KindInfo;

/// The fields an embedded resource (and every object's root) always has.
const META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// A schema to prune by, and how to read it.
struct Judge {
    schema: Value,
    /// A structural schema (a CRD's): an object schema without properties has no fields. An
    /// OpenAPI schema of a built-in type: such a schema takes any object.
    structural: bool,
}

/// How `fieldValidation` asks the server to treat unknown fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and warn (the default).
    Warn,
    /// Refuse the write.
    Strict,
}

impl FieldValidation {
    /// Reads the query parameter; absent or empty is `Warn`, as in Kubernetes.
    pub fn parse(param: Option<&str>) -> Result<FieldValidation, String> {
        match param.unwrap_or("") {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(format!(
                "fieldValidation: Unsupported value: \"{other}\": supported values: \"Ignore\", \"Strict\", \"Warn\""
            )),
        }
    }
}

fn inline_schema<T: JsonSchema>() -> Value {
    SchemaSettings::openapi3()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The judges by qualified resource (`pods`, `jobs.batch.volcano.sh`).
fn judges() -> &'static HashMap<String, Judge> {
    static JUDGES: OnceLock<HashMap<String, Judge>> = OnceLock::new();
    JUDGES.get_or_init(|| {
        let mut out = HashMap::new();
        out.insert(
            "pods".to_string(),
            Judge {
                schema: inline_schema::<Pod>(),
                structural: false,
            },
        );
        // Our CRDs are built from our own types; if that ever failed, custom resources would
        // keep every field, which is what this server did before it pruned.
        let crds = volcano_api::crds::crds().unwrap_or_default();
        for crd in crds {
            let Ok(crd) = serde_json::to_value(&crd) else {
                continue;
            };
            let group = crd.pointer("/spec/group").and_then(Value::as_str);
            let plural = crd.pointer("/spec/names/plural").and_then(Value::as_str);
            let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
            let (Some(group), Some(plural), Some(versions)) = (group, plural, versions) else {
                continue;
            };
            let served = versions
                .iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .or_else(|| versions.first());
            if let Some(schema) = served.and_then(|v| v.pointer("/schema/openAPIV3Schema")) {
                let judge = Judge {
                    schema: schema.clone(),
                    structural: true,
                };
                out.insert(format!("{plural}.{group}"), judge);
            }
        }
        out
    })
}

/// The structural schema of a custom resource kind, if it is one of ours.
pub fn crd_schema(kind: &KindInfo) -> Option<&'static Value> {
    judges()
        .get(&kind.qualified())
        .filter(|j| j.structural)
        .map(|j| &j.schema)
}

fn object_meta() -> &'static Value {
    static META: OnceLock<Value> = OnceLock::new();
    META.get_or_init(inline_schema::<ObjectMeta>)
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

/// The sub-schemas a value must also satisfy (`allOf`, `anyOf`, `oneOf`), whose fields count.
fn alternatives(schema: &Value) -> impl Iterator<Item = &Value> {
    ["allOf", "anyOf", "oneOf"]
        .into_iter()
        .filter_map(|k| schema.get(k).and_then(Value::as_array))
        .flatten()
}

/// The schema of field `key` of an object under `schema`: `Ok(Some)` to descend, `Ok(None)`
/// when anything goes there, `Err` when the field is unknown.
fn field_schema<'s>(
    schema: &'s Value,
    key: &str,
    structural: bool,
) -> Result<Option<&'s Value>, ()> {
    if let Some(p) = schema.get("properties").and_then(|p| p.get(key)) {
        return Ok(Some(p));
    }
    for alt in alternatives(schema) {
        if let Ok(found) = field_schema(alt, key, structural) {
            return Ok(found);
        }
    }
    match schema.get("additionalProperties") {
        Some(extra @ Value::Object(_)) => Ok(Some(extra)),
        Some(Value::Bool(true)) => Ok(None),
        Some(_) => Err(()),
        None if flag(schema, "x-kubernetes-preserve-unknown-fields") => Ok(None),
        None if structural
            || schema.get("properties").is_some()
            || alternatives(schema).next().is_some() =>
        {
            Err(())
        }
        // An OpenAPI object schema without fields (`FieldsV1`, `RawExtension`) takes anything.
        None => Ok(None),
    }
}

/// Removes from `value` every field `schema` does not name, appending their paths to `out`.
fn prune(value: &mut Value, schema: &Value, structural: bool, path: &str, out: &mut Vec<String>) {
    let embedded = flag(schema, "x-kubernetes-embedded-resource");
    match value {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if embedded && META_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                let sub_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match field_schema(schema, &key, structural) {
                    Ok(Some(sub)) => {
                        if let Some(v) = map.get_mut(&key) {
                            prune(v, sub, structural, &sub_path, out);
                        }
                    }
                    Ok(None) => {}
                    Err(()) => {
                        map.remove(&key);
                        out.push(sub_path);
                    }
                }
            }
        }
        Value::Array(items) => {
            let item_schema = schema
                .get("items")
                .or_else(|| alternatives(schema).find_map(|a| a.get("items")));
            if let Some(item_schema) = item_schema {
                for (i, v) in items.iter_mut().enumerate() {
                    prune(v, item_schema, structural, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

/// Drops the fields of `object` that the schema of `kind` does not name and returns their
/// paths, sorted, as the API server reports them (`spec.minAvaliable`,
/// `spec.containers[0].imagePullPolcy`). Kinds without a schema here lose nothing.
pub fn prune_unknown(kind: &KindInfo, object: &mut Value) -> Vec<String> {
    let Some(judge) = judges().get(&kind.qualified()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Value::Object(map) = object {
        if let Some(meta) = map.get_mut("metadata") {
            prune(meta, object_meta(), false, "metadata", &mut out);
        }
        let keys: Vec<String> = map.keys().cloned().collect();
        for key in keys {
            if META_FIELDS.contains(&key.as_str()) {
                continue;
            }
            match field_schema(&judge.schema, &key, judge.structural) {
                Ok(Some(sub)) => {
                    if let Some(v) = map.get_mut(&key) {
                        prune(v, sub, judge.structural, &key, &mut out);
                    }
                }
                Ok(None) => {}
                Err(()) => {
                    map.remove(&key);
                    out.push(key);
                }
            }
        }
    }
    out.sort();
    out
}

/// The message of a write refused for unknown fields: `strict decoding error: unknown field
/// "spec.x", unknown field "spec.y"`.
pub fn strict_error(paths: &[String]) -> String {
    let fields: Vec<String> = paths
        .iter()
        .map(|p| format!("unknown field \"{p}\""))
        .collect();
    format!("strict decoding error: {}", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;
    use serde_json::json;

    #[test]
    fn a_misspelt_job_field_is_unknown_and_dropped() {
        let jobs = kinds::find("jobs").unwrap();
        let mut job = json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "j", "labels": {"a": "b"}, "colour": "red"},
            "spec": {"minAvaliable": 2, "queue": "default", "tasks": [{"name": "t", "replicas": 1,
                "template": {"metadata": {"labels": {"x": "y"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}});
        let unknown = prune_unknown(jobs, &mut job);
        assert_eq!(unknown, ["metadata.colour", "spec.minAvaliable"]);
        assert!(job["spec"].get("minAvaliable").is_none());
        assert_eq!(job["spec"]["queue"], "default");
        assert_eq!(job["metadata"]["labels"]["a"], "b");
        assert_eq!(
            job["spec"]["tasks"][0]["template"]["metadata"]["labels"]["x"],
            "y"
        );
        assert_eq!(
            strict_error(&unknown),
            "strict decoding error: unknown field \"metadata.colour\", unknown field \"spec.minAvaliable\""
        );
    }

    #[test]
    fn pods_are_judged_by_their_openapi_schema() {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"k": "v"}, "managedFields": [
                {"manager": "kubectl", "fieldsV1": {"f:spec": {"f:x": {}}}}]},
            "spec": {"nodeSelector": {"a": "b"}, "containers": [{"name": "c", "image": "busybox",
                "imagePullPolcy": "Always", "resources": {"limits": {"cpu": "1"}},
                "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
                "tolerations": [{"key": "k", "operator": "Exists"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        let before = pod.clone();
        let unknown = prune_unknown(kinds::pods(), &mut pod);
        assert_eq!(unknown, ["spec.containers[0].imagePullPolcy"]);
        let mut expected = before;
        expected["spec"]["containers"][0]
            .as_object_mut()
            .unwrap()
            .remove("imagePullPolcy");
        assert_eq!(pod, expected, "every known field is kept");
    }

    #[test]
    fn kinds_without_a_schema_keep_everything() {
        let mut cm = json!({"metadata": {"name": "c"}, "data": {"a": "b"}, "whatever": 1});
        assert!(prune_unknown(kinds::find("configmaps").unwrap(), &mut cm).is_empty());
        assert_eq!(cm["whatever"], 1);
    }

    #[test]
    fn field_validation_reads_like_kubernetes() {
        assert_eq!(FieldValidation::parse(None), Ok(FieldValidation::Warn));
        assert_eq!(
            FieldValidation::parse(Some("Strict")),
            Ok(FieldValidation::Strict)
        );
        assert!(FieldValidation::parse(Some("strict")).is_err());
    }
}
