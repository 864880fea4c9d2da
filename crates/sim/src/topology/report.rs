//! The topology figures of a run, from its job records and the objects at its end.

use std::collections::HashMap;

use volcano_api::Objects;
use volcano_api::keys;
use volcano_api::resources::canonical_amount;
use volcano_api::scheduling::phase as pg_phase;

use super::{Domains, GPU};
use crate::metrics::{DomainOccupancy, JobRecord, Stats, TopologyReport};

/// What the figures are computed from.
pub struct TopologyInput<'a> {
    /// The objects at the end of the run.
    pub objects: &'a Objects,
    /// The run's job records.
    pub jobs: &'a [JobRecord],
    /// How a list of waits is summed up (the run's own statistics).
    pub stats: fn(&[f64]) -> Stats,
}

/// Canonical amounts are milli-units for everything but bytes.
const MILLI: f64 = 1000.0;

/// The figures, or `None` when the run has no HyperNodes (so runs without them print and
/// write nothing new).
pub fn build_report(input: &TopologyInput<'_>) -> Option<TopologyReport> {
    let objects = input.objects;
    let domains = Domains::of(objects)?;
    let resource = if objects.nodes.iter().any(|n| allocatable(n, GPU) > 0) {
        GPU
    } else {
        "cpu"
    };
    let gangs: Vec<&JobRecord> = input
        .jobs
        .iter()
        .filter(|j| j.min_member > 1 && !j.nodes.is_empty())
        .collect();
    let topology_jobs: Vec<&JobRecord> = input
        .jobs
        .iter()
        .filter(|j| j.network_topology.is_some())
        .collect();
    let waits: Vec<f64> = topology_jobs.iter().filter_map(|j| j.wait_s).collect();
    let demands = waiting_demands(objects, resource);
    let smallest = demands.iter().copied().filter(|d| *d > 0).min();

    let mut used: HashMap<&str, i64> = HashMap::new();
    for p in &objects.pods {
        let running = !matches!(
            p.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        );
        let node = p.spec.as_ref().and_then(|s| s.node_name.as_deref());
        if let (true, Some(node)) = (running, node) {
            *used.entry(node).or_default() += request(p, resource);
        }
    }
    let total: HashMap<&str, i64> = objects
        .nodes
        .iter()
        .map(|n| {
            (
                n.metadata.name.as_deref().unwrap_or_default(),
                allocatable(n, resource),
            )
        })
        .collect();
    let lowest = domains.tree.domains.iter().map(|d| d.tier).min();
    let mut stranded = 0i64;
    let occupancy = domains
        .tree
        .domains
        .iter()
        .map(|d| {
            let sum = |m: &HashMap<&str, i64>| -> i64 {
                d.nodes
                    .iter()
                    .map(|n| m.get(n.as_str()).copied().unwrap_or(0))
                    .sum()
            };
            let (u, t) = (sum(&used), sum(&total));
            let free = (t - u).max(0);
            let is_stranded =
                Some(d.tier) == lowest && free > 0 && smallest.is_some_and(|s| free < s);
            if is_stranded {
                stranded += free;
            }
            DomainOccupancy {
                name: d.name.clone(),
                tier: d.tier,
                tier_name: d.tier_name.clone(),
                parent: d.parent.map(|p| domains.tree.domains[p].name.clone()),
                nodes: d.nodes.len() as u64,
                used: u as f64 / MILLI,
                total: t as f64 / MILLI,
                stranded: is_stranded,
            }
        })
        .collect();
    Some(TopologyReport {
        resource: resource.to_string(),
        gangs_ran: gangs.len() as u64,
        gangs_in_one_tier1_domain: gangs
            .iter()
            .filter(|j| domains.in_one_leaf(&j.nodes))
            .count() as u64,
        topology_jobs: topology_jobs.len() as u64,
        topology_wait_s: (input.stats)(&waits),
        network_topology_wait_s: topology_jobs
            .iter()
            .filter_map(|j| j.network_topology.as_ref())
            .map(|t| t.network_topology_wait_s)
            .sum(),
        gangs_waiting: demands.len() as u64,
        smallest_waiting_gang: smallest.map(|s| s as f64 / MILLI),
        stranded: stranded as f64 / MILLI,
        domains: occupancy,
    })
}

fn allocatable(node: &volcano_api::k8s_openapi::api::core::v1::Node, resource: &str) -> i64 {
    let status = node.status.as_ref();
    let list = status.and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref()));
    list.and_then(|l| l.get(resource))
        .and_then(|q| canonical_amount(resource, &q.0).ok())
        .unwrap_or(0)
}

fn request(pod: &volcano_api::k8s_openapi::api::core::v1::Pod, resource: &str) -> i64 {
    pod.spec
        .as_ref()
        .and_then(|s| volcano_api::resources::pod_requests(s).ok())
        .and_then(|r| r.get(resource).copied())
        .unwrap_or(0)
}

/// What each gang still waiting at the end (a PodGroup of minMember > 1, pending or
/// inqueue) needs of `resource`: its `minResources`, else the requests of its first
/// `minMember` pods.
fn waiting_demands(objects: &Objects, resource: &str) -> Vec<i64> {
    objects
        .pod_groups
        .iter()
        .filter(|g| g.spec.min_member > 1)
        .filter(|g| {
            let phase = g.status.as_ref().map_or("", |s| s.phase.as_str());
            matches!(phase, "" | pg_phase::PENDING | pg_phase::INQUEUE)
        })
        .map(|g| {
            let from_min = g
                .spec
                .min_resources
                .as_ref()
                .and_then(|m| m.get(resource))
                .and_then(|q| canonical_amount(resource, &q.0).ok());
            from_min.unwrap_or_else(|| {
                let (ns, name) = (
                    g.metadata.namespace.as_deref().unwrap_or_default(),
                    g.metadata.name.as_deref().unwrap_or_default(),
                );
                objects
                    .pods
                    .iter()
                    .filter(|p| p.metadata.namespace.as_deref().unwrap_or_default() == ns)
                    .filter(|p| {
                        p.metadata
                            .annotations
                            .as_ref()
                            .and_then(|a| a.get(keys::GROUP_NAME))
                            .is_some_and(|n| n == name)
                    })
                    .take(usize::try_from(g.spec.min_member).unwrap_or(0))
                    .map(|p| request(p, resource))
                    .sum()
            })
        })
        .collect()
}
