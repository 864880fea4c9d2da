//! The four patch types of the Kubernetes API.
//!
//! - `application/merge-patch+json`: RFC 7386, exactly.
//! - `application/json-patch+json`: RFC 6902, by the `json-patch` crate.
//! - `application/strategic-merge-patch+json`: an approximation of Kubernetes' strategic merge
//!   patch without its Go type information. Maps merge as in a merge patch; the lists Kubernetes
//!   merges by key are merged by key when the field name says which list it is (`containers`,
//!   `initContainers`, `env`, `volumes`, `volumeMounts`, `ports`, `conditions`,
//!   `ownerReferences`, `imagePullSecrets`, `hostAliases`, ...); `finalizers` merge as a set;
//!   every other list is replaced. The directives kubectl sends (`$patch: delete|replace`,
//!   `$deleteFromPrimitiveList/…`) are honoured, `$setElementOrder/…` and `$retainKeys` are
//!   dropped, so no `$` key ever reaches a stored object. A list the real server would merge by
//!   a key not in the table is replaced here.
//! - `application/apply-patch+yaml` (server-side apply): the applied object is merged in with the
//!   strategic rules above, and the object is created if missing. There is no field ownership:
//!   a field removed from the applied configuration stays on the object, and apply never
//!   conflicts with another manager.

use serde_json::{Map, Value};

/// Which patch the `Content-Type` of a PATCH asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml`.
    Apply,
}

impl PatchType {
    /// The patch type of a `Content-Type` header value, parameters ignored.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        match media {
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/json-patch+json" => Some(PatchType::Json),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => {
                Some(PatchType::Apply)
            }
            _ => None,
        }
    }
}

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    /// The body is not a patch of the declared type.
    #[error("the body of the request was in an unknown format: {0}")]
    Malformed(String),
    /// A JSON patch operation failed (missing path, failed `test`).
    #[error("{0}")]
    Failed(String),
}

/// Parses a patch body: JSON, or for server-side apply also YAML (kubectl sends YAML).
pub fn parse(kind: PatchType, body: &[u8]) -> Result<Value, PatchError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => Ok(v),
        Err(e) if kind == PatchType::Apply => serde_yaml_ng::from_slice::<Value>(body)
            .map_err(|y| PatchError::Malformed(format!("neither JSON ({e}) nor YAML ({y})"))),
        Err(e) => Err(PatchError::Malformed(e.to_string())),
    }
}

/// Applies a parsed patch to `target`.
pub fn apply(kind: PatchType, target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    match kind {
        PatchType::Merge => {
            if !patch.is_object() {
                return Err(PatchError::Malformed(
                    "a merge patch must be an object".into(),
                ));
            }
            json_patch::merge(target, patch);
            Ok(())
        }
        PatchType::Json => {
            let ops: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| PatchError::Malformed(e.to_string()))?;
            json_patch::patch(target, &ops).map_err(|e| PatchError::Failed(e.to_string()))
        }
        PatchType::Strategic | PatchType::Apply => {
            if !patch.is_object() {
                return Err(PatchError::Malformed(
                    "a strategic patch must be an object".into(),
                ));
            }
            strategic_merge(target, patch);
            Ok(())
        }
    }
}

/// The key Kubernetes merges a list by, from the list's field name and its elements.
fn merge_key(field: &str, sample: Option<&Value>) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims"
        | "schedulingGates"
        | "readinessGates" => {
            if field == "readinessGates" {
                "conditionType"
            } else {
                "name"
            }
        }
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        // Container ports merge by containerPort, Service ports by port.
        "ports" => {
            if sample.is_some_and(|s| s.get("containerPort").is_some()) {
                "containerPort"
            } else {
                "port"
            }
        }
        "conditions" => "type",
        "ownerReferences" => "uid",
        "hostAliases" => "ip",
        _ => return None,
    })
}

/// Lists of scalars Kubernetes merges as a set.
fn is_set_list(field: &str) -> bool {
    field == "finalizers"
}

fn directive(v: &Value) -> Option<&str> {
    v.get("$patch").and_then(Value::as_str)
}

/// A copy of a patch value without strategic-merge directives, for inserting it as data.
fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|i| directive(i).is_none())
                .map(strip_directives)
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Merges a strategic patch object into `target`.
fn strategic_merge(target: &mut Value, patch: &Value) {
    let Some(patch_map) = patch.as_object() else {
        *target = strip_directives(patch);
        return;
    };
    if directive(patch) == Some("replace") {
        *target = strip_directives(patch);
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Some(map) = target.as_object_mut() else {
        return;
    };
    for (key, value) in patch_map {
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(have)), Some(remove)) = (map.get_mut(field), value.as_array())
            {
                have.retain(|x| !remove.contains(x));
            }
            continue;
        }
        if key.starts_with('$') {
            continue;
        }
        match value {
            Value::Null => {
                map.remove(key);
            }
            Value::Object(_) if directive(value) == Some("delete") => {
                map.remove(key);
            }
            Value::Object(_) => {
                strategic_merge(map.entry(key.clone()).or_insert(Value::Null), value);
            }
            Value::Array(items) => {
                let replace = items.iter().any(|i| directive(i) == Some("replace"));
                let entry = map.entry(key.clone()).or_insert(Value::Null);
                match (entry.as_array_mut(), replace) {
                    (Some(have), false) if is_set_list(key) => {
                        for item in items {
                            if !have.contains(item) {
                                have.push(item.clone());
                            }
                        }
                    }
                    (Some(have), false) => match merge_key(key, items.first()) {
                        Some(k) => merge_list_by_key(have, items, k),
                        None => *entry = strip_directives(value),
                    },
                    _ => *entry = strip_directives(value),
                }
            }
            other => {
                map.insert(key.clone(), other.clone());
            }
        }
    }
}

/// Merges list elements that share the merge key; `$patch: delete` elements remove theirs.
fn merge_list_by_key(have: &mut Vec<Value>, patch: &[Value], key: &str) {
    for item in patch {
        let id = item.get(key);
        let position = id.and_then(|id| have.iter().position(|h| h.get(key) == Some(id)));
        match (directive(item), position) {
            (Some("delete"), Some(i)) => {
                have.remove(i);
            }
            (Some("delete"), None) => {}
            (_, Some(i)) => strategic_merge(&mut have[i], item),
            (_, None) => have.push(strip_directives(item)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_types() {
        assert_eq!(
            PatchType::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchType::Merge)
        );
        assert_eq!(PatchType::from_content_type("application/json"), None);
    }

    #[test]
    fn merge_patch_replaces_lists_and_removes_nulls() {
        let mut doc = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
        apply(
            PatchType::Merge,
            &mut doc,
            &json!({"a": {"b": null, "d": 3}, "l": [3]}),
        )
        .unwrap();
        assert_eq!(doc, json!({"a": {"c": 2, "d": 3}, "l": [3]}));
    }

    #[test]
    fn json_patch_and_its_failures() {
        let mut doc = json!({"spec": {"replicas": 1}});
        let ops = json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]);
        apply(PatchType::Json, &mut doc, &ops).unwrap();
        assert_eq!(doc["spec"]["replicas"], 3);
        let bad = json!([{"op": "test", "path": "/spec/replicas", "value": 1}]);
        assert!(matches!(
            apply(PatchType::Json, &mut doc, &bad),
            Err(PatchError::Failed(_))
        ));
        let garbage = json!({"op": "nope"});
        assert!(matches!(
            apply(PatchType::Json, &mut doc, &garbage),
            Err(PatchError::Malformed(_))
        ));
    }

    #[test]
    fn strategic_merges_containers_by_name_and_honours_directives() {
        let mut doc = json!({"spec": {"containers": [
            {"name": "a", "image": "x:1", "env": [{"name": "E", "value": "1"}]},
            {"name": "b", "image": "y:1"}
        ]}, "metadata": {"finalizers": ["f1"]}});
        let patch = json!({
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
            "spec": {"containers": [
                {"name": "a", "image": "x:2", "env": [{"name": "F", "value": "2"}]},
                {"name": "b", "$patch": "delete"},
                {"name": "c", "image": "z:1"}
            ]},
            "metadata": {"finalizers": ["f2"], "$deleteFromPrimitiveList/finalizers": ["f1"]}
        });
        apply(PatchType::Strategic, &mut doc, &patch).unwrap();
        assert_eq!(
            doc,
            json!({"spec": {"containers": [
                {"name": "a", "image": "x:2",
                 "env": [{"name": "E", "value": "1"}, {"name": "F", "value": "2"}]},
                {"name": "c", "image": "z:1"}
            ]}, "metadata": {"finalizers": ["f2"]}})
        );
    }

    #[test]
    fn apply_accepts_yaml() {
        let v = parse(PatchType::Apply, b"metadata:\n  name: x\n").unwrap();
        assert_eq!(v["metadata"]["name"], "x");
        assert!(parse(PatchType::Merge, b"metadata: {").is_err());
    }
}
