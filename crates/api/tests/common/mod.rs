//! A valid scenario holding every kind, and helpers shared by the loading tests.

// Each test crate uses only some of these.
#![allow(dead_code)]

use std::path::Path;

use volcano_api::scenario::{ObjectKey, load_str};

/// Every recognised kind, across namespaces, with a Job-owned PodGroup reference.
pub const VALID: &str = r#"# a scenario with every kind
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {zone: a}
status:
  allocatable: {cpu: 4, memory: 8Gi, pods: 110, nvidia.com/gpu: 2}
  capacity: {cpu: "4", memory: 8Gi}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
globalDefault: true
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q1}
spec:
  weight: 2
  capability: {cpu: 8, memory: 16Gi}
  deserved: {cpu: 4}
  guarantee: {resource: {cpu: 1}}
status: {state: Open}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg1, namespace: team}
spec:
  minMember: 2
  minTaskMember: {worker: 2}
  queue: q1
  priorityClassName: high
  minResources: {cpu: 1500m, memory: 1Gi}
---
apiVersion: v1
kind: Pod
metadata:
  name: p1
  namespace: team
  annotations: {scheduling.k8s.io/group-name: pg1}
spec:
  schedulerName: volcano
  priorityClassName: high
  containers:
  - name: c
    image: busybox
    resources:
      requests: {cpu: 500m, memory: 512Mi}
      limits: {cpu: 1}
---
apiVersion: v1
kind: Pod
metadata:
  name: p2
  annotations: {scheduling.k8s.io/group-name: j1}
spec:
  containers: [{name: c, image: busybox}]
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j1}
spec:
  minAvailable: 3
  queue: q1
  tasks:
  - name: ps
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: busybox, resources: {requests: {cpu: 1}}}]
  - name: worker
    replicas: 2
    minAvailable: 2
    template:
      spec:
        priorityClassName: system-node-critical
        containers: [{name: c, image: busybox, resources: {requests: {cpu: 1, nvidia.com/gpu: 1}}}]
---
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: abort-j1}
action: AbortJob
target: {apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: j1, uid: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: volcano-scheduler-configmap, namespace: volcano-system}
data:
  volcano-scheduler.conf: |
    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: gang
---
"#;

/// The key of an object, as `Scenario::sources` holds it.
pub fn key(kind: &str, namespace: &str, name: &str) -> ObjectKey {
    ObjectKey {
        kind: kind.to_string(),
        namespace: namespace.to_string(),
        name: name.to_string(),
    }
}

/// Loads `text`, which must fail, and returns the error's Display text.
pub fn error_of(text: &str) -> String {
    match load_str(Path::new("s.yaml"), text) {
        Ok(_) => panic!("scenario should not load:\n{text}"),
        Err(err) => err.to_string(),
    }
}

/// Asserts that `text` fails with a message naming every one of `parts`.
pub fn assert_error(text: &str, parts: &[&str]) {
    let message = error_of(text);
    for part in parts {
        assert!(
            message.contains(part),
            "error {message:?} should contain {part:?}"
        );
    }
}

/// The head of a Pod `team/p1`; a test appends its spec.
pub const POD_HEAD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: team}\n";
/// The head of a Queue `q1`.
pub const QUEUE_HEAD: &str =
    "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q1}\n";
/// The head of a PodGroup `team/pg1`.
pub const PG_HEAD: &str = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg1, namespace: team}\n";
/// The head of a Job `team/j1`.
pub const JOB_HEAD: &str =
    "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j1, namespace: team}\n";
