//! Simulated nodes and their kubelets, running pods against the store in-process.
//!
//! [`Kubelets::start`] registers Node objects and plays the kubelet of each: a pending pod bound
//! to one of these nodes becomes Running after a startup delay, then ends as
//! [`volcano_api::lifecycle`] says, the rules `volcano sim`'s kubelets follow too:
//! - after annotation `sim.volcano-rs.io/duration` → Succeeded (exit code 0);
//! - after `sim.volcano-rs.io/fail-after` → Failed (exit code 1), whichever of the two comes
//!   first (a tie fails); each read from the pod, else its Volcano Job, else its PodGroup, in
//!   the grammar of the README (`90s`, `1h30m`, `1.5h`, `1d`, ...);
//! - otherwise, when the first container's command is `sleep N` (directly or as the whole
//!   script of `sh -c`), after N → Succeeded;
//! - otherwise never: it runs until deleted.
//!
//! A pod deleted while it runs is marked for deletion by the store (graceful deletion); its
//! kubelet stops it, waits the termination time (how long the simulated containers take to
//! exit on SIGTERM) and confirms the deletion with grace period 0, as a real kubelet does.
//!
//! Pods on other nodes are left alone. Status writes go through the store, so watchers see
//! them as MODIFIED events. Time is tokio time: tests may pause and advance it. A pod found
//! already Running (after a restart of the kubelets) is given its whole duration again from
//! then.

mod lifetime;
mod status;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinHandle;

pub use lifetime::{lifetime, lifetime_among, owners};
pub use status::{node_ip, node_object, pod_ip, running, terminated};

use crate::error::ApiError;
use crate::kinds;
use crate::shared::{SharedStore, StreamEvent};
use crate::store::graceful::is_terminating;
use crate::store::meta::meta_str;
use crate::store::{ChangeType, DeleteOptions, Part, Preconditions, Selectors};

/// A simulated node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpec {
    /// Node name.
    pub name: String,
    /// CPU capacity, a Kubernetes quantity (`8`, `7500m`).
    pub cpu: String,
    /// Memory capacity, a Kubernetes quantity (`32Gi`).
    pub memory: String,
    /// Maximum number of pods.
    pub pods: u32,
    /// `nvidia.com/gpu` capacity; none when 0.
    pub gpus: u32,
    /// Labels besides the standard `kubernetes.io/hostname`, `kubernetes.io/os`, ...
    pub labels: BTreeMap<String, String>,
}

impl NodeSpec {
    /// A node with 8 CPUs, 32Gi of memory, 110 pods and no GPU.
    pub fn new(name: impl Into<String>) -> Self {
        NodeSpec {
            name: name.into(),
            cpu: "8".to_string(),
            memory: "32Gi".to_string(),
            pods: 110,
            gpus: 0,
            labels: BTreeMap::new(),
        }
    }

    /// Sets the CPU capacity.
    pub fn cpu(mut self, cpu: impl Into<String>) -> Self {
        self.cpu = cpu.into();
        self
    }

    /// Sets the memory capacity.
    pub fn memory(mut self, memory: impl Into<String>) -> Self {
        self.memory = memory.into();
        self
    }

    /// Sets the pod capacity.
    pub fn pods(mut self, pods: u32) -> Self {
        self.pods = pods;
        self
    }

    /// Sets the GPU count.
    pub fn gpus(mut self, gpus: u32) -> Self {
        self.gpus = gpus;
        self
    }

    /// Adds a label.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }
}

/// How the kubelets behave.
#[derive(Debug, Clone)]
pub struct KubeletOptions {
    /// Time from binding to Running.
    pub startup_delay: Duration,
}

impl Default for KubeletOptions {
    fn default() -> Self {
        KubeletOptions {
            startup_delay: Duration::from_secs(1),
        }
    }
}

/// How long a simulated pod takes to stop once deleted, unless
/// [`Kubelets::start_with_termination`] says otherwise.
pub const DEFAULT_TERMINATION: Duration = Duration::from_millis(200);

/// Creates the Node objects of these nodes; nodes that already exist are left as they are.
pub fn register_nodes(store: &SharedStore, nodes: &[NodeSpec]) -> Result<(), ApiError> {
    for (index, spec) in nodes.iter().enumerate() {
        let node = node_object(spec, index, store.now());
        match store.create("nodes", None, node) {
            Ok(_) => {}
            Err(e) if e.is_conflict() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The running kubelets of a set of nodes. Dropping this stops them.
#[derive(Debug)]
pub struct Kubelets {
    task: JoinHandle<()>,
}

impl Drop for Kubelets {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Kubelets {
    /// Registers the nodes and starts their kubelets on the current tokio runtime; a deleted
    /// pod takes [`DEFAULT_TERMINATION`] to stop.
    pub async fn start(
        store: SharedStore,
        nodes: &[NodeSpec],
        opts: KubeletOptions,
    ) -> Result<Kubelets, ApiError> {
        Self::start_with_termination(store, nodes, opts, DEFAULT_TERMINATION).await
    }

    /// [`Kubelets::start`] with the time a deleted pod takes to stop before its kubelet
    /// confirms the deletion.
    pub async fn start_with_termination(
        store: SharedStore,
        nodes: &[NodeSpec],
        opts: KubeletOptions,
        termination: Duration,
    ) -> Result<Kubelets, ApiError> {
        register_nodes(&store, nodes)?;
        let ours: HashMap<String, NodeState> = nodes
            .iter()
            .enumerate()
            .map(|(index, n)| (n.name.clone(), NodeState { index, started: 0 }))
            .collect();
        let task = tokio::spawn(run(store, ours, opts, termination));
        Ok(Kubelets { task })
    }

    /// Stops the kubelets; pods keep the status they have.
    pub fn stop(self) {
        // Drop aborts the task.
    }
}

struct NodeState {
    index: usize,
    /// Pods started so far, for pod IPs.
    started: u32,
}

/// The kubelets of all our nodes: one watch of all pods, one task per running pod.
struct Kubelet {
    store: SharedStore,
    nodes: HashMap<String, NodeState>,
    opts: KubeletOptions,
    /// How long a deleted pod takes to stop.
    termination: Duration,
    /// Pod uid to the task running it, or once deleted, to the task stopping it.
    pods: HashMap<String, JoinHandle<()>>,
    /// Pods being stopped.
    stopping: HashSet<String>,
}

/// Watches all pods and runs those bound to our nodes.
async fn run(
    store: SharedStore,
    nodes: HashMap<String, NodeState>,
    opts: KubeletOptions,
    termination: Duration,
) {
    let mut kubelet = Kubelet {
        store,
        nodes,
        opts,
        termination,
        pods: HashMap::new(),
        stopping: HashSet::new(),
    };
    loop {
        // A watch from no resourceVersion starts with every current pod, so when a watch ends
        // (the kubelet fell behind), starting over relists.
        let mut watch = match kubelet
            .store
            .watch("pods", None, Selectors::default(), None)
        {
            Ok(w) => w,
            Err(e) => {
                tracing::error!(error = %e, "kubelets cannot watch pods");
                return;
            }
        };
        let mut present = HashSet::new();
        for _ in 0..watch.backlog_len() {
            if let Some(event) = watch.next().await {
                present.insert(meta_str(&event.object, "uid").to_string());
                kubelet.handle(&event);
            }
        }
        // Pods deleted while the previous watch was down are not running any more.
        kubelet.pods.retain(|uid, task| {
            let keep = present.contains(uid);
            if !keep {
                task.abort();
            }
            keep
        });
        kubelet.stopping.retain(|uid| present.contains(uid));
        while let Some(event) = watch.next().await {
            kubelet.handle(&event);
        }
    }
}

impl Kubelet {
    fn handle(&mut self, event: &StreamEvent) {
        let object = &event.object;
        let uid = meta_str(object, "uid").to_string();
        if event.change == ChangeType::Deleted {
            if let Some(task) = self.pods.remove(&uid) {
                task.abort();
            }
            self.stopping.remove(&uid);
            return;
        }
        let node_name = object
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let phase = object
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("Pending");
        let Some(node) = self.nodes.get_mut(node_name) else {
            return;
        };
        if is_terminating(object) {
            if self.stopping.insert(uid.clone()) {
                if let Some(task) = self.pods.remove(&uid) {
                    task.abort();
                }
                let stop = stop(self.store.clone(), object.clone(), self.termination);
                self.pods.insert(uid, tokio::spawn(stop));
            }
            return;
        }
        if self.pods.contains_key(&uid) || !matches!(phase, "Pending" | "Running") {
            return;
        }
        node.started = node.started.wrapping_add(1);
        let pod = PodRun {
            store: self.store.clone(),
            pod: (**object).clone(),
            host_ip: status::node_ip(node.index),
            pod_ip: status::pod_ip(node.index, node.started),
            startup: self.opts.startup_delay,
        };
        self.pods.insert(uid, tokio::spawn(pod.run()));
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        // Aborting the kubelet aborts the pods it runs.
        for task in self.pods.values() {
            task.abort();
        }
    }
}

/// Stops a pod marked for deletion: its containers take `termination` to exit, then the
/// kubelet confirms the deletion with grace period 0, for this very pod (its uid).
async fn stop(store: SharedStore, pod: std::sync::Arc<Value>, termination: Duration) {
    tokio::time::sleep(termination).await;
    let opts = DeleteOptions {
        preconditions: Preconditions {
            uid: Some(meta_str(&pod, "uid").to_string()),
            resource_version: None,
        },
        grace_period_seconds: Some(0),
    };
    let (ns, name) = (meta_str(&pod, "namespace"), meta_str(&pod, "name"));
    // Gone already (deleted with grace 0 by someone else) is the outcome wanted.
    let _ = store.write(false, |s, w| {
        s.delete(kinds::pods(), Some(ns), name, &opts, w)
    });
}

/// One pod's life on a simulated node.
struct PodRun {
    store: SharedStore,
    pod: Value,
    host_ip: String,
    pod_ip: String,
    startup: Duration,
}

impl PodRun {
    async fn run(self) {
        let phase = self
            .pod
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("Pending")
            .to_string();
        if phase == "Pending" {
            tokio::time::sleep(self.startup).await;
            let (host_ip, pod_ip) = (self.host_ip.clone(), self.pod_ip.clone());
            let started = self.set_status("Pending", |pod, now| {
                status::running(pod, &host_ip, &pod_ip, now)
            });
            if started.is_err() {
                return;
            }
        }
        let owners = owners(&self.store, &self.pod);
        let Some((after, exit_code)) = lifetime_among(&self.pod, &owners) else {
            return;
        };
        tokio::time::sleep(after).await;
        // The pod may be gone or changed meanwhile; then there is nothing to finish.
        let _ = self.set_status("Running", |pod, now| {
            status::terminated(pod, exit_code, now)
        });
    }

    /// Writes a new status computed from the current pod, if it is still the same pod in the
    /// expected phase.
    fn set_status(
        &self,
        expected_phase: &str,
        status: impl FnOnce(&Value, i64) -> Value,
    ) -> Result<(), ApiError> {
        let pods = kinds::pods();
        let ns = meta_str(&self.pod, "namespace");
        let name = meta_str(&self.pod, "name");
        let uid = meta_str(&self.pod, "uid");
        self.store.write(false, |s, w| {
            let current = s.get(pods, Some(ns), name)?;
            let phase = current.pointer("/status/phase").and_then(Value::as_str);
            if meta_str(&current, "uid") != uid || phase != Some(expected_phase) {
                return Err(ApiError::conflict(
                    pods,
                    name,
                    "the pod changed under the kubelet",
                ));
            }
            let mut new = (*current).clone();
            new["status"] = status(&current, w.now);
            s.update(pods, Some(ns), name, new, Part::Status, w)
                .map(|_| ())
        })
    }
}

#[cfg(test)]
mod tests;
