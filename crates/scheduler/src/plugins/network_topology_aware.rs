//! `network-topology-aware`: holds gangs with a hard network topology to the domains their tier
//! allows (the hypernode gradient) and scores each candidate domain by how full the gang
//! would leave it (Volcano's hypernode binpacking), so gangs fill domains that are already in
//! use before opening empty ones.

use crate::conf::Arguments;
use crate::framework::Plugin;
use crate::model::{DomainId, DomainTotals, JobId, Snapshot};
use crate::resource::{CPU_DIM, MEMORY_DIM, PODS_DIM, Resource};

/// Volcano's `MaxNodeScore`, which scales the plugin's scores.
const MAX_NODE_SCORE: f64 = 100.0;

/// The network-topology-aware plugin.
pub struct NetworkTopologyAware {
    weight: f64,
    /// Binpack weight per dimension (0 = not scored).
    resource_weights: Vec<f64>,
}

impl NetworkTopologyAware {
    /// Reads `weight`, `hypernode.binpack.cpu`, `hypernode.binpack.memory`,
    /// `hypernode.binpack.resources` and `hypernode.binpack.resources.<name>`; a negative
    /// weight counts as the default 1, as Volcano reads it.
    pub fn new(args: &Arguments, s: &Snapshot) -> Self {
        let positive = |v: f64| if v < 0.0 { 1.0 } else { v };
        let mut resource_weights = vec![0.0; s.dims.len()];
        resource_weights[CPU_DIM] = positive(args.f64_or("hypernode.binpack.cpu", 1.0));
        resource_weights[MEMORY_DIM] = positive(args.f64_or("hypernode.binpack.memory", 1.0));
        if let Some(list) = args.str("hypernode.binpack.resources") {
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                if let Some(d) = s.dims.index(name)
                    && d != CPU_DIM
                    && d != MEMORY_DIM
                {
                    resource_weights[d] =
                        positive(args.f64_or(&format!("hypernode.binpack.resources.{name}"), 1.0));
                }
            }
        }
        NetworkTopologyAware {
            weight: positive(args.f64_or("weight", 1.0)),
            resource_weights,
        }
    }
}

impl Plugin for NetworkTopologyAware {
    fn name(&self) -> &'static str {
        "network-topology-aware"
    }

    fn hyper_node_gradient(&self) -> bool {
        true
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
        let mut score = 0.0;
        let mut weights = 0.0;
        for (dim, req) in request.iter() {
            let w = self.resource_weights.get(dim).copied().unwrap_or(0.0);
            if dim == PODS_DIM || req <= 0 || w == 0.0 {
                continue;
            }
            let (used, alloc) = (totals.used.get(dim), totals.allocatable.get(dim));
            if used.saturating_add(req) > alloc || alloc <= 0 {
                return Some(0.0);
            }
            score += w * (used + req) as f64 / alloc as f64;
            weights += w;
        }
        if weights <= 0.0 {
            return Some(0.0);
        }
        Some(MAX_NODE_SCORE * self.weight * score / weights)
    }
}
