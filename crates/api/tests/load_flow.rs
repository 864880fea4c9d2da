//! Loading JobFlows and JobTemplates: they land in their lists, and a flow whose dependencies
//! Volcano's webhook would refuse is an error naming the file, object and field.

// A test that cannot even load its fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{assert_error, key};
use volcano_api::scenario::load_str;

const FLOW: &str = r#"
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: a}
spec:
  tasks: [{name: t, replicas: 1, template: {spec: {containers: [{name: c}]}}}]
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: f, namespace: team}
spec:
  jobRetainPolicy: delete
  flows:
  - name: a
  - name: b
    dependsOn: {targets: [a]}
"#;

fn flow(flows: &str) -> String {
    format!(
        "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {{name: f}}\nspec:\n  flows:\n{flows}"
    )
}

#[test]
fn flows_and_templates_load_into_their_lists() {
    let s = load_str(Path::new("f.yaml"), FLOW).unwrap();
    assert_eq!(s.objects.job_templates.len(), 1);
    assert_eq!(s.objects.job_flows.len(), 1);
    assert_eq!(
        s.objects.job_templates[0].metadata.namespace.as_deref(),
        Some("default")
    );
    assert!(s.sources.contains_key(&key("JobFlow", "team", "f")));
    assert!(s.sources.contains_key(&key("JobTemplate", "default", "a")));
}

#[test]
fn a_target_naming_no_flow_is_an_error() {
    assert_error(
        &flow("  - name: a\n    dependsOn: {targets: [ghost]}\n"),
        &[
            "s.yaml",
            "JobFlow default/f",
            "spec.flows[0].dependsOn.targets[0]",
            "ghost",
        ],
    );
}

#[test]
fn a_dependency_cycle_is_an_error_naming_it() {
    assert_error(
        &flow(
            "  - name: a\n    dependsOn: {targets: [b]}\n  - name: b\n    dependsOn: {targets: [a]}\n",
        ),
        &["spec.flows", "not a DAG", "a -> b -> a"],
    );
}

#[test]
fn a_flow_named_twice_or_an_unknown_policy_is_an_error() {
    assert_error(
        &flow("  - name: a\n  - name: a\n"),
        &["spec.flows[1].name", "defined twice"],
    );
    let text = flow("  - name: a\n").replace("spec:\n", "spec:\n  jobRetainPolicy: keep\n");
    assert_error(&text, &["spec.jobRetainPolicy", "\"keep\""]);
}

#[test]
fn a_template_with_a_bad_quantity_names_the_field() {
    let text = FLOW.replace("{name: c}", "{name: c, resources: {requests: {cpu: lots}}}");
    assert_error(
        &text,
        &["JobTemplate default/a", "spec.tasks[0].template.spec"],
    );
}
