//! `binpack`: prefers nodes that the task fills most, per resource weights.

use crate::conf::Arguments;
use crate::framework::Plugin;
use crate::model::{NodeId, Snapshot, TaskId};
use crate::resource::{CPU_DIM, MEMORY_DIM, PODS_DIM};

const MAX_NODE_SCORE: f64 = 100.0;

/// The binpack plugin.
pub struct Binpack {
    weight: f64,
    /// Weight per dimension (0 = not scored).
    resource_weights: Vec<f64>,
}

impl Binpack {
    /// Reads `binpack.weight`, `binpack.cpu`, `binpack.memory`, `binpack.resources` and
    /// `binpack.resources.<name>`.
    pub fn new(args: &Arguments, s: &Snapshot) -> Self {
        let positive = |v: f64| if v < 0.0 { 1.0 } else { v };
        let mut resource_weights = vec![0.0; s.dims.len()];
        resource_weights[CPU_DIM] = positive(args.f64_or("binpack.cpu", 1.0));
        resource_weights[MEMORY_DIM] = positive(args.f64_or("binpack.memory", 1.0));
        if let Some(list) = args.str("binpack.resources") {
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                if let Some(d) = s.dims.index(name)
                    && d != CPU_DIM
                    && d != MEMORY_DIM
                {
                    resource_weights[d] =
                        positive(args.f64_or(&format!("binpack.resources.{name}"), 1.0));
                }
            }
        }
        Binpack {
            weight: args.f64_or("binpack.weight", 1.0),
            resource_weights,
        }
    }
}

impl Plugin for Binpack {
    fn name(&self) -> &'static str {
        "binpack"
    }

    fn scores_nodes(&self) -> bool {
        self.weight != 0.0
    }

    fn node_order(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Option<f64> {
        if self.weight == 0.0 {
            return Some(0.0);
        }
        let req = &s.task(t).resreq;
        let node = s.node(n);
        let mut score = 0.0;
        let mut weight_sum = 0.0;
        for (d, request) in req.iter() {
            let w = self.resource_weights.get(d).copied().unwrap_or(0.0);
            if request == 0 || d == PODS_DIM || w == 0.0 {
                continue;
            }
            let capacity = node.allocatable.get(d);
            let used = node.used.get(d).saturating_add(request);
            if capacity != 0 {
                if used > capacity {
                    return Some(0.0);
                }
                score += used as f64 * w / capacity as f64;
            }
            weight_sum += w;
        }
        if weight_sum > 0.0 {
            score /= weight_sum;
        }
        Some(score * MAX_NODE_SCORE * self.weight)
    }
}
