//! Loading one scenario file: a valid scenario, YAML handling, and one test per rule an
//! object alone can break.

// A test that cannot even load its fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{JOB_HEAD, PG_HEAD, POD_HEAD, QUEUE_HEAD, assert_error, key};
use volcano_api::scenario::load_str;

#[test]
fn valid_scenario_loads_every_kind() {
    let s = load_str(Path::new("all.yaml"), common::VALID).unwrap();
    let o = &s.objects;
    assert_eq!(o.nodes.len(), 1);
    assert_eq!(o.priority_classes.len(), 1);
    assert_eq!(o.queues.len(), 1);
    assert_eq!(o.pod_groups.len(), 1);
    assert_eq!(o.pods.len(), 2);
    assert_eq!(o.jobs.len(), 1);
    assert_eq!(o.commands.len(), 1);
    let pod_names: Vec<_> = o
        .pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(pod_names, ["p1", "p2"], "pods keep file order");
    assert_eq!(o.pods[1].metadata.namespace.as_deref(), Some("default"));
    assert_eq!(o.jobs[0].metadata.namespace.as_deref(), Some("default"));
    assert_eq!(o.commands[0].metadata.namespace.as_deref(), Some("default"));
    assert_eq!(o.queues[0].metadata.namespace, None);
    assert_eq!(o.queues[0].spec.weight, 2);
    assert_eq!(o.pod_groups[0].spec.min_member, 2);
    assert_eq!(o.jobs[0].spec.tasks.len(), 2);

    let conf = s.scheduler_conf.as_ref().unwrap();
    assert!(conf.text.contains("enqueue, allocate, backfill"));
    assert_eq!(conf.source.document, 9);

    assert_eq!(s.sources.len(), 9);
    let pod = &s.sources[&key("Pod", "team", "p1")];
    assert_eq!((pod.document, pod.line), (5, Some(36)));
    let node = &s.sources[&key("Node", "", "n1")];
    assert_eq!((node.document, node.line), (1, Some(2)));
    assert!(s.sources.contains_key(&key(
        "ConfigMap",
        "volcano-system",
        "volcano-scheduler-configmap"
    )));
    assert!(s.sources.contains_key(&key("Queue", "", "q1")));
}

#[test]
fn objects_without_spec_get_crd_defaults() {
    let s = load_str(Path::new("q.yaml"), QUEUE_HEAD).unwrap();
    assert_eq!(s.objects.queues[0].spec.weight, 1);
    let s = load_str(Path::new("pg.yaml"), PG_HEAD).unwrap();
    assert_eq!(s.objects.pod_groups[0].spec.min_member, 0);
}

#[test]
fn empty_documents_and_files_are_skipped() {
    let s = load_str(Path::new("e.yaml"), "").unwrap();
    assert!(s.sources.is_empty());
    let s = load_str(Path::new("e.yaml"), "---\n# nothing\n---\n").unwrap();
    assert!(s.sources.is_empty());
}

#[test]
fn yaml_syntax_error_names_document_and_line() {
    let text = format!("{QUEUE_HEAD}---\n{POD_HEAD}spec: {{containers: [\n");
    assert_error(&text, &["s.yaml: document 2 (line", "invalid YAML"]);
}

#[test]
fn document_must_be_a_mapping() {
    assert_error("- a\n- b\n", &["document 1", "a sequence"]);
}

#[test]
fn unknown_kind_is_an_error() {
    let text =
        format!("{QUEUE_HEAD}---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: d}}\n");
    assert_error(
        &text,
        &[
            "s.yaml: document 2 (line 4)",
            "field kind",
            "unknown kind DaemonSet (apiVersion apps/v1)",
            "Node, Pod, PodGroup, Queue, Job, Command, PriorityClass, ConfigMap, Namespace, PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode, ReplicaSet, StatefulSet, Deployment, CronJob, JobFlow, JobTemplate and HyperNode",
        ],
    );
}

#[test]
fn known_kind_with_wrong_api_version_says_which_is_expected() {
    let text = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n";
    assert_error(
        text,
        &[
            "field apiVersion",
            "unknown kind Job (apiVersion batch/v1)",
            "batch.volcano.sh/v1alpha1",
        ],
    );
}

#[test]
fn missing_kind_is_an_error() {
    assert_error(
        "apiVersion: v1\nmetadata: {name: x}\n",
        &["document 1", "field kind", "missing"],
    );
}

#[test]
fn type_errors_name_the_field_path() {
    let text = format!("{PG_HEAD}spec: {{minMember: lots}}\n");
    assert_error(
        &text,
        &[
            "document 1",
            "PodGroup team/pg1",
            "field spec.minMember",
            "lots",
        ],
    );
}

#[test]
fn name_is_required() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {namespace: team}\nspec: {containers: []}\n";
    assert_error(
        text,
        &["document 1", "Pod", "field metadata.name", "required"],
    );
    let text = "apiVersion: v1\nkind: Node\nmetadata: {name: \"\"}\n";
    assert_error(text, &["Node", "field metadata.name", "empty"]);
}

#[test]
fn bad_pod_quantity_is_an_error() {
    let text = format!(
        "{QUEUE_HEAD}---\n{POD_HEAD}spec:\n  containers:\n  - name: c\n    resources: {{requests: {{cpu: 12x}}}}\n"
    );
    assert_error(
        &text,
        &[
            "s.yaml: document 2 (line 4)",
            "Pod team/p1",
            "field spec.containers[0].resources.requests.cpu",
            "12x",
        ],
    );
}

#[test]
fn bad_init_container_limit_and_overhead_are_errors() {
    let text = format!(
        "{POD_HEAD}spec:\n  containers: []\n  initContainers:\n  - name: a\n  - name: b\n    resources: {{limits: {{memory: -1}}}}\n"
    );
    assert_error(
        &text,
        &[
            "field spec.initContainers[1].resources.limits.memory",
            "negative",
        ],
    );
    let text = format!("{POD_HEAD}spec:\n  containers: []\n  overhead: {{cpu: lots}}\n");
    assert_error(&text, &["field spec.overhead.cpu", "lots"]);
}

#[test]
fn bad_node_quantity_is_an_error() {
    let text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {nvidia.com/gpu: 1x}}\n";
    assert_error(
        text,
        &["Node n1", "field status.allocatable.nvidia.com/gpu", "1x"],
    );
    let text =
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: \"-2\"}}\n";
    assert_error(text, &["field status.capacity.cpu", "negative"]);
}

#[test]
fn bad_pod_group_min_resources_is_an_error() {
    let text = format!("{PG_HEAD}spec: {{minResources: {{memory: 1Zi}}}}\n");
    assert_error(
        &text,
        &["PodGroup team/pg1", "field spec.minResources.memory", "1Zi"],
    );
}

#[test]
fn bad_queue_quantities_are_errors() {
    for (spec, field) in [
        ("{capability: {cpu: x}}", "spec.capability.cpu"),
        ("{deserved: {memory: 1.5.5}}", "spec.deserved.memory"),
        (
            "{guarantee: {resource: {cpu: -1}}}",
            "spec.guarantee.resource.cpu",
        ),
    ] {
        let text = format!("{QUEUE_HEAD}spec: {spec}\n");
        assert_error(&text, &["Queue q1", &format!("field {field}")]);
    }
}

#[test]
fn bad_job_template_quantity_is_an_error() {
    let text = format!(
        "{JOB_HEAD}spec:\n  tasks:\n  - replicas: 1\n    template: {{spec: {{containers: [{{name: c, resources: {{requests: {{cpu: 2q}}}}}}]}}}}\n"
    );
    assert_error(
        &text,
        &[
            "Job team/j1",
            "field spec.tasks[0].template.spec.containers[0].resources.requests.cpu",
            "2q",
        ],
    );
}

#[test]
fn pod_group_min_member_must_not_be_negative() {
    let text = format!("{PG_HEAD}spec: {{minMember: -1}}\n");
    assert_error(&text, &["PodGroup team/pg1", "field spec.minMember", "-1"]);
    let text = format!("{PG_HEAD}spec: {{minTaskMember: {{worker: -2}}}}\n");
    assert_error(&text, &["field spec.minTaskMember.worker", "-2"]);
}

#[test]
fn pod_group_network_topology_is_checked() {
    let text =
        format!("{PG_HEAD}spec: {{networkTopology: {{mode: hard, highestTierAllowed: 1}}}}\n");
    assert!(load_str(Path::new("s.yaml"), &text).is_ok());
    let text = format!("{PG_HEAD}spec: {{networkTopology: {{mode: strict}}}}\n");
    assert_error(
        &text,
        &[
            "PodGroup team/pg1",
            "field spec.networkTopology.mode",
            "must be \"hard\" or \"soft\"; got \"strict\"",
        ],
    );
    let text = format!(
        "{PG_HEAD}spec: {{networkTopology: {{highestTierAllowed: 1, highestTierName: leaf}}}}\n"
    );
    assert_error(&text, &["field spec.networkTopology", "simultaneously"]);
}

#[test]
fn pod_group_sub_group_policies_are_checked_naming_the_field() {
    let policy = |body: &str| format!("{PG_HEAD}spec: {{subGroupPolicy: [{body}]}}\n");
    let good = policy(
        "{name: part, subGroupSize: 2, minSubGroups: 1, matchLabelKeys: [volcano.sh/partition-id], \
         labelSelector: {matchExpressions: [{key: role, operator: In, values: [w]}]}, \
         networkTopology: {mode: hard, highestTierAllowed: 1}}",
    );
    assert!(load_str(Path::new("s.yaml"), &good).is_ok());
    let cases = [
        (
            "{subGroupSize: 2}",
            "field spec.subGroupPolicy[0].name",
            "must not be empty",
        ),
        (
            "{name: a}, {name: a}",
            "field spec.subGroupPolicy[1].name",
            "names two policies",
        ),
        (
            "{name: a, subGroupSize: 0}",
            "field spec.subGroupPolicy[0].subGroupSize",
            "got 0",
        ),
        (
            "{name: a, minSubGroups: -1}",
            "field spec.subGroupPolicy[0].minSubGroups",
            "got -1",
        ),
        (
            "{name: a, matchLabelKeys: ['']}",
            "field spec.subGroupPolicy[0].matchLabelKeys[0]",
            "must not be empty",
        ),
        (
            "{name: a, labelSelector: {matchExpressions: [{key: k, operator: Near}]}}",
            "field spec.subGroupPolicy[0].labelSelector.matchExpressions[0].operator",
            "got \"Near\"",
        ),
        (
            "{name: a, networkTopology: {mode: strict}}",
            "field spec.subGroupPolicy[0].networkTopology.mode",
            "got \"strict\"",
        ),
    ];
    for (body, field, message) in cases {
        assert_error(&policy(body), &["PodGroup team/pg1", field, message]);
    }
}

#[test]
fn hyper_nodes_that_do_not_form_a_tree_are_refused_naming_the_hyper_node() {
    let hn = |name: &str, tier: u32, members: &str| {
        format!(
            "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {{name: {name}}}\nspec: {{tier: {tier}, members: [{members}]}}\n"
        )
    };
    let node = |name: &str| format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\n");
    let text = [
        node("n0"),
        node("n1"),
        hn(
            "leaf-a",
            1,
            "{type: Node, selector: {regexMatch: {pattern: '^n'}}}",
        ),
        hn(
            "leaf-b",
            1,
            "{type: Node, selector: {exactMatch: {name: n1}}}",
        ),
    ]
    .join("---\n");
    assert_error(
        &text,
        &[
            "HyperNode leaf-b",
            "field spec.members",
            "node n1 is in two HyperNodes of tier 1: leaf-a and leaf-b",
        ],
    );
    let text = hn("leaf", 1, "{type: Node, selector: {}}");
    assert_error(
        &text,
        &[
            "HyperNode leaf",
            "field spec.members[0].selector",
            "exactly one of exactMatch, regexMatch or labelMatch",
        ],
    );
    let text = hn(
        "leaf",
        1,
        "{type: Rack, selector: {exactMatch: {name: n0}}}",
    );
    assert_error(&text, &["field spec.members[0].type", "\"Rack\""]);
}

#[test]
fn queue_weight_must_be_in_range() {
    for weight in ["0", "65536", "-3"] {
        let text = format!("{QUEUE_HEAD}spec: {{weight: {weight}}}\n");
        assert_error(&text, &["Queue q1", "field spec.weight", weight]);
    }
    let text = format!("{QUEUE_HEAD}spec: {{weight: 65535}}\n");
    assert!(load_str(Path::new("s.yaml"), &text).is_ok());
}

#[test]
fn queue_state_must_be_known() {
    let text = format!("{QUEUE_HEAD}status: {{state: Sleeping}}\n");
    assert_error(&text, &["Queue q1", "field status.state", "Sleeping"]);
}

#[test]
fn merge_keys_and_anchors_are_honoured() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - &c {name: c, image: x, resources: {requests: {cpu: 1}}}\n  - <<: *c\n    name: d\n";
    let s = load_str(Path::new("s.yaml"), text).unwrap();
    let spec = s.objects.pods[0].spec.as_ref().unwrap();
    assert_eq!(spec.containers[1].name, "d");
    assert_eq!(spec.containers[1].image.as_deref(), Some("x"));
    assert_error(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  <<: 3\n  name: p\n",
        &["document 1", "merge key"],
    );
}

#[test]
fn missing_metadata_is_a_missing_name() {
    let text = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nspec: {minMember: 1}\n";
    assert_error(
        text,
        &["document 1", "PodGroup", "field metadata.name", "required"],
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    for depth in [100, 127, 5000] {
        let nested = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        for text in [
            format!("{PG_HEAD}spec: {{networkTopology: {nested}}}\n"),
            format!("{POD_HEAD}spec: {{containers: [], unknownField: {nested}}}\n"),
            format!("{POD_HEAD}spec: {{containers: {nested}}}\n"),
        ] {
            let _ = load_str(Path::new("s.yaml"), &text);
        }
    }
}

#[test]
fn alias_bombs_are_refused() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let prev = i - 1;
        text.push_str(&format!("a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"));
    }
    assert_error(&text, &["document 1"]);
}
