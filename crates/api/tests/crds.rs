//! The CRDs: they parse back, carry Volcano's names, columns, subresources and defaults, and
//! are structural.

// A test that cannot build its fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod crd_support;

use crd_support::{by_kind, parsed, schema};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};
use volcano_api::crds::{crds, crds_json, crds_yaml};

#[test]
fn yaml_and_json_parse_back_as_the_same_crds() {
    let from_yaml = parsed();
    let names: Vec<_> = from_yaml
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "jobs.batch.volcano.sh",
            "podgroups.scheduling.volcano.sh",
            "queues.scheduling.volcano.sh",
            "commands.bus.volcano.sh",
            "cronjobs.batch.volcano.sh",
            "jobflows.flow.volcano.sh",
            "jobtemplates.flow.volcano.sh",
            "hypernodes.topology.volcano.sh"
        ]
    );
    assert_eq!(from_yaml, crds().unwrap().as_slice());
    let list: Value = serde_json::from_str(&crds_json().unwrap()).unwrap();
    let from_json: Vec<CustomResourceDefinition> =
        serde_json::from_value(list["items"].clone()).unwrap();
    assert_eq!(from_json.as_slice(), from_yaml);
    assert!(crds_yaml().unwrap().contains("\n---\n"));
}

#[test]
fn names_scope_and_versions_are_volcanos() {
    let expect = [
        (
            "Job",
            "batch.volcano.sh",
            "v1alpha1",
            "jobs",
            "job",
            "Namespaced",
            &["vcjob", "vj"][..],
        ),
        (
            "PodGroup",
            "scheduling.volcano.sh",
            "v1beta1",
            "podgroups",
            "podgroup",
            "Namespaced",
            &["pg", "podgroup-v1beta1"],
        ),
        (
            "Queue",
            "scheduling.volcano.sh",
            "v1beta1",
            "queues",
            "queue",
            "Cluster",
            &["q", "queue-v1beta1"],
        ),
        (
            "Command",
            "bus.volcano.sh",
            "v1alpha1",
            "commands",
            "command",
            "Namespaced",
            &[],
        ),
        (
            "CronJob",
            "batch.volcano.sh",
            "v1alpha1",
            "cronjobs",
            "cronjob",
            "Namespaced",
            &["cronvcjob", "cronvj"],
        ),
        (
            "JobFlow",
            "flow.volcano.sh",
            "v1alpha1",
            "jobflows",
            "jobflow",
            "Namespaced",
            &["jf"],
        ),
        (
            "JobTemplate",
            "flow.volcano.sh",
            "v1alpha1",
            "jobtemplates",
            "jobtemplate",
            "Namespaced",
            &["jt"],
        ),
    ];
    for (kind, group, version, plural, singular, scope, short) in expect {
        let crd = by_kind(kind);
        let n = &crd.spec.names;
        assert_eq!(crd.spec.group, group, "{kind}");
        assert_eq!(n.plural, plural, "{kind}");
        assert_eq!(n.singular.as_deref(), Some(singular), "{kind}");
        assert_eq!(n.list_kind.as_deref(), Some(format!("{kind}List").as_str()));
        assert_eq!(n.short_names.clone().unwrap_or_default(), short, "{kind}");
        assert_eq!(
            n.categories, None,
            "{kind}: Volcano's CRDs have no categories"
        );
        assert_eq!(crd.spec.scope, scope, "{kind}");
        assert_eq!(crd.spec.versions.len(), 1, "{kind}");
        let v = &crd.spec.versions[0];
        assert_eq!(v.name, version, "{kind}");
        assert!(v.served && v.storage, "{kind}");
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some(format!("{plural}.{group}").as_str())
        );
    }
}

#[test]
fn printer_columns_are_volcanos() {
    let columns = |kind: &str| -> Vec<(String, String, String, i32)> {
        by_kind(kind).spec.versions[0]
            .additional_printer_columns
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.name, c.type_, c.json_path, c.priority.unwrap_or(0)))
            .collect()
    };
    let col = |n: &str, t: &str, p: &str, prio: i32| (n.into(), t.into(), p.into(), prio);
    assert_eq!(
        columns("Job"),
        [
            col("STATUS", "string", ".status.state.phase", 0),
            col("minAvailable", "integer", ".status.minAvailable", 0),
            col("RUNNINGS", "integer", ".status.running", 0),
            col("AGE", "date", ".metadata.creationTimestamp", 0),
            col("QUEUE", "string", ".spec.queue", 1),
        ]
    );
    assert_eq!(
        columns("PodGroup"),
        [
            col("STATUS", "string", ".status.phase", 0),
            col("minMember", "integer", ".spec.minMember", 0),
            col("RUNNINGS", "integer", ".status.running", 0),
            col("AGE", "date", ".metadata.creationTimestamp", 0),
            col("QUEUE", "string", ".spec.queue", 1),
        ]
    );
    assert_eq!(
        columns("Queue"),
        [col("PARENT", "string", ".spec.parent", 0)]
    );
    assert_eq!(columns("Command"), []);
}

#[test]
fn status_subresource_only_where_volcano_has_one() {
    let has_status = |kind: &str| {
        by_kind(kind).spec.versions[0]
            .subresources
            .as_ref()
            .is_some_and(|s| s.status.is_some())
    };
    assert!(has_status("Job"));
    assert!(has_status("Queue"));
    // Volcano's scheduler writes PodGroup status through the object itself.
    assert!(!has_status("PodGroup"));
    assert!(!has_status("Command"));
}

#[test]
fn defaults_are_volcanos_and_only_those() {
    let mut found = Vec::new();
    for kind in ["Job", "PodGroup", "Queue", "Command"] {
        collect_defaults(schema(kind), kind, &mut found);
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let mut expect: Vec<(String, Value)> = [
        ("Job.spec.maxRetry", json!(3)),
        ("Job.spec.queue", json!("default")),
        ("Job.spec.networkTopology.mode", json!("hard")),
        ("Job.spec.tasks[].partitionPolicy.minPartitions", json!(0)),
        (
            "Job.spec.tasks[].partitionPolicy.networkTopology.mode",
            json!("hard"),
        ),
        ("PodGroup.spec.queue", json!("default")),
        ("PodGroup.spec.networkTopology.mode", json!("hard")),
        ("PodGroup.spec.subGroupPolicy[].minSubGroups", json!(0)),
        ("PodGroup.spec.subGroupPolicy[].subGroupSize", json!(1)),
        (
            "PodGroup.spec.subGroupPolicy[].networkTopology.mode",
            json!("hard"),
        ),
        ("Queue.spec.weight", json!(1)),
        ("Queue.spec.dequeueStrategy", json!("traverse")),
    ]
    .into_iter()
    .map(|(p, v)| (p.to_string(), v))
    .collect();
    expect.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(found, expect);
}

fn collect_defaults(s: &Value, path: &str, out: &mut Vec<(String, Value)>) {
    if let Some(d) = s.get("default") {
        out.push((path.to_string(), d.clone()));
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (k, sub) in props {
            collect_defaults(sub, &format!("{path}.{k}"), out);
        }
    }
    if let Some(items) = s.get("items") {
        collect_defaults(items, &format!("{path}[]"), out);
    }
    if let Some(extra) = s.get("additionalProperties") {
        collect_defaults(extra, &format!("{path}{{}}"), out);
    }
}

/// The rules of a structural schema the API server checks, as far as our schemas can break them.
fn check_structural(s: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(obj) = s.as_object() else {
        errors.push(format!("{path}: a schema must be an object"));
        return;
    };
    for forbidden in ["$ref", "$schema", "definitions", "$defs", "const"] {
        if obj.contains_key(forbidden) {
            errors.push(format!("{path}: `{forbidden}` is not allowed"));
        }
    }
    let int_or_string = obj.get("x-kubernetes-int-or-string") == Some(&json!(true));
    let preserve = obj.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
    let ty = obj.get("type").and_then(Value::as_str);
    if ty.is_none() && !int_or_string && !preserve {
        errors.push(format!("{path}: no type"));
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(subs) = obj.get(key) {
            if !int_or_string {
                errors.push(format!("{path}: `{key}` outside an int-or-string"));
            }
            for sub in subs.as_array().into_iter().flatten() {
                if sub.get("properties").is_some() || sub.get("description").is_some() {
                    errors.push(format!("{path}: `{key}` branch declares more than a type"));
                }
            }
        }
    }
    if obj.contains_key("properties") && obj.contains_key("additionalProperties") {
        errors.push(format!(
            "{path}: properties and additionalProperties together"
        ));
    }
    if (obj.contains_key("properties") || obj.contains_key("additionalProperties"))
        && ty != Some("object")
    {
        errors.push(format!("{path}: fields without `type: object`"));
    }
    if ty == Some("array") && !obj.contains_key("items") {
        errors.push(format!("{path}: array without items"));
    }
    if obj
        .get("additionalProperties")
        .is_some_and(Value::is_boolean)
    {
        errors.push(format!("{path}: boolean additionalProperties"));
    }
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (k, sub) in props {
            check_structural(sub, &format!("{path}.{k}"), errors);
        }
    }
    if let Some(items) = obj.get("items") {
        check_structural(items, &format!("{path}[]"), errors);
    }
    if let Some(extra @ Value::Object(_)) = obj.get("additionalProperties") {
        check_structural(extra, &format!("{path}{{}}"), errors);
    }
}

#[test]
fn schemas_are_structural() {
    for kind in ["Job", "PodGroup", "Queue", "Command"] {
        let s = schema(kind);
        let mut errors = Vec::new();
        check_structural(s, kind, &mut errors);
        assert!(errors.is_empty(), "{kind}:\n{}", errors.join("\n"));
        assert_eq!(
            s["properties"]["apiVersion"],
            json!({"type": "string"}),
            "{kind}"
        );
        assert_eq!(s["properties"]["kind"], json!({"type": "string"}), "{kind}");
        // The API server refuses anything more at the root metadata, even a description.
        assert_eq!(
            s["properties"]["metadata"],
            json!({"type": "object"}),
            "{kind}"
        );
        assert_eq!(s["type"], "object", "{kind}");
    }
}

#[test]
fn job_crd_fits_a_client_side_apply() {
    // `kubectl apply` stores the object as JSON in an annotation limited to 256 KiB.
    for crd in crds().unwrap() {
        let size = serde_json::to_string(&crd).unwrap().len();
        assert!(size < 200 * 1024, "{:?}: {size} bytes", crd.metadata.name);
    }
}
