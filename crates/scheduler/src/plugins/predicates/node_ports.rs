//! NodePorts: a pod's `hostPort`s must be free on the node, compared by protocol and host IP as
//! kube-scheduler compares them.
//!
//! The ports a pod takes are those of its containers and of its sidecar init containers
//! (`restartPolicy: Always`), the only init containers that run for the pod's whole life. A
//! port with no protocol is TCP; a port with no host IP, or with `0.0.0.0`, binds every
//! address, so it conflicts with the same protocol and port on any IP.
//!
//! The ports in use are indexed per node the first time a pod asking for host ports is
//! checked: a session without such pods pays nothing. Every pod on a node counts (pipelined
//! and terminating ones too, as in Volcano's node view) except those evicted in the session.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};

use k8s_openapi::api::core::v1::{Container, Pod};
use volcano_api::k8s_openapi;

use super::Filter;
use crate::fit::FitReason;
use crate::model::{NodeId, NodeSet, Snapshot, TaskId, TaskStatus};

/// kube-scheduler's reason for a node where a requested host port is taken.
pub(super) const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// The address that binds every IP of the node.
const BIND_ALL: &str = "0.0.0.0";

/// One host port a pod takes, with kube's defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPort {
    ip: String,
    protocol: String,
    port: i32,
}

impl HostPort {
    /// Whether `self` and `other` cannot both be bound on one node.
    fn conflicts(&self, other: &HostPort) -> bool {
        self.port == other.port
            && self.protocol == other.protocol
            && (self.ip == other.ip || self.ip == BIND_ALL || other.ip == BIND_ALL)
    }
}

/// Whether the pod takes any host port for its whole life (cheap: most pods have no ports).
fn has_host_ports(pod: &Pod) -> bool {
    lifelong_containers(pod)
        .flat_map(|c| c.ports.iter().flatten())
        .any(|p| p.host_port.is_some_and(|hp| hp > 0))
}

/// The containers that run for the pod's whole life: its containers and its sidecars (init
/// containers with `restartPolicy: Always`).
fn lifelong_containers(pod: &Pod) -> impl Iterator<Item = &Container> {
    let spec = pod.spec.as_ref();
    let sidecars = spec
        .and_then(|s| s.init_containers.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    sidecars.chain(spec.into_iter().flat_map(|s| &s.containers))
}

/// The host ports the pod takes for its whole life.
fn host_ports(pod: &Pod) -> Vec<HostPort> {
    lifelong_containers(pod)
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let port = p.host_port.filter(|&hp| hp > 0)?;
            let ip = p.host_ip.as_deref().filter(|ip| !ip.is_empty());
            let protocol = p.protocol.as_deref().filter(|pr| !pr.is_empty());
            Some(HostPort {
                ip: ip.unwrap_or(BIND_ALL).to_string(),
                protocol: protocol.unwrap_or("TCP").to_string(),
                port,
            })
        })
        .collect()
}

/// The host ports in use, by node, and the pods holding them.
#[derive(Default)]
struct PortIndex {
    /// Each pod with host ports counted here, with the node it is counted on.
    counted: HashMap<TaskId, NodeId>,
    /// Ports in use on each node that has any, with how many pods hold each (a port bound
    /// twice, by another scheduler, stays in use until both pods are gone).
    used: HashMap<NodeId, Vec<(HostPort, u32)>>,
    /// The nodes where each (protocol, port) is in use on some address.
    holders: HashMap<(String, i32), NodeSet>,
    /// How many nodes the snapshot has.
    nodes: usize,
}

impl PortIndex {
    /// Indexes every pod on a node except those finished or evicted in the session.
    fn build(s: &Snapshot, evicted: &HashSet<TaskId>) -> Self {
        let mut index = PortIndex {
            nodes: s.nodes.len(),
            ..PortIndex::default()
        };
        for (i, task) in s.tasks.iter().enumerate() {
            let t = TaskId(i as u32);
            let Some(n) = task.node else { continue };
            if matches!(task.status, TaskStatus::Succeeded | TaskStatus::Failed)
                || !has_host_ports(&task.pod)
                || evicted.contains(&t)
            {
                continue;
            }
            index.add(s, t, n);
        }
        index
    }

    fn add(&mut self, s: &Snapshot, t: TaskId, n: NodeId) {
        if self.counted.insert(t, n).is_some() {
            return;
        }
        let used = self.used.entry(n).or_default();
        for port in host_ports(&s.task(t).pod) {
            self.holders
                .entry((port.protocol.clone(), port.port))
                .or_insert_with(|| NodeSet::empty(self.nodes))
                .insert(n);
            match used.iter_mut().find(|(p, _)| *p == port) {
                Some((_, holders)) => *holders += 1,
                None => used.push((port, 1)),
            }
        }
    }

    fn remove(&mut self, s: &Snapshot, t: TaskId) {
        let Some(n) = self.counted.remove(&t) else {
            return;
        };
        let Some(used) = self.used.get_mut(&n) else {
            return;
        };
        for port in host_ports(&s.task(t).pod) {
            if let Some(i) = used.iter().position(|(p, _)| *p == port) {
                used[i].1 -= 1;
                if used[i].1 == 0 {
                    used.swap_remove(i);
                }
            }
            let still_held = used
                .iter()
                .any(|(p, _)| p.port == port.port && p.protocol == port.protocol);
            if !still_held
                && let Some(holders) = self.holders.get_mut(&(port.protocol.clone(), port.port))
            {
                holders.remove(n);
            }
        }
    }

    fn fits(&self, want: &[HostPort], n: NodeId) -> bool {
        self.used.get(&n).is_none_or(|used| free(used, want))
    }
}

/// Whether none of `want` conflicts with the ports `used` on one node.
fn free(used: &[(HostPort, u32)], want: &[HostPort]) -> bool {
    !want
        .iter()
        .any(|w| used.iter().any(|(p, _)| p.conflicts(w)))
}

/// The ports asked by the task last checked, kept while the scan walks the nodes.
struct Asked {
    task: TaskId,
    ports: Vec<HostPort>,
}

/// The host ports in use on each node.
pub(super) struct NodePorts {
    /// Built on the first check of a pod with host ports.
    index: RefCell<Option<PortIndex>>,
    asked: RefCell<Option<Asked>>,
    /// The last task checked, when it asks for no port.
    portless: Cell<Option<TaskId>>,
    /// Pods with host ports evicted in the session before the index was built: they are
    /// still on their node (releasing) but no longer count.
    evicted: HashSet<TaskId>,
}

impl NodePorts {
    /// A filter whose index of the snapshot's ports is built when first needed.
    pub(super) fn new(_s: &Snapshot) -> Self {
        NodePorts {
            index: RefCell::new(None),
            asked: RefCell::new(None),
            portless: Cell::new(None),
            evicted: HashSet::new(),
        }
    }
}

impl NodePorts {
    /// Runs `f` over the port index (built on first need) and the ports `t` asks for.
    fn with_index<R>(
        &self,
        s: &Snapshot,
        t: TaskId,
        f: impl FnOnce(&PortIndex, &[HostPort]) -> R,
    ) -> R {
        let mut asked = self.asked.borrow_mut();
        let asked = match &mut *asked {
            Some(a) if a.task == t => a,
            slot => slot.insert(Asked {
                task: t,
                ports: host_ports(&s.task(t).pod),
            }),
        };
        let mut index = self.index.borrow_mut();
        let index = index.get_or_insert_with(|| PortIndex::build(s, &self.evicted));
        f(index, &asked.ports)
    }
}

impl Filter for NodePorts {
    fn concerns(&self, s: &Snapshot, t: TaskId) -> bool {
        has_host_ports(&s.task(t).pod)
    }

    fn filter(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Result<(), FitReason> {
        // The scan asks about one task on many nodes: answer a task without ports from one
        // comparison.
        match self.portless.get() {
            Some(p) if p == t => return Ok(()),
            _ if !has_host_ports(&s.task(t).pod) => {
                self.portless.set(Some(t));
                return Ok(());
            }
            _ => {}
        }
        self.with_index(s, t, |index, want| {
            if index.fits(want, n) {
                Ok(())
            } else {
                Err(FitReason::resolvable(ERR_REASON).depending_on_pods())
            }
        })
    }

    fn narrow(&self, s: &Snapshot, t: TaskId, nodes: &mut NodeSet) {
        if !has_host_ports(&s.task(t).pod) {
            return;
        }
        self.with_index(s, t, |index, want| {
            for w in want {
                let Some(holders) = index.holders.get(&(w.protocol.clone(), w.port)) else {
                    continue;
                };
                if w.ip == BIND_ALL {
                    // Every address of the node is asked: any holder conflicts.
                    nodes.difference_with(holders);
                } else {
                    for (&n, used) in &index.used {
                        if holders.contains(n) && !free(used, std::slice::from_ref(w)) {
                            nodes.remove(n);
                        }
                    }
                }
            }
        });
    }

    fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        if !has_host_ports(&s.task(t).pod) {
            return;
        }
        match (self.index.get_mut(), s.task(t).node) {
            (Some(index), Some(n)) => index.add(s, t, n),
            (Some(_), None) => {}
            (None, _) => {
                self.evicted.remove(&t);
            }
        }
    }

    fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        if !has_host_ports(&s.task(t).pod) {
            return;
        }
        match self.index.get_mut() {
            Some(index) => index.remove(s, t),
            // An evicted pod is still on its node; an undone placement is not, and the
            // index, once built, will not find it there.
            None if s.task(t).node.is_some() => {
                self.evicted.insert(t);
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, ContainerPort, PodSpec};

    fn port(ip: &str, protocol: &str, host_port: i32) -> ContainerPort {
        ContainerPort {
            container_port: 8080,
            host_ip: (!ip.is_empty()).then(|| ip.to_string()),
            protocol: (!protocol.is_empty()).then(|| protocol.to_string()),
            host_port: Some(host_port),
            ..Default::default()
        }
    }

    fn pod_with(ports: Vec<ContainerPort>) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    ports: Some(ports),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Whether a pod asking `want` fits a node whose pods hold `used`.
    fn fits(used: Vec<ContainerPort>, want: Vec<ContainerPort>) -> bool {
        let mut index = PortIndex::default();
        let held = index.used.entry(NodeId(0)).or_default();
        for p in host_ports(&pod_with(used)) {
            held.push((p, 1));
        }
        index.fits(&host_ports(&pod_with(want)), NodeId(0))
    }

    #[test]
    fn same_port_conflicts_only_on_same_protocol_and_overlapping_ip() {
        // Different protocols on one port share it.
        assert!(fits(
            vec![port("127.0.0.1", "UDP", 8080)],
            vec![port("127.0.0.1", "TCP", 8080)]
        ));
        // Different ports never conflict.
        assert!(fits(
            vec![port("127.0.0.1", "TCP", 8080)],
            vec![port("127.0.0.1", "TCP", 8081)]
        ));
        // Different specific IPs share a port.
        assert!(fits(
            vec![port("127.0.0.1", "TCP", 8001)],
            vec![port("127.0.0.2", "TCP", 8001)]
        ));
        assert!(!fits(
            vec![port("127.0.0.1", "TCP", 8001)],
            vec![port("127.0.0.1", "TCP", 8001)]
        ));
        // No protocol means TCP.
        assert!(!fits(
            vec![port("10.0.0.1", "", 9000)],
            vec![port("10.0.0.1", "TCP", 9000)]
        ));
    }

    #[test]
    fn an_unset_or_wildcard_host_ip_conflicts_with_every_ip() {
        assert!(!fits(
            vec![port("127.0.0.1", "TCP", 8001)],
            vec![port("0.0.0.0", "TCP", 8001)]
        ));
        assert!(!fits(
            vec![port("", "TCP", 8001)],
            vec![port("127.0.0.1", "TCP", 8001)]
        ));
        assert!(!fits(
            vec![port("127.0.0.1", "TCP", 8001)],
            vec![port("", "TCP", 8001)]
        ));
        assert!(fits(
            vec![port("", "UDP", 8001)],
            vec![port("127.0.0.1", "TCP", 8001)]
        ));
    }

    #[test]
    fn only_sidecar_init_containers_hold_ports() {
        let init = |policy: Option<&str>| Container {
            name: "init".into(),
            restart_policy: policy.map(str::to_string),
            ports: Some(vec![port("", "", 7000)]),
            ..Default::default()
        };
        let pod = |policy| Pod {
            spec: Some(PodSpec {
                init_containers: Some(vec![init(policy)]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(host_ports(&pod(None)).is_empty());
        assert_eq!(
            host_ports(&pod(Some("Always"))),
            vec![HostPort {
                ip: BIND_ALL.into(),
                protocol: "TCP".into(),
                port: 7000
            }]
        );
    }
}
