//! Kinds stored once and served twice: `events.k8s.io/v1` Events are core `v1` Events.
//!
//! As in Kubernetes, both APIs show the same objects: an event recorded through
//! `events.k8s.io` (kube-rs' recorder) is listed by `kubectl get events` and shown by
//! `kubectl describe`. Objects are stored in the core form and converted field by field on the
//! way in and out (`regarding` is `involvedObject`, `note` is `message`, ...).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::kinds::{self, KindInfo};

/// `events.k8s.io/v1` field name and its core `v1` name.
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn is_events_api(kind: &KindInfo) -> bool {
    kind.group == "events.k8s.io" && kind.resource == "events"
}

/// The kind whose storage holds objects of `kind`.
pub fn storage(kind: &'static KindInfo) -> &'static KindInfo {
    if is_events_api(kind) {
        kinds::find("events").unwrap_or(kind)
    } else {
        kind
    }
}

/// Whether `kind` is served from another kind's storage.
pub fn is_view(kind: &'static KindInfo) -> bool {
    !std::ptr::eq(storage(kind), kind)
}

fn rename(object: &Value, api_version: &str, to_core: bool) -> Value {
    let Some(map) = object.as_object() else {
        return object.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        let renamed = EVENT_FIELDS.iter().find_map(|(api, core)| {
            let (from, to) = if to_core { (api, core) } else { (core, api) };
            (*from == key).then_some(*to)
        });
        out.insert(renamed.unwrap_or(key).to_string(), value.clone());
    }
    out.insert("apiVersion".into(), Value::String(api_version.to_string()));
    Value::Object(out)
}

/// An object of `kind` as stored.
pub fn to_storage(kind: &'static KindInfo, object: Value) -> Value {
    if is_events_api(kind) {
        rename(&object, "v1", true)
    } else {
        object
    }
}

/// A stored object as `kind` serves it.
pub fn to_view(kind: &'static KindInfo, object: &Arc<Value>) -> Arc<Value> {
    if is_events_api(kind) {
        Arc::new(rename(object, &kind.api_version(), false))
    } else {
        object.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_round_trip_between_the_two_apis() {
        let api = kinds::find("events.events.k8s.io").unwrap();
        assert!(is_view(api));
        assert!(!is_view(kinds::pods()));
        let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "note": "hi",
                           "regarding": {"kind": "Pod", "name": "p"}, "reason": "Started"});
        let core = to_storage(api, event.clone());
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["message"], "hi");
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(*to_view(api, &Arc::new(core)), event);
    }
}
