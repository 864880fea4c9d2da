//! Pruning: the API server drops every field a structural schema does not name. Our examples,
//! objects as Volcano writes them, and pod templates with newer Kubernetes fields must come
//! through whole; and our types must read and write Volcano's objects without loss.

// A test that cannot build its fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod crd_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crd_support::schema;
use serde::Deserialize;
use serde_json::{Value, json};
use volcano_api::batch::Job;
use volcano_api::scheduling::{PodGroup, Queue};

/// Where the API server would prune or refuse `value` under `schema`: every field path it
/// does not keep, and every value of the wrong type or outside an enumeration.
fn violations(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    if schema.get("x-kubernetes-int-or-string") == Some(&json!(true)) {
        if !(value.is_i64() || value.is_u64() || value.is_string()) {
            out.push(format!(
                "{path}: {value} is neither an integer nor a string"
            ));
        }
        return;
    }
    if value.is_null() {
        if schema.get("nullable") != Some(&json!(true)) {
            out.push(format!("{path}: null is not allowed"));
        }
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        out.push(format!("{path}: {value} is not one of {allowed:?}"));
    }
    let preserve = schema.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
    let ty = schema.get("type").and_then(Value::as_str);
    let type_ok = match (ty, value) {
        (None, _) => preserve,
        (Some("object"), Value::Object(_)) | (Some("array"), Value::Array(_)) => true,
        (Some("string"), Value::String(_)) | (Some("boolean"), Value::Bool(_)) => true,
        (Some("integer"), v) => v.is_i64() || v.is_u64(),
        (Some("number"), Value::Number(_)) => true,
        _ => false,
    };
    if !type_ok {
        out.push(format!("{path}: {value} does not match type {ty:?}"));
        return;
    }
    match value {
        Value::Object(fields) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let extra = schema.get("additionalProperties");
            for (k, v) in fields {
                let sub_path = format!("{path}.{k}");
                match (props.and_then(|p| p.get(k)), extra) {
                    (Some(sub), _) | (None, Some(sub @ Value::Object(_))) => {
                        violations(sub, v, &sub_path, out)
                    }
                    _ if preserve => {}
                    _ => out.push(format!("{sub_path}: pruned")),
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    violations(item_schema, v, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

/// Checks an object against its kind's schema. The root `metadata` is the API server's own,
/// never pruned by a CRD schema.
fn assert_kept(kind: &str, object: &Value, origin: &str) {
    let mut object = object.clone();
    if let Some(m) = object.as_object_mut() {
        m.remove("metadata");
    }
    let mut out = Vec::new();
    violations(schema(kind), &object, kind, &mut out);
    assert!(out.is_empty(), "{origin}:\n{}", out.join("\n"));
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
}

#[test]
fn every_example_object_is_kept_whole() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    yaml_files(&root.join("examples"), &mut files);
    yaml_files(&root.join("deploy/examples"), &mut files);
    let mut checked = BTreeMap::<&str, usize>::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let Ok(value) = Value::deserialize(doc) else {
                continue;
            };
            let api = value["apiVersion"].as_str().unwrap_or_default();
            let kind = match (api, value["kind"].as_str().unwrap_or_default()) {
                ("batch.volcano.sh/v1alpha1", "Job") => "Job",
                ("scheduling.volcano.sh/v1beta1", "PodGroup") => "PodGroup",
                ("scheduling.volcano.sh/v1beta1", "Queue") => "Queue",
                ("bus.volcano.sh/v1alpha1", "Command") => "Command",
                _ => continue,
            };
            assert_kept(kind, &value, &file.display().to_string());
            *checked.entry(kind).or_default() += 1;
        }
    }
    for kind in ["Job", "PodGroup", "Queue"] {
        assert!(
            checked.get(kind).is_some_and(|n| *n > 0),
            "no example {kind}: {checked:?}"
        );
    }
}

/// Objects as Volcano writes them, with every field its CRDs know of (the pod template aside).
const VOLCANO_JOB: &str = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j, namespace: default}
spec:
  schedulerName: volcano
  minAvailable: 2
  minSuccess: 1
  maxRetry: 3
  ttlSecondsAfterFinished: 60
  queue: default
  priorityClassName: high
  runningEstimate: 1h0m0s
  networkTopology: {mode: soft, highestTierAllowed: 2}
  plugins: {svc: ["--disable-network-policy=true"], ssh: []}
  policies:
  - {event: PodEvicted, action: RestartJob}
  - {events: [PodFailed, Unknown], action: AbortJob, timeout: 10m}
  - {exitCode: 3, action: TerminateJob}
  volumes:
  - mountPath: /data
    volumeClaimName: claim
  - mountPath: /scratch
    volumeClaim:
      accessModes: [ReadWriteOnce]
      storageClassName: fast
      resources: {requests: {storage: 1Gi}}
  tasks:
  - name: worker
    replicas: 4
    minAvailable: 2
    maxRetry: 5
    topologyPolicy: best-effort
    dependsOn: {name: [master], iteration: any}
    partitionPolicy: {totalPartitions: 2, partitionSize: 2, minPartitions: 1,
                      networkTopology: {mode: hard, highestTierName: rack}}
    policies: [{event: TaskCompleted, action: CompleteJob}]
    template:
      metadata: {labels: {app: w}, annotations: {a: b}}
      spec:
        restartPolicy: OnFailure
        imagePullSecrets: [{name: regcred}]
        containers:
        - name: w
          image: busybox
          env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: k}}}]
          ports: [{containerPort: 80}]
          resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {nvidia.com/gpu: "1"}}
status:
  state: {phase: Running, reason: r, message: m, lastTransitionTime: "2024-01-01T00:00:00Z"}
  minAvailable: 2
  pending: 1
  running: 2
  succeeded: 1
  failed: 0
  terminating: 0
  unknown: 0
  version: 1
  retryCount: 0
  runningDuration: 1m0s
  taskStatusCount: {worker: {phase: {Running: 2, Pending: 1}}}
  controlledResources: {plugin-svc: svc}
  conditions: [{status: Running, lastTransitionTime: "2024-01-01T00:00:00Z"}]
"#;

const VOLCANO_POD_GROUP: &str = r#"
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: default}
spec:
  minMember: 2
  minTaskMember: {worker: 2}
  queue: default
  priorityClassName: high
  minResources: {cpu: "2", memory: 2Gi, nvidia.com/gpu: "1"}
  networkTopology: {mode: hard, highestTierAllowed: 1}
  subGroupPolicy:
  - name: racks
    subGroupSize: 2
    minSubGroups: 1
    labelSelector: {matchLabels: {app: w}}
    matchLabelKeys: [rack]
    networkTopology: {mode: soft}
status:
  phase: Running
  running: 2
  succeeded: 0
  failed: 0
  conditions:
  - type: Scheduled
    status: "True"
    transitionID: 0b3c
    lastTransitionTime: "2024-01-01T00:00:00Z"
    reason: tasks in gang are ready to be scheduled
    message: ok
"#;

const VOLCANO_QUEUE: &str = r#"
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q}
spec:
  weight: 3
  capability: {cpu: "10"}
  deserved: {cpu: "5"}
  guarantee: {resource: {cpu: "1"}}
  reclaimable: false
  parent: root
  priority: 1
  dequeueStrategy: fifo
  type: t
  affinity:
    nodeGroupAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [g1]}
    nodeGroupAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [g2]}
  extendClusters: [{name: c1, weight: 1, capacity: {cpu: "4"}}]
status:
  state: Open
  unknown: 0
  pending: 1
  running: 2
  inqueue: 1
  completed: 3
  reservation: {nodes: [n1], resource: {cpu: "1"}}
  allocated: {cpu: "2", memory: 1Gi}
"#;

const VOLCANO_COMMAND: &str = r#"
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: c, namespace: default}
action: AbortJob
reason: r
message: m
target: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: j, uid: u, controller: true,
         blockOwnerDeletion: true}
"#;

fn yaml(text: &str) -> Value {
    serde_yaml_ng::from_str(text).unwrap()
}

#[test]
fn objects_volcano_writes_are_kept_whole() {
    assert_kept("Job", &yaml(VOLCANO_JOB), "Job");
    assert_kept("PodGroup", &yaml(VOLCANO_POD_GROUP), "PodGroup");
    assert_kept("Queue", &yaml(VOLCANO_QUEUE), "Queue");
    assert_kept("Command", &yaml(VOLCANO_COMMAND), "Command");
}

#[test]
fn newer_pod_fields_in_a_template_are_kept() {
    let mut job = yaml(VOLCANO_JOB);
    let template = &mut job["spec"]["tasks"][0]["template"]["spec"];
    template["hostnameOverride"] = json!("h");
    template["containers"][0]["restartPolicyRules"] = json!([{"action": "Restart"}]);
    assert_kept("Job", &job, "Job with Kubernetes 1.34 pod fields");
}

#[test]
fn reference_names_may_be_omitted_in_templates() {
    // Kubernetes (and Volcano's schema) let the `name` of a reference default to "".
    let mut job = yaml(VOLCANO_JOB);
    let template = &mut job["spec"]["tasks"][0]["template"]["spec"];
    template["imagePullSecrets"] = json!([{}]);
    template["containers"][0]["env"][0]["valueFrom"] = json!({"secretKeyRef": {"key": "k"}});
    template["volumes"] = json!([{"name": "v", "configMap": {}}]);
    let mut errors = Vec::new();
    check_required(schema("Job"), &job, "Job", &mut errors);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// Fields a schema requires that `value` lacks.
fn check_required(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(fields) => {
            for r in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let r = r.as_str().unwrap_or_default();
                if !fields.contains_key(r) {
                    out.push(format!("{path}: {r} is required"));
                }
            }
            let props = schema.get("properties").and_then(Value::as_object);
            for (k, v) in fields {
                if let Some(sub) = props.and_then(|p| p.get(k)) {
                    check_required(sub, v, &format!("{path}.{k}"), out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    check_required(sub, v, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

#[test]
fn our_types_read_and_write_volcanos_objects_without_loss() {
    // A controller that reads, changes and writes an object must not drop what it does not
    // know: every field of these objects has a place in our types.
    fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(text: &str) {
        let value = yaml(text);
        let typed: T = serde_json::from_value(value.clone()).unwrap();
        let back = serde_json::to_value(&typed).unwrap();
        assert_eq!(back, value);
    }
    round_trip::<Job>(VOLCANO_JOB);
    round_trip::<PodGroup>(VOLCANO_POD_GROUP);
    round_trip::<Queue>(VOLCANO_QUEUE);
}
