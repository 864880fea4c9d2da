//! Unit tests of the capacity plugin: clusters written as the objects a user would apply, run
//! through the real cache into a snapshot, and the plugin's answers checked one by one.

mod flat;
mod hierarchy;

use std::fmt::Write;
use std::path::Path;

use super::Capacity;
use crate::cache::{CacheOptions, build_snapshot};
use crate::conf::SchedulerConf;
use crate::model::{JobId, QueueId, Snapshot, TaskId};

/// A cluster under construction, as multi-document YAML.
#[derive(Default)]
struct Cluster {
    yaml: String,
}

fn cluster() -> Cluster {
    Cluster::default()
}

impl Cluster {
    fn doc(mut self, text: &str) -> Self {
        let _ = writeln!(self.yaml, "---\n{text}");
        self
    }

    /// A node with `cpu` cores and `mem` of memory (`{"cpu": ..}` style quantities).
    fn node(self, name: &str, allocatable: &str) -> Self {
        self.doc(&format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\nstatus: {{allocatable: {allocatable}}}"
        ))
    }

    /// A queue; `spec` is the inside of a flow map (`deserved: {cpu: 2}, parent: a`).
    fn queue(self, name: &str, spec: &str) -> Self {
        self.doc(&format!(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {{{spec}}}\nstatus: {{state: Open}}"
        ))
    }

    /// A closed queue.
    fn closed_queue(self, name: &str, spec: &str) -> Self {
        self.doc(&format!(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {{{spec}}}\nstatus: {{state: Closed}}"
        ))
    }

    /// A PodGroup `ns/<name>` in `queue`, in `phase`, with optional `minResources`.
    fn job(self, name: &str, queue: &str, phase: &str, min_resources: Option<&str>) -> Self {
        let min = min_resources
            .map(|m| format!(", minResources: {m}"))
            .unwrap_or_default();
        self.doc(&format!(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {{name: {name}, namespace: ns}}\nspec: {{minMember: 1, queue: {queue}{min}}}\nstatus: {{phase: {phase}}}"
        ))
    }

    fn pod_doc(self, name: &str, job: &str, requests: &str, node: Option<&str>) -> Self {
        let (node_line, phase) = match node {
            Some(n) => (format!("  nodeName: {n}\n"), "Running"),
            None => (String::new(), "Pending"),
        };
        self.doc(&format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: ns\n  annotations: {{scheduling.k8s.io/group-name: {job}}}\nspec:\n  schedulerName: volcano\n{node_line}  containers:\n  - name: main\n    image: busybox\n    resources: {{requests: {requests}}}\nstatus: {{phase: {phase}}}"
        ))
    }

    /// A pending pod of `job` asking for `requests`.
    fn pending(self, name: &str, job: &str, requests: &str) -> Self {
        self.pod_doc(name, job, requests, None)
    }

    /// A pod of `job` running on `node`.
    fn running(self, name: &str, job: &str, requests: &str, node: &str) -> Self {
        self.pod_doc(name, job, requests, Some(node))
    }

    fn snapshot(self) -> Snapshot {
        let scenario = volcano_api::scenario::load_str(Path::new("capacity-test.yaml"), &self.yaml)
            .unwrap_or_else(|e| panic!("{e}\n{}", self.yaml));
        build_snapshot(&scenario.objects, &CacheOptions::default()).expect("snapshot")
    }
}

/// The plugin as configured by `plugin_yaml` (the lines under `- name: capacity`).
fn plugin_with(s: &Snapshot, plugin_yaml: &str) -> Capacity {
    let text = format!("actions: allocate\ntiers:\n- plugins:\n  - name: capacity\n{plugin_yaml}");
    let (conf, _) = SchedulerConf::parse(&text).expect("conf");
    Capacity::new(&conf.tiers[0].plugins[0], s)
}

fn flat(s: &Snapshot) -> Capacity {
    plugin_with(s, "")
}

fn hierarchical(s: &Snapshot) -> Capacity {
    plugin_with(s, "    enableHierarchy: true\n")
}

fn q(s: &Snapshot, name: &str) -> QueueId {
    s.queue_index[name]
}

fn task(s: &Snapshot, name: &str) -> TaskId {
    let key = volcano_api::NamespacedName::new("ns", name);
    TaskId(s.tasks.iter().position(|t| t.key == key).expect("task") as u32)
}

fn job(s: &Snapshot, name: &str) -> JobId {
    let key = volcano_api::NamespacedName::new("ns", name);
    JobId(s.jobs.iter().position(|j| j.key == key).expect("job") as u32)
}
