//! The examples a user starts from are objects a real API server accepts: every document of
//! `examples/quickstart.yaml` and `examples/predicates.yaml` is created in the local server,
//! which validates pods (extended resources need limits) and knows every field of them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use volcano_apiserver::kinds::{self, KINDS};
use volcano_apiserver::store::fields::prune_unknown;
use volcano_apiserver::{SharedOptions, SharedStore};

fn documents(file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("the example exists");
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| Value::deserialize(doc).expect("a YAML document"))
        .filter(|v| !v.is_null())
        .collect()
}

fn create_all(file: &str) {
    let store = SharedStore::new(SharedOptions::default());
    for doc in documents(file) {
        let kind_name = doc["kind"].as_str().unwrap().to_string();
        let kind = KINDS
            .iter()
            .find(|k| k.kind == kind_name && doc["apiVersion"] == k.api_version().as_str())
            .unwrap_or_else(|| panic!("{file}: the server serves {kind_name}"));
        let name = doc["metadata"]["name"].as_str().unwrap().to_string();
        let mut known = doc.clone();
        let unknown = prune_unknown(kind, &mut known);
        assert!(
            unknown.is_empty(),
            "{file}: {name} has unknown fields {unknown:?}"
        );
        let ns = doc["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_string();
        let ns = kind.namespaced.then_some(ns.as_str());
        if let Some(ns) = ns {
            let namespace = serde_json::json!({"metadata": {"name": ns}});
            let _ = store.create(kinds::namespaces().resource, None, namespace);
        }
        match store.create(kind.resource, ns, doc) {
            Ok(_) => {}
            Err(e) if e.is_conflict() => {}
            Err(e) => panic!("{file}: {kind_name} {name} is refused: {}", e.message),
        }
    }
}

#[test]
fn the_quickstart_is_accepted_as_a_real_server_would() {
    create_all("quickstart.yaml");
}

#[test]
fn the_predicates_example_is_accepted_as_a_real_server_would() {
    create_all("predicates.yaml");
}
