//! The simulated kubelets: a bound pod runs after the start-up delay and ends as its
//! annotations say; a pod whose node goes away is lost.
//!
//! Node loss: Kubernetes would taint the node, wait out the pods' `tolerationSeconds` (300s by
//! default) and delete them, while the pods' real state stays unknown. The simulation takes the
//! node as gone for good at once and reports each of its pods `Failed` with reason `NodeLost`,
//! as Kubernetes' node controller long did: the job controller sees a failed pod (no exit code)
//! and applies the Job's lifecycle policies, and the resources come free for the next session.

use std::collections::BTreeSet;
use std::time::Duration;

use volcano_api::k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus, Pod,
};
use volcano_api::scheduling::PodGroup;
use volcano_controllers::time::Instant;
use volcano_controllers::view::owning_job;

use super::annotations::{Outcome, ending};
use super::clock::{Clock, Event, PodRef};
use super::plan::group_name;
use crate::store::Store;
use volcano_api::WatchEvent;

/// A pod's phase (`Pending` when unset).
pub fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

/// The node a pod is bound to.
pub fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// Whether a pod has ended.
pub fn is_terminal(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Every node's kubelet.
#[derive(Debug, Clone)]
pub struct Kubelets {
    startup: Duration,
    down: BTreeSet<String>,
    /// How long a pod whose annotations give no end runs (`None`: until something ends it).
    default_duration: Option<Duration>,
}

impl Kubelets {
    /// Kubelets that start a bound pod `startup` after its binding.
    pub fn new(startup: Duration) -> Self {
        Kubelets {
            startup,
            down: BTreeSet::new(),
            default_duration: None,
        }
    }

    /// These kubelets, ending after `d` (Succeeded) every pod whose annotations give neither
    /// a duration nor a failure, as a scenario borrowed from a cluster has none.
    pub fn with_default_duration(mut self, d: Option<Duration>) -> Self {
        self.default_duration = d;
        self
    }

    /// Records whether `node`'s kubelet is gone.
    pub fn set_down(&mut self, node: &str, down: bool) {
        if down {
            self.down.insert(node.to_string());
        } else {
            self.down.remove(node);
        }
    }

    /// Whether `node`'s kubelet is gone.
    pub fn is_down(&self, node: &str) -> bool {
        self.down.contains(node)
    }

    /// A pod that has just been bound, or was created bound or running: schedules its start,
    /// or its end if it runs already; a pod bound to a node that is down is lost at once.
    pub fn adopt(
        &self,
        store: &mut Store,
        clock: &mut Clock,
        namespace: &str,
        name: &str,
        out: &mut Vec<WatchEvent>,
    ) {
        let Some(pod) = store.pod(namespace, name) else {
            return;
        };
        let Some(node) = node_of(pod) else { return };
        if is_terminal(pod) {
            return;
        }
        if self.is_down(node) {
            let node = node.to_string();
            out.extend(lose(store, namespace, name, &node, clock.now()));
        } else if phase(pod) == "Running" {
            schedule_end(store, clock, pod_ref(pod), self.default_duration);
        } else {
            clock.schedule_in(self.startup, Event::PodStart(pod_ref(pod)));
        }
    }

    /// The pod's containers are up: it runs, and its end is scheduled.
    pub fn start(
        &self,
        store: &mut Store,
        clock: &mut Clock,
        p: &PodRef,
        out: &mut Vec<WatchEvent>,
    ) {
        let Some(pod) = current(store, p) else { return };
        if phase(pod) != "Pending" {
            return;
        }
        let node = node_of(pod).map(str::to_string);
        let now = clock.now();
        if let Some(node) = node.filter(|n| self.is_down(n)) {
            out.extend(lose(store, &p.namespace, &p.name, &node, now));
            return;
        }
        let mut status = pod.status.clone().unwrap_or_default();
        status.phase = Some("Running".to_string());
        status.start_time = Some(now.to_time());
        status.container_statuses = Some(container_statuses(pod, || ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(now.to_time()),
            }),
            ..Default::default()
        }));
        if let Ok(w) = store.set_pod_status(&p.namespace, &p.name, status) {
            out.push(w);
            schedule_end(store, clock, p.clone(), self.default_duration);
        }
    }

    /// The pod's run is over: Succeeded with exit code 0, or Failed with exit code 1.
    pub fn end(
        &self,
        store: &mut Store,
        now: Instant,
        p: &PodRef,
        outcome: Outcome,
        out: &mut Vec<WatchEvent>,
    ) {
        let Some(pod) = current(store, p) else { return };
        if phase(pod) != "Running" {
            return;
        }
        let (phase, code, reason) = match outcome {
            Outcome::Succeed => ("Succeeded", 0, "Completed"),
            Outcome::Fail => ("Failed", 1, "Error"),
        };
        let started = pod.status.as_ref().and_then(|s| s.start_time.clone());
        let mut status = pod.status.clone().unwrap_or_default();
        status.phase = Some(phase.to_string());
        status.container_statuses = Some(container_statuses(pod, || ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: code,
                reason: Some(reason.to_string()),
                started_at: started.clone(),
                finished_at: Some(now.to_time()),
                ..Default::default()
            }),
            ..Default::default()
        }));
        if let Ok(w) = store.set_pod_status(&p.namespace, &p.name, status) {
            out.push(w);
        }
    }

    /// `node` went away: every pod on it that has not ended is lost.
    pub fn lose_pods_on(
        &self,
        store: &mut Store,
        node: &str,
        now: Instant,
        out: &mut Vec<WatchEvent>,
    ) {
        let on_node: Vec<(String, String)> = store
            .objects()
            .pods
            .iter()
            .filter(|p| node_of(p) == Some(node) && !is_terminal(p))
            .map(|p| {
                (
                    p.metadata.namespace.clone().unwrap_or_default(),
                    p.metadata.name.clone().unwrap_or_default(),
                )
            })
            .collect();
        for (ns, name) in on_node {
            out.extend(lose(store, &ns, &name, node, now));
        }
    }
}

/// The pod as `p` names it, if that incarnation still exists.
fn current<'s>(store: &'s Store, p: &PodRef) -> Option<&'s Pod> {
    store
        .pod(&p.namespace, &p.name)
        .filter(|pod| pod.metadata.uid.as_deref().unwrap_or_default() == p.uid)
}

/// A reference to this incarnation of `pod`.
pub fn pod_ref(pod: &Pod) -> PodRef {
    PodRef {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
    }
}

/// Schedules the end of a pod that runs from now, if its annotations give it one.
fn schedule_end(store: &Store, clock: &mut Clock, p: PodRef, default: Option<Duration>) {
    let Some(pod) = current(store, &p) else {
        return;
    };
    let ns = p.namespace.as_str();
    let job = owning_job(pod)
        .and_then(|j| store.job(ns, j))
        .map(|j| &j.metadata);
    let group = group_name(pod).and_then(|g| pod_group(store, ns, &g));
    let end = ending(pod, job, group.map(|g| &g.metadata))
        .or_else(|| default.map(|d| (d, Outcome::Succeed)));
    if let Some((after, outcome)) = end {
        clock.schedule_in(after, Event::PodEnd(p, outcome));
    }
}

fn pod_group<'s>(store: &'s Store, namespace: &str, name: &str) -> Option<&'s PodGroup> {
    store.objects().pod_groups.iter().find(|g| {
        g.metadata.namespace.as_deref() == Some(namespace)
            && g.metadata.name.as_deref() == Some(name)
    })
}

/// Marks a pod lost with its node.
fn lose(store: &mut Store, ns: &str, name: &str, node: &str, now: Instant) -> Option<WatchEvent> {
    let pod = store.pod(ns, name)?;
    let mut status = pod.status.clone().unwrap_or_default();
    status.phase = Some("Failed".to_string());
    status.reason = Some("NodeLost".to_string());
    status.message = Some(format!(
        "Node {node} which was running pod {name} is unresponsive (lost at {}s)",
        now.0.as_secs()
    ));
    store.set_pod_status(ns, name, status).ok()
}

fn container_statuses(pod: &Pod, state: impl Fn() -> ContainerState) -> Vec<ContainerStatus> {
    let running = |s: &ContainerState| s.running.is_some();
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .map(|c| {
            let st = state();
            ContainerStatus {
                name: c.name.clone(),
                image: c.image.clone().unwrap_or_default(),
                ready: running(&st),
                started: Some(running(&st)),
                state: Some(st),
                ..Default::default()
            }
        })
        .collect()
}
