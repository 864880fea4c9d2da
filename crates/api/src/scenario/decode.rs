//! From a YAML document to a typed object: kind dispatch, typed deserialization with field
//! paths, metadata defaults, then the checks of one object alone ([`validate`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde_yaml_ng::{Mapping, Value};

use super::documents::RawDocument;
use super::object::{KINDS, KNOWN_KINDS, Kind, Object};
use super::site::Site;
use super::{LoadError, ObjectKey, flow, validate};

/// The namespace of namespaced objects that do not name one, as `kubectl apply` does.
const DEFAULT_NAMESPACE: &str = "default";

/// A typed, checked object with its identity and the site errors about it should name.
#[derive(Debug, Clone)]
pub(super) struct Decoded {
    /// Kind, namespace (defaulted) and name.
    pub(super) key: ObjectKey,
    /// The object.
    pub(super) object: Object,
    /// Its document and label.
    pub(super) site: Site,
}

/// Decodes and checks one document; `None` for an empty document.
pub(super) fn decode(document: RawDocument) -> Result<Option<Decoded>, LoadError> {
    let site = Site::document(document.source);
    let mut map = match document.value {
        Value::Null => return Ok(None),
        Value::Mapping(map) => map,
        other => {
            return Err(site.error(format!(
                "a document must be a Kubernetes object (a mapping with apiVersion, kind and metadata), not {}",
                describe(&other)
            )));
        }
    };
    let kind = kind_of(&site, &map)?;
    let lenient = lenient_key(kind, &map);
    let site = match &lenient {
        Some(key) => site.with_object(key.to_string()),
        None => site.with_object(kind.name()),
    };
    // Without metadata the name check below gives the clearer error.
    if map.get("metadata").is_none_or(Value::is_null) {
        map.insert(Value::from("metadata"), Value::Mapping(Mapping::new()));
    }
    if kind.spec_optional() && map.get("spec").is_none_or(Value::is_null) {
        map.insert(Value::from("spec"), Value::Mapping(Mapping::new()));
    }
    let value = Value::Mapping(map);
    let mut object = match kind {
        Kind::Node => Object::Node(Box::new(typed(&site, value)?)),
        Kind::Pod => Object::Pod(Box::new(typed(&site, value)?)),
        Kind::PodGroup => Object::PodGroup(Box::new(typed(&site, value)?)),
        Kind::Queue => Object::Queue(Box::new(typed(&site, value)?)),
        Kind::Job => Object::Job(Box::new(typed(&site, value)?)),
        Kind::Command => Object::Command(Box::new(typed(&site, value)?)),
        Kind::PriorityClass => Object::PriorityClass(Box::new(typed(&site, value)?)),
        Kind::ConfigMap => Object::ConfigMap(Box::new(typed(&site, value)?)),
        Kind::Namespace => Object::Namespace(Box::new(typed(&site, value)?)),
        Kind::PersistentVolume => Object::PersistentVolume(Box::new(typed(&site, value)?)),
        Kind::PersistentVolumeClaim => {
            Object::PersistentVolumeClaim(Box::new(typed(&site, value)?))
        }
        Kind::StorageClass => Object::StorageClass(Box::new(typed(&site, value)?)),
        Kind::CSINode => Object::CSINode(Box::new(typed(&site, value)?)),
        Kind::ReplicaSet => Object::ReplicaSet(Box::new(typed(&site, value)?)),
        Kind::StatefulSet => Object::StatefulSet(Box::new(typed(&site, value)?)),
        Kind::Deployment => Object::Deployment(Box::new(typed(&site, value)?)),
        Kind::CronJob => Object::CronJob(Box::new(typed(&site, value)?)),
        Kind::JobFlow => Object::JobFlow(Box::new(typed(&site, value)?)),
        Kind::JobTemplate => Object::JobTemplate(Box::new(typed(&site, value)?)),
        Kind::HyperNode => Object::HyperNode(Box::new(typed(&site, value)?)),
    };
    let key = normalize_metadata(kind, &site, object.metadata_mut())?;
    let site = Site::object(site.source().clone(), &key);
    validate::object(&site, &object)?;
    flow::object(&site, &object)?;
    Ok(Some(Decoded { key, object, site }))
}

/// Reads `apiVersion` and `kind` and finds the kind they name.
fn kind_of(site: &Site, map: &Mapping) -> Result<Kind, LoadError> {
    let api_version = string_field(site, map, "apiVersion")?;
    let kind_name = string_field(site, map, "kind")?;
    if let Some(kind) = KINDS.iter().copied().find(|k| k.name() == kind_name) {
        if kind.api_version() == api_version {
            return Ok(kind);
        }
        return Err(site.field_error(
            "apiVersion",
            format!(
                "unknown kind {kind_name} (apiVersion {api_version}); {KNOWN_KINDS}; {kind_name} needs apiVersion {}",
                kind.api_version()
            ),
        ));
    }
    Err(site.field_error(
        "kind",
        format!("unknown kind {kind_name} (apiVersion {api_version}); {KNOWN_KINDS}"),
    ))
}

fn string_field<'a>(site: &Site, map: &'a Mapping, field: &str) -> Result<&'a str, LoadError> {
    match map.get(field) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(site.field_error(
            field,
            "missing: every object needs apiVersion and kind (a scenario document is a Kubernetes object)",
        )),
        Some(other) => Err(site.field_error(field, format!("must be a string, not {}", describe(other)))),
    }
}

/// The object's identity read loosely from the raw document, so that errors found while
/// reading it typed can already name it.
fn lenient_key(kind: Kind, map: &Mapping) -> Option<ObjectKey> {
    let metadata = map.get("metadata")?;
    let name = metadata.get("name")?.as_str().filter(|n| !n.is_empty())?;
    let namespace = if kind.namespaced() {
        metadata
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .unwrap_or(DEFAULT_NAMESPACE)
    } else {
        ""
    };
    Some(ObjectKey {
        kind: kind.name().to_string(),
        namespace: namespace.to_string(),
        name: name.to_string(),
    })
}

/// Deserializes the document into its type; an error names the field path.
fn typed<T: DeserializeOwned>(site: &Site, value: Value) -> Result<T, LoadError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let message = err.inner().to_string();
        let path = err.path();
        if path.iter().next().is_none() {
            site.error(message)
        } else {
            site.field_error(path.to_string(), message)
        }
    })
}

/// Requires a name and sets the namespace as the API server would: `default` for namespaced
/// kinds that name none, none at all for cluster-scoped kinds. Returns the object's key.
fn normalize_metadata(
    kind: Kind,
    site: &Site,
    metadata: &mut ObjectMeta,
) -> Result<ObjectKey, LoadError> {
    let name = match metadata.name.as_deref() {
        Some("") => return Err(site.field_error("metadata.name", "must not be empty")),
        Some(name) => name.to_string(),
        None => {
            return Err(site.field_error("metadata.name", "required: every object needs a name"));
        }
    };
    let namespace = if kind.namespaced() {
        let ns = match metadata.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns.to_string(),
            _ => DEFAULT_NAMESPACE.to_string(),
        };
        metadata.namespace = Some(ns.clone());
        ns
    } else {
        metadata.namespace = None;
        String::new()
    };
    Ok(ObjectKey {
        kind: kind.name().to_string(),
        namespace,
        name,
    })
}

/// How a YAML value is named in errors.
fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a sequence",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}
