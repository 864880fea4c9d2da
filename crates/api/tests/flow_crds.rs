//! The JobFlow and JobTemplate CRDs carry Volcano's columns, status subresource and the Job
//! spec defaults where a Job spec is embedded; their objects read back as written.

// A test that cannot build its fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod crd_support;

use crd_support::{by_kind, schema};
use serde_json::json;
use volcano_api::flow::{JobFlow, JobTemplate};

#[test]
fn job_flow_shows_its_phase_and_age_and_has_a_status_subresource() {
    let version = &by_kind("JobFlow").spec.versions[0];
    let columns: Vec<(&str, &str)> = version
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| (c.name.as_str(), c.json_path.as_str()))
        .collect();
    assert_eq!(
        columns,
        [
            ("Status", ".status.state.phase"),
            ("Age", ".metadata.creationTimestamp")
        ]
    );
    for kind in ["JobFlow", "JobTemplate"] {
        let sub = by_kind(kind).spec.versions[0].subresources.clone();
        assert!(sub.and_then(|s| s.status).is_some(), "{kind} status");
    }
}

#[test]
fn embedded_job_specs_get_volcanos_defaults() {
    let template = &schema("JobTemplate")["properties"]["spec"]["properties"];
    assert_eq!(template["maxRetry"]["default"], json!(3));
    assert_eq!(template["queue"]["default"], json!("default"));
    let patch = &schema("JobFlow")["properties"]["spec"]["properties"]["flows"]["items"]["properties"]
        ["patch"]["properties"]["jobSpec"]["properties"];
    assert_eq!(patch["maxRetry"]["default"], json!(3));
    let pod = &template["tasks"]["items"]["properties"]["template"];
    assert_eq!(pod["x-kubernetes-preserve-unknown-fields"], json!(true));
}

#[test]
fn volcanos_example_objects_read_back() {
    let flow: JobFlow = serde_yaml_ng::from_str(
        "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: test}\n\
         spec:\n  jobRetainPolicy: delete\n  flows:\n  - name: a\n  - name: b\n    dependsOn:\n      \
         targets: [a]\n      probe:\n        taskStatusList: [{taskName: t, phase: Running}]\n",
    )
    .unwrap();
    assert_eq!(flow.spec.job_retain_policy, "delete");
    let depends = flow.spec.flows[1].depends_on.clone().unwrap();
    assert_eq!(depends.targets, ["a"]);
    assert_eq!(depends.probe.unwrap().task_status_list[0].phase, "Running");
    let template: JobTemplate = serde_yaml_ng::from_str(
        "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobTemplate\nmetadata: {name: a}\n\
         spec:\n  minAvailable: 1\n  tasks:\n  - name: t\n    replicas: 1\n    template: {}\n",
    )
    .unwrap();
    assert_eq!(template.spec.0.min_available, Some(1));
    assert_eq!(template.spec.0.tasks[0].name, "t");
}
