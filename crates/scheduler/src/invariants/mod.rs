//! What every session's decisions must keep, whatever the cluster: no node over its
//! allocatable, gangs placed whole or not at all, queues within their capability.
//!
//! The oracle judges [`Decisions`] against the [`Objects`] the session started from, counting
//! resources from the Kubernetes objects alone ([`accounting`]), never from the scheduler's
//! model: it is what the property tests and the simulator's fault checker (`volcano sim
//! --faults`) both ask, so the two cannot drift apart. Sans-IO, and it never panics on any
//! input.

pub mod accounting;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::keys;
use volcano_api::{NamespacedName, Objects};

use crate::framework::Decisions;
use accounting::{
    Res, add, finished, fits, group_of, is_best_effort, key, node_allocatable, node_of, parse,
    phase, pod_request, show, within,
};

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A bind names a pod the session's objects do not hold.
    UnknownPod {
        /// `ns/name`.
        pod: String,
    },
    /// A pod already on a node was bound again.
    BoundTwice {
        /// `ns/name`.
        pod: String,
        /// Where it was.
        on: String,
        /// Where the new bind sent it.
        to: String,
    },
    /// The scheduler bound a pod to a node that could not hold it, or to one whose pods
    /// already needed more than it has (out of sync).
    NodeOverAllocatable {
        /// Node.
        node: String,
        /// Σ requests after the session.
        used: String,
        /// Allocatable.
        allocatable: String,
    },
    /// The nodes reported out of sync are not those whose pods need more than they have.
    OutOfSyncMisreported {
        /// What the decisions report.
        reported: Vec<String>,
        /// What the objects show.
        expected: Vec<String>,
    },
    /// A gang got binds without enough members to start.
    GangPartlyPlaced {
        /// `ns/name` of the PodGroup.
        pod_group: String,
        /// Members ready after the session.
        ready: usize,
        /// `minMember`.
        min_member: i32,
    },
    /// A queue within its capability went over it.
    QueueOverCapability {
        /// Queue.
        queue: String,
        /// Σ requests of its pods after the session.
        used: String,
        /// Its capability.
        capability: String,
    },
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::UnknownPod { pod } => write!(f, "bind of unknown pod {pod}"),
            Violation::BoundTwice { pod, on, to } => {
                write!(f, "pod {pod} bound to {to} while already on {on}")
            }
            Violation::NodeOverAllocatable {
                node,
                used,
                allocatable,
            } => write!(
                f,
                "node {node} given a pod beyond its allocatable: uses {used}, has {allocatable}"
            ),
            Violation::OutOfSyncMisreported { reported, expected } => write!(
                f,
                "nodes reported out of sync {reported:?}, but the nodes whose pods need more than \
                 they have are {expected:?}"
            ),
            Violation::GangPartlyPlaced {
                pod_group,
                ready,
                min_member,
            } => write!(
                f,
                "PodGroup {pod_group} got binds with {ready} members ready, below minMember {min_member}"
            ),
            Violation::QueueOverCapability {
                queue,
                used,
                capability,
            } => write!(
                f,
                "queue {queue} pushed over its capability: uses {used}, capability {capability}"
            ),
        }
    }
}

/// Every invariant `d` breaks, judged against `before`, the objects its session started from.
pub fn check(before: &Objects, d: &Decisions) -> Vec<Violation> {
    let mut out = Vec::new();
    let pods: HashMap<NamespacedName, &Pod> = before
        .pods
        .iter()
        .map(|p| (NamespacedName::of(&p.metadata), &**p))
        .collect();
    let mut bound: Vec<(&Pod, &str)> = Vec::new();
    for (pod, node) in &d.binds {
        let Some(p) = pods.get(pod) else {
            out.push(Violation::UnknownPod {
                pod: pod.to_string(),
            });
            continue;
        };
        if let Some(on) = node_of(p) {
            out.push(Violation::BoundTwice {
                pod: pod.to_string(),
                on: on.to_string(),
                to: node.clone(),
            });
        }
        bound.push((p, node));
    }
    let evicted: BTreeSet<&NamespacedName> = d.evictions.iter().collect();
    nodes(before, d, &bound, &mut out);
    if !bound.is_empty() {
        gangs(before, &bound, &evicted, &mut out);
        queues(before, &bound, &evicted, &mut out);
    }
    out
}

/// A node that takes binds fits them with everything already on it. A pod evicted in the same
/// session still counts: its space is only free once it is gone, so a preemptor waits for it
/// (pipelined), it is never bound into it.
fn nodes(before: &Objects, d: &Decisions, bound: &[(&Pod, &str)], out: &mut Vec<Violation>) {
    let mut used: BTreeMap<&str, Res> = BTreeMap::new();
    for p in before.pods.iter().filter(|p| !finished(p)) {
        if let Some(n) = node_of(p) {
            add(used.entry(n).or_default(), &pod_request(p));
        }
    }
    let allocatable: BTreeMap<&str, Res> = before
        .nodes
        .iter()
        .filter_map(|n| Some((n.metadata.name.as_deref()?, node_allocatable(n))))
        .collect();
    let empty = Res::new();
    let out_of_sync: Vec<String> = allocatable
        .iter()
        .filter(|(n, a)| !fits(used.get(*n).unwrap_or(&empty), a))
        .map(|(n, _)| n.to_string())
        .collect();
    let mut reported = d.out_of_sync_nodes.clone();
    reported.sort();
    reported.dedup();
    if reported != out_of_sync {
        out.push(Violation::OutOfSyncMisreported {
            reported,
            expected: out_of_sync,
        });
    }
    let targets: BTreeSet<&str> = bound.iter().map(|(_, n)| *n).collect();
    for (p, n) in bound {
        add(used.entry(n).or_default(), &pod_request(p));
    }
    for (name, alloc) in &allocatable {
        let Some(u) = used.get(name).filter(|_| targets.contains(name)) else {
            continue;
        };
        if !fits(u, alloc) {
            out.push(Violation::NodeOverAllocatable {
                node: name.to_string(),
                used: show(u),
                allocatable: show(alloc),
            });
        }
    }
}

/// A gang that got binds has at least minMember members ready, as Volcano's `JobReady`
/// counts them: members bound or done, plus pending BestEffort ones (placeable anywhere).
fn gangs(
    before: &Objects,
    bound: &[(&Pod, &str)],
    evicted: &BTreeSet<&NamespacedName>,
    out: &mut Vec<Violation>,
) {
    let now_bound: BTreeSet<String> = bound.iter().map(|(p, _)| key(&p.metadata)).collect();
    let groups: BTreeSet<String> = bound.iter().filter_map(|(p, _)| group_of(p)).collect();
    let mut ready: BTreeMap<String, usize> = BTreeMap::new();
    for p in &before.pods {
        let Some(g) = group_of(p).filter(|g| groups.contains(g)) else {
            continue;
        };
        let k = key(&p.metadata);
        let counts = if now_bound.contains(&k) {
            true
        } else if node_of(p).is_some() {
            phase(p) != "Failed" && !evicted.contains(&NamespacedName::of(&p.metadata))
        } else {
            is_best_effort(p)
        };
        if counts {
            *ready.entry(g).or_default() += 1;
        }
    }
    for pg in &before.pod_groups {
        let k = key(&pg.metadata);
        if !groups.contains(&k) {
            continue;
        }
        let n = ready.get(&k).copied().unwrap_or(0);
        if (n as i64) < i64::from(pg.spec.min_member) {
            out.push(Violation::GangPartlyPlaced {
                pod_group: k,
                ready: n,
                min_member: pg.spec.min_member,
            });
        }
    }
}

/// A queue within its capability before the session is within it after. What it holds before
/// leaves out the pods this session evicts: a queue is judged on what it keeps.
fn queues(
    before: &Objects,
    bound: &[(&Pod, &str)],
    evicted: &BTreeSet<&NamespacedName>,
    out: &mut Vec<Violation>,
) {
    let queue_of: HashMap<String, &str> = before
        .pod_groups
        .iter()
        .map(|pg| {
            let q = if pg.spec.queue.is_empty() {
                keys::DEFAULT_QUEUE
            } else {
                pg.spec.queue.as_str()
            };
            (key(&pg.metadata), q)
        })
        .collect();
    let queue_of_pod = |p: &Pod| group_of(p).and_then(|g| queue_of.get(&g).copied());
    let occupies = |p: &Pod| {
        node_of(p).is_some() && !finished(p) && !evicted.contains(&NamespacedName::of(&p.metadata))
    };
    let mut used: BTreeMap<&str, Res> = BTreeMap::new();
    for p in before.pods.iter().filter(|p| occupies(p)) {
        if let Some(q) = queue_of_pod(p) {
            add(used.entry(q).or_default(), &pod_request(p));
        }
    }
    let mut after = used.clone();
    for (p, _) in bound {
        if let Some(q) = queue_of_pod(p) {
            add(after.entry(q).or_default(), &pod_request(p));
        }
    }
    let empty = Res::new();
    for q in &before.queues {
        let Some(cap) = q.spec.capability.as_ref().filter(|c| !c.is_empty()) else {
            continue;
        };
        let name = q.metadata.name.as_deref().unwrap_or_default();
        let cap = parse(Some(cap));
        let was = used.get(name).unwrap_or(&empty);
        let is = after.get(name).unwrap_or(&empty);
        if within(was, &cap) && !within(is, &cap) {
            out.push(Violation::QueueOverCapability {
                queue: name.to_string(),
                used: show(is),
                capability: show(&cap),
            });
        }
    }
}
