//! `network-topology-aware`: holds gangs with a hard network topology to the domains their tier
//! allows (the hypernode gradient) and scores each candidate domain by how full the gang
//! would leave it (Volcano's hypernode binpacking), so gangs fill domains that are already in
//! use before opening empty ones. It scores nodes too: a pod of a gang with a network topology
//! prefers nodes close to where its gang already is; any other pod prefers nodes whose
//! HyperNodes it leaves fuller (`hypernode.binpack.normal-pod.*`).

mod domain_use;

use std::collections::BTreeMap;

use domain_use::DomainUse;

use crate::conf::Arguments;
use crate::framework::Plugin;
use crate::model::{DomainId, DomainTotals, JobId, NodeId, Snapshot, TaskId, TaskStatus};
use crate::resource::{CPU_DIM, MEMORY_DIM, PODS_DIM, Resource};

/// Volcano's `MaxNodeScore`, which scales the plugin's scores.
const MAX_NODE_SCORE: f64 = 100.0;

/// The network-topology-aware plugin.
pub struct NetworkTopologyAware {
    weight: f64,
    /// Binpack weight per dimension; `None` for a resource not configured (not looked at).
    resource_weights: Vec<Option<f64>>,
    /// Whether pods without a network topology are scored (`hypernode.binpack.normal-pod.enable`).
    normal_pods: bool,
    /// How much less each tier above the first counts for them
    /// (`hypernode.binpack.normal-pod.fading`).
    fading: f64,
    /// The domains' totals; `None` without usable HyperNodes (no node is scored then).
    domains: Option<DomainUse>,
}

impl NetworkTopologyAware {
    /// Reads `weight`, `hypernode.binpack.cpu`, `hypernode.binpack.memory`,
    /// `hypernode.binpack.resources` and `hypernode.binpack.resources.<name>`; a negative
    /// weight counts as the default 1, as Volcano reads it.
    pub fn new(args: &Arguments, s: &Snapshot) -> Self {
        let positive = |v: f64| if v < 0.0 { 1.0 } else { v };
        let mut resource_weights = vec![None; s.dims.len()];
        resource_weights[CPU_DIM] = Some(positive(args.f64_or("hypernode.binpack.cpu", 1.0)));
        resource_weights[MEMORY_DIM] = Some(positive(args.f64_or("hypernode.binpack.memory", 1.0)));
        if let Some(list) = args.str("hypernode.binpack.resources") {
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                if let Some(d) = s.dims.index(name)
                    && d != CPU_DIM
                    && d != MEMORY_DIM
                {
                    resource_weights[d] = Some(positive(
                        args.f64_or(&format!("hypernode.binpack.resources.{name}"), 1.0),
                    ));
                }
            }
        }
        let fading = args.f64_or("hypernode.binpack.normal-pod.fading", 0.8);
        NetworkTopologyAware {
            weight: positive(args.f64_or("weight", 1.0)),
            resource_weights,
            normal_pods: args.bool_or("hypernode.binpack.normal-pod.enable", true),
            // 0 is allowed: only the first tier counts.
            fading: if fading < 0.0 { 0.8 } else { fading },
            domains: DomainUse::new(s),
        }
    }

    /// How full `req` would leave `alloc`/`used`, weighted over the configured resources asked
    /// for (0..=1); 0 when it would not fit one of them, even one weighted 0 (as in Volcano).
    fn binpack(&self, req: &Resource, alloc: &Resource, used: &Resource) -> f64 {
        let mut score = 0.0;
        let mut weights = 0.0;
        for (dim, r) in req.iter() {
            let Some(w) = self.resource_weights.get(dim).copied().flatten() else {
                continue;
            };
            if dim == PODS_DIM || r <= 0 {
                continue;
            }
            let (u, a) = (used.get(dim), alloc.get(dim));
            if u.saturating_add(r) > a || a <= 0 {
                return 0.0;
            }
            score += w * (u + r) as f64 / a as f64;
            weights += w;
        }
        if weights <= 0.0 { 0.0 } else { score / weights }
    }

    /// Volcano's score for a pod without a network topology on node `n`: over the tiers, each
    /// weighted `fading^(tier-1)`, how full the node's HyperNode of that tier would be (full
    /// marks where the node has none: such nodes are preferred).
    fn normal_pod_score(&self, s: &Snapshot, t: TaskId, n: NodeId, du: &DomainUse) -> f64 {
        let req = &s.task(t).resreq;
        let doms = s
            .topology
            .node_domains
            .get(n.idx())
            .map_or(&[][..], Vec::as_slice);
        let (mut total, mut weights) = (0.0, 0.0);
        // Only the tiers there are: a HyperNode may have any tier up to 2^31-1.
        for &tier in &du.tiers {
            let w = self
                .fading
                .powi((tier - 1).clamp(0, i32::MAX as i64) as i32);
            let here = doms
                .iter()
                .find(|&&d| s.topology.domain(d).tier == tier)
                .and_then(|&d| du.of(d));
            let score = match here {
                None => 1.0,
                Some((alloc, used)) => self.binpack(req, alloc, used),
            };
            total += w * score;
            weights += w;
        }
        if weights <= 0.0 { 0.0 } else { total / weights }
    }

    /// Volcano's tier score of the lowest domain holding node `n` and `allocated`: 1 when it
    /// is `allocated` itself, then lower the higher its tier, 0 for the whole cluster.
    fn closeness(&self, s: &Snapshot, n: NodeId, allocated: DomainId, du: &DomainUse) -> f64 {
        let topo = &s.topology;
        let Some(&own) = topo.node_domains.get(n.idx()).and_then(|d| d.first()) else {
            return 0.0;
        };
        if own == topo.root() {
            return 0.0;
        }
        if own == allocated {
            return 1.0;
        }
        let a = topo.domain(allocated);
        let common = topo.node_domains[n.idx()].iter().find(|&&d| {
            topo.domain(d).tier >= a.tier && a.nodes.first().is_some_and(|&m| topo.contains(d, m))
        });
        // The cluster domain is the highest tier, so sharing only it scores 0.
        let (min, max) = (du.min_tier(), du.max_tier());
        match common {
            Some(&d) if max > min => (max - topo.domain(d).tier) as f64 / (max - min) as f64,
            Some(_) => 1.0,
            None => 0.0,
        }
    }
}

/// The tasks whose placement bounds `t`'s (its sub-group's, or its gang's), when they have a
/// network topology.
fn topology_peers(s: &Snapshot, t: TaskId) -> Option<Vec<TaskId>> {
    let job = s.job(s.task(t).job?);
    if let Some(groups) = &job.sub_groups {
        let g = groups.groups.iter().find(|g| g.tasks.contains(&t))?;
        return g.network_topology.is_some().then(|| g.tasks.clone());
    }
    job.network_topology.as_ref().map(|_| job.tasks.clone())
}

impl Plugin for NetworkTopologyAware {
    fn name(&self) -> &'static str {
        "network-topology-aware"
    }

    fn hyper_node_gradient(&self) -> bool {
        true
    }

    fn scores_nodes(&self) -> bool {
        self.domains.is_some()
    }

    fn batch_node_order(&self, s: &Snapshot, t: TaskId, nodes: &[NodeId], scores: &mut [f64]) {
        let Some(du) = &self.domains else {
            return;
        };
        match topology_peers(s, t) {
            Some(peers) => self.network_aware_scores(s, &peers, nodes, du, scores),
            None if self.normal_pods => {
                for (i, &n) in nodes.iter().enumerate() {
                    scores[i] += MAX_NODE_SCORE * self.weight * self.normal_pod_score(s, t, n, du);
                }
            }
            None => {}
        }
    }

    fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        if let Some(du) = &mut self.domains {
            du.update(s, t, true);
        }
    }

    fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        if let Some(du) = &mut self.domains {
            du.update(s, t, false);
        }
    }

    /// How full the domain would be with the whole gang in it, weighted over the resources the
    /// gang asks for; 0 when the gang would not fit its totals.
    fn hyper_node_order(
        &self,
        _s: &Snapshot,
        _j: JobId,
        request: &Resource,
        _d: DomainId,
        totals: &DomainTotals,
    ) -> Option<f64> {
        Some(
            MAX_NODE_SCORE * self.weight * self.binpack(request, &totals.allocatable, &totals.used),
        )
    }
}

impl NetworkTopologyAware {
    /// Volcano's `batchNodeOrderFnForNetworkAwarePods`: nodes closer to the domain the peers
    /// already use score higher; among the best, the nodes whose lowest domain holds more of
    /// the peers. Nothing is scored before the first peer is placed.
    fn network_aware_scores(
        &self,
        s: &Snapshot,
        peers: &[TaskId],
        nodes: &[NodeId],
        du: &DomainUse,
        scores: &mut [f64],
    ) {
        let topo = &s.topology;
        let placed: Vec<NodeId> = peers
            .iter()
            .map(|&p| s.task(p))
            .filter(|p| p.status.is_allocated() || p.status == TaskStatus::Pipelined)
            .filter_map(|p| p.node)
            .collect();
        let Some(allocated) = topo.lowest_common(placed.iter().copied()) else {
            return;
        };
        let raw: Vec<f64> = nodes
            .iter()
            .map(|&n| self.closeness(s, n, allocated, du))
            .collect();
        let best = raw.iter().copied().fold(f64::MIN, f64::max);
        let tied = raw.iter().filter(|&&v| v == best).count();
        let mut per_domain: BTreeMap<DomainId, usize> = BTreeMap::new();
        if tied > 1 {
            for &n in &placed {
                if let Some(&d) = topo.node_domains.get(n.idx()).and_then(|d| d.first()) {
                    *per_domain.entry(d).or_default() += 1;
                }
            }
        }
        for (i, &n) in nodes.iter().enumerate() {
            let mut v = raw[i];
            if tied > 1 && v == best && !peers.is_empty() {
                let own = topo.node_domains.get(n.idx()).and_then(|d| d.first());
                let held = own.and_then(|d| per_domain.get(d)).copied().unwrap_or(0);
                v += held as f64 / peers.len() as f64;
            }
            scores[i] += MAX_NODE_SCORE * self.weight * v;
        }
    }
}
