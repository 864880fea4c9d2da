//! The CRDs under test, built once and shared by the CRD test files.

// Each test crate uses only some of these.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Deserialize;
use serde_json::Value;
use volcano_api::crds::crds_yaml;

/// The CRDs as read back from `crds_yaml`, built once: generating the pod template's schema
/// is slow in a debug build.
pub fn parsed() -> &'static [CustomResourceDefinition] {
    static CRDS: OnceLock<Vec<CustomResourceDefinition>> = OnceLock::new();
    CRDS.get_or_init(|| {
        let text = crds_yaml().unwrap();
        serde_yaml_ng::Deserializer::from_str(&text)
            .map(|doc| CustomResourceDefinition::deserialize(doc).unwrap())
            .collect()
    })
}

pub fn by_kind(kind: &str) -> &'static CustomResourceDefinition {
    parsed()
        .iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap_or_else(|| panic!("no CRD of kind {kind}"))
}

/// The schema of a kind as JSON, built once per kind.
pub fn schema(kind: &str) -> &'static Value {
    static SCHEMAS: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    let all = SCHEMAS.get_or_init(|| {
        parsed()
            .iter()
            .map(|crd| {
                let props = crd.spec.versions[0]
                    .schema
                    .clone()
                    .unwrap()
                    .open_api_v3_schema;
                (
                    crd.spec.names.kind.clone(),
                    serde_json::to_value(props.unwrap()).unwrap(),
                )
            })
            .collect()
    });
    &all[kind]
}
