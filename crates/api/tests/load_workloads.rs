//! Loading the workloads whose pods the PodGroup controller groups: ReplicaSet, StatefulSet
//! and Deployment.

// A test that cannot even load its fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{assert_error, key};
use volcano_api::scenario::load_str;

const WORKLOADS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {scheduling.volcano.sh/group-min-member: "3"}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: volcano
      containers: [{name: c, resources: {requests: {cpu: 500m}}}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-1
  annotations: {scheduling.volcano.sh/group-min-member: "3"}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: data}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c}]}
"#;

#[test]
fn workloads_load_into_their_lists_in_a_namespace() {
    let s = load_str(Path::new("w.yaml"), WORKLOADS).unwrap();
    let o = &s.objects;
    assert_eq!(o.deployments.len(), 1);
    assert_eq!(o.replica_sets.len(), 1);
    assert_eq!(o.stateful_sets.len(), 1);
    assert_eq!(
        o.replica_sets[0].metadata.namespace.as_deref(),
        Some("default"),
        "a workload without a namespace is in default, as a pod is"
    );
    assert_eq!(
        o.stateful_sets[0].metadata.namespace.as_deref(),
        Some("data")
    );
    for k in [
        key("Deployment", "default", "web"),
        key("ReplicaSet", "default", "web-1"),
        key("StatefulSet", "data", "db"),
    ] {
        assert!(s.sources.contains_key(&k), "{k} has a source");
    }
}

#[test]
fn a_gang_size_that_is_no_number_names_the_annotation() {
    let text = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n  annotations: {scheduling.volcano.sh/group-min-member: \"2.5\"}\nspec:\n  selector: {matchLabels: {app: db}}\n  template: {}\n";
    assert_error(
        text,
        &[
            "StatefulSet default/db",
            "field metadata.annotations.scheduling.volcano.sh/group-min-member",
            "must be a whole number, got \"2.5\"",
        ],
    );
}

#[test]
fn a_negative_gang_size_is_refused() {
    let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  annotations: {scheduling.volcano.sh/group-min-member: \"-1\"}\nspec:\n  selector: {matchLabels: {app: web}}\n  template: {}\n";
    assert_error(
        text,
        &[
            "Deployment default/web",
            "group-min-member",
            "must be >= 0, got -1",
        ],
    );
}

#[test]
fn negative_replicas_and_bad_template_quantities_name_the_field() {
    let text = "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web}\nspec:\n  replicas: -1\n  selector: {matchLabels: {app: web}}\n";
    assert_error(text, &["ReplicaSet default/web", "field spec.replicas"]);
    let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n";
    assert_error(
        text,
        &[
            "Deployment default/web",
            "field spec.template.spec.containers[0].resources.requests.cpu",
        ],
    );
}

#[test]
fn a_replica_set_needs_the_apps_api_version() {
    let text = "apiVersion: v1\nkind: ReplicaSet\nmetadata: {name: web}\nspec: {selector: {}}\n";
    assert_error(
        text,
        &["field apiVersion", "ReplicaSet needs apiVersion apps/v1"],
    );
}
