//! Reading Volcano's custom resources as the API server stores them. Their CRDs do not require
//! `spec`, so an object written without one (or with `spec: null`) is valid on a cluster; it
//! reads here as one with an empty spec, whose fields take their defaults, as Volcano's Go
//! types would. The scenario loader applies the same rule to YAML documents
//! (`scenario::decode`).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Gives `object` an empty `spec` where it has none or a null one.
pub fn ensure_spec(object: &mut Value) {
    if let Some(map) = object.as_object_mut()
        && map.get("spec").is_none_or(Value::is_null)
    {
        map.insert("spec".into(), Value::Object(Map::new()));
    }
}

/// Reads a custom resource, a missing `spec` read as empty.
pub fn from_value<K: DeserializeOwned>(mut object: Value) -> Result<K, serde_json::Error> {
    ensure_spec(&mut object);
    serde_json::from_value(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::Queue;

    #[test]
    fn a_queue_without_spec_reads_with_the_defaults() {
        for body in [
            serde_json::json!({"metadata": {"name": "q"}}),
            serde_json::json!({"metadata": {"name": "q"}, "spec": null}),
        ] {
            let q: Queue = from_value(body).expect("reads");
            assert_eq!(q.spec.weight, 1);
        }
        let wrong: Result<Queue, _> = from_value(serde_json::json!({"spec": "x"}));
        assert!(wrong.is_err(), "a spec of the wrong type is still an error");
    }
}
