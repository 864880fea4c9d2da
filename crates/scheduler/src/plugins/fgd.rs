//! `fgd`: the fragmentation-aware node score of "Beware of Fragmentation" (Weng et al., USENIX
//! ATC'23). A node's GPU fragmentation is what its free GPU share cannot give the typical
//! pods of the workload; the score prefers the placement that grows the cluster's
//! fragmentation least, and picks the device a GPU share goes to the same way.
//!
//! The typical workload is read from the snapshot: every task keyed by (CPU, share of each
//! GPU, GPUs, allowed models), the most common keys covering `fgd.popularity` percent of the
//! tasks, each weighted by its frequency.

use std::collections::HashMap;

use crate::conf::Arguments;
use crate::framework::Plugin;
use crate::model::gpu::{DEVICE_MILLI, GpuRequest, NodeGpus};
use crate::model::{NodeId, Snapshot, TaskId};

/// One kind of pod of the typical workload.
#[derive(Debug, Clone, PartialEq)]
struct TaskKind {
    /// CPU request, milli.
    cpu: i64,
    /// Share of each GPU, thousandths (0 for CPU-only pods).
    share: u32,
    /// GPUs (0 for CPU-only pods).
    count: u32,
    /// Models allowed (empty = any), as a bit set over the snapshot's models.
    models: Option<u64>,
    /// Frequency in the workload.
    weight: f64,
}

/// The fgd plugin.
pub struct Fgd {
    weight: f64,
    /// Weight of the CPU-balance tie-break (0 = off); see `fgd.cpuBalance`.
    balance: f64,
    /// The typical workload's CPU per GPU thousandth, milli-CPU: what a node's free GPU share
    /// will ask of its CPU.
    cpu_per_gpu: f64,
    /// Weight of the model-pressure tie-break (0 = off); see `fgd.modelPressure`.
    pressure_weight: f64,
    /// Per model (as `models`), in [0, 1]: how much the kinds bound to a set of models need
    /// it, relative to the most needed model.
    pressure: Vec<f64>,
    /// Kinds that ask for GPUs.
    gpu_kinds: Vec<TaskKind>,
    /// Σ weight of CPU-only kinds: for them every free GPU share is a fragment.
    cpu_only_weight: f64,
    /// Model names seen on nodes, upper-cased, for the bit sets.
    models: Vec<String>,
}

/// A node as fragmentation sees it: CPU left, free share of each GPU, and its model.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct NodeState {
    cpu_left: i64,
    model: usize,
    free: Vec<u32>,
}

impl Fgd {
    /// Reads `fgd.weight` (default 1), `fgd.popularity` (default 95), the tie-break weights `fgd.cpuBalance` and `fgd.modelPressure` (default 0,
    /// off) and derives the typical workload from the snapshot's tasks.
    pub fn new(args: &Arguments, s: &Snapshot) -> Self {
        let popularity = args.f64_or("fgd.popularity", 95.0).clamp(0.0, 100.0);
        let mut models: Vec<String> = Vec::new();
        let mut gpus_per_model: Vec<f64> = Vec::new();
        for n in &s.nodes {
            if let Some(g) = n.gpus.as_deref() {
                let m = node_model(g);
                let i = match models.iter().position(|x| *x == m) {
                    Some(i) => i,
                    None => {
                        models.push(m);
                        gpus_per_model.push(0.0);
                        models.len() - 1
                    }
                };
                gpus_per_model[i] += g.devices.len() as f64;
            }
        }
        // Key: (cpu, share, count, spec as written), as the paper counts them.
        let mut counts: HashMap<(i64, u32, u32, String), u64> = HashMap::new();
        for t in &s.tasks {
            let (share, count, spec) = match t.gpu.as_deref() {
                Some(g) => (g.cores, g.count, g.use_models.join(",")),
                None => (0, 0, String::new()),
            };
            *counts
                .entry((t.resreq.cpu(), share, count, spec))
                .or_default() += 1;
        }
        let total: u64 = counts.values().sum();
        let mut kinds: Vec<((i64, u32, u32, String), u64)> = counts.into_iter().collect();
        // Most common first; on equal counts the larger key first.
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        let threshold = total as f64 * popularity / 100.0;
        let mut kept = Vec::new();
        let mut covered = 0u64;
        for k in kinds {
            if covered as f64 >= threshold && !kept.is_empty() {
                break;
            }
            covered += k.1;
            kept.push(k);
        }
        let mut gpu_kinds = Vec::new();
        let mut cpu_only_weight = 0.0;
        for ((cpu, share, count, spec), n) in kept {
            let weight = n as f64 / covered.max(1) as f64;
            if count == 0 {
                cpu_only_weight += weight;
                continue;
            }
            let allowed = (!spec.is_empty()).then(|| {
                let wanted: Vec<&str> = spec.split(',').collect();
                models
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| wanted.iter().any(|w| m.contains(w)))
                    .fold(0u64, |bits, (i, _)| bits | (1u64 << (i % 64)))
            });
            gpu_kinds.push(TaskKind {
                cpu,
                share,
                count,
                models: allowed,
                weight,
            });
        }
        let pressure = model_pressure(&gpu_kinds, &gpus_per_model);
        let (cpu_mass, gpu_mass) = gpu_kinds.iter().fold((0.0, 0.0), |(c, g), k| {
            (
                c + k.weight * k.cpu as f64,
                g + k.weight * f64::from(k.share) * f64::from(k.count),
            )
        });
        Fgd {
            weight: args.f64_or("fgd.weight", 1.0),
            balance: args.f64_or("fgd.cpuBalance", 0.0).max(0.0),
            cpu_per_gpu: if gpu_mass > 0.0 {
                cpu_mass / gpu_mass
            } else {
                0.0
            },
            pressure_weight: args.f64_or("fgd.modelPressure", 0.0).max(0.0),
            pressure,
            gpu_kinds,
            cpu_only_weight,
            models,
        }
    }

    /// `(Σ fragmentation, Σ free GPU share)` over the snapshot's nodes, in thousandths.
    pub fn cluster(&self, s: &Snapshot) -> (f64, u64) {
        s.node_ids()
            .filter_map(|n| self.state(s, n))
            .fold((0.0, 0), |(f, r), st| {
                let free: u32 = st.free.iter().sum();
                (f + self.fragmentation(&st), r + u64::from(free))
            })
    }

    fn state(&self, s: &Snapshot, n: NodeId) -> Option<NodeState> {
        let node = s.node(n);
        let g = node.gpus.as_deref()?;
        let model = node_model(g);
        Some(NodeState {
            cpu_left: node.idle.cpu(),
            model: self.models.iter().position(|m| *m == model).unwrap_or(0),
            free: g.devices.iter().map(|d| d.free_cores()).collect(),
        })
    }

    /// The node's expected fragmentation under the typical workload, in GPU thousandths.
    fn fragmentation(&self, st: &NodeState) -> f64 {
        let all: u32 = st.free.iter().sum();
        let mut f = self.cpu_only_weight * f64::from(all);
        for k in &self.gpu_kinds {
            let allowed = k
                .models
                .is_none_or(|bits| bits & (1u64 << (st.model % 64)) != 0);
            let phi = if !allowed || st.cpu_left < k.cpu {
                all
            } else {
                let mut fitting = 0u32;
                let mut leftover = 0u32;
                for &r in &st.free {
                    if r >= k.share {
                        fitting += 1;
                    } else {
                        leftover += r;
                    }
                }
                if fitting >= k.count { leftover } else { all }
            };
            f += k.weight * f64::from(phi);
        }
        f
    }

    /// The paper's score: the fragmentation drop through a sigmoid, truncated to a whole
    /// number (the ties that leaves are part of the method: node rank breaks them).
    fn to_score(delta: f64) -> f64 {
        (100.0 / (1.0 + (-delta / SIGMOID_SCALE).exp())).trunc()
    }

    /// GPU thousandths of the node's free share that its CPU left cannot serve, at the
    /// typical workload's CPU per GPU.
    fn stranded(&self, gpu_left: f64, cpu_left: f64) -> f64 {
        if self.cpu_per_gpu <= 0.0 {
            return 0.0;
        }
        (gpu_left - cpu_left.max(0.0) / self.cpu_per_gpu).max(0.0)
    }

    /// With `fgd.cpuBalance` or `fgd.modelPressure`, a fraction of a point (never enough to
    /// pass a better score) that orders the nodes the score ties. `cpuBalance`: the node
    /// where the pod strands least free GPU share behind exhausted CPU, so pods heavy in CPU
    /// go to nodes with CPU to spare and GPUs stay usable. `modelPressure`: the node whose
    /// GPU model the model-bound kinds need least, so pods that may run anywhere leave the
    /// scarce models to those that may not.
    fn tie_break(&self, st: &NodeState, gpu: u32, cpu: i64) -> f64 {
        let total = self.balance + self.pressure_weight;
        if total == 0.0 {
            return 0.0;
        }
        let r = f64::from(st.free.iter().sum::<u32>());
        let c = st.cpu_left as f64;
        let grown = self.stranded(r - f64::from(gpu), c - cpu as f64) - self.stranded(r, c);
        // Growth of one whole GPU or more takes the whole range.
        let balance = 0.5 * (1.0 - (grown / f64::from(DEVICE_MILLI)).clamp(-1.0, 1.0));
        // A CPU-only pod takes no GPU, so it leaves every model to the pods bound to it.
        let free = if gpu == 0 {
            0.5
        } else {
            1.0 - self.pressure.get(st.model).copied().unwrap_or(0.0)
        };
        0.9 * (self.balance * balance + self.pressure_weight * free) / total
    }

    /// The best score of `req` on the node and the devices that reach it (first in index
    /// order among equals), or `None` when it does not fit.
    fn best(&self, st: &NodeState, req: Option<&GpuRequest>, cpu: i64) -> Option<(f64, Vec<u8>)> {
        let before = self.fragmentation(st);
        let mut after = st.clone();
        after.cpu_left -= cpu;
        let Some(req) = req else {
            return Some((
                Self::to_score(before - self.fragmentation(&after)),
                Vec::new(),
            ));
        };
        if req.is_share() && req.count == 1 {
            let mut best: Option<(f64, Vec<u8>)> = None;
            let mut tried: Vec<u32> = Vec::new();
            for (i, &r) in st.free.iter().enumerate() {
                // Devices with the same free share give the same fragmentation.
                if r < req.cores || tried.contains(&r) {
                    continue;
                }
                tried.push(r);
                after.free[i] = r - req.cores;
                let score = Self::to_score(before - self.fragmentation(&after));
                after.free[i] = r;
                if best.as_ref().is_none_or(|(b, _)| score > *b) {
                    best = Some((score, vec![u8::try_from(i).unwrap_or(u8::MAX)]));
                }
            }
            return best;
        }
        let mut fit: Vec<usize> = (0..st.free.len())
            .filter(|&i| st.free[i] >= req.cores)
            .collect();
        if fit.len() < req.count as usize {
            return None;
        }
        fit.sort_by_key(|&i| st.free[i]);
        fit.truncate(req.count as usize);
        for &i in &fit {
            after.free[i] -= req.cores.min(after.free[i]);
        }
        let ids = fit
            .into_iter()
            .map(|i| u8::try_from(i).unwrap_or(u8::MAX))
            .collect();
        Some((Self::to_score(before - self.fragmentation(&after)), ids))
    }
}

/// Per model, the GPU demand of the model-bound kinds that may use it, each kind's demand
/// spread over the GPUs of the models it may use; scaled so the most needed model is 1.
fn model_pressure(kinds: &[TaskKind], gpus_per_model: &[f64]) -> Vec<f64> {
    let mut pressure = vec![0.0; gpus_per_model.len()];
    for k in kinds {
        let Some(bits) = k.models else {
            continue;
        };
        let allowed = |i: usize| bits & (1u64 << (i % 64)) != 0;
        let capacity: f64 = (0..gpus_per_model.len())
            .filter(|&i| allowed(i))
            .map(|i| gpus_per_model[i])
            .sum();
        if capacity <= 0.0 {
            continue;
        }
        let demand = k.weight * f64::from(k.share) * f64::from(k.count.max(1)) / capacity;
        for (i, p) in pressure.iter_mut().enumerate() {
            if allowed(i) {
                *p += demand;
            }
        }
    }
    let max = pressure.iter().copied().fold(0.0, f64::max);
    if max > 0.0 {
        for p in &mut pressure {
            *p /= max;
        }
    }
    pressure
}

/// GPU thousandths of fragmentation change that move the score's sigmoid by one unit (the
/// paper's constant).
const SIGMOID_SCALE: f64 = 1000.0;

/// The model a node's GPUs are, upper-cased (its first device's).
fn node_model(g: &NodeGpus) -> String {
    g.devices
        .first()
        .map(|d| d.model.to_ascii_uppercase())
        .unwrap_or_default()
}

impl Plugin for Fgd {
    fn name(&self) -> &'static str {
        "fgd"
    }

    fn scores_nodes(&self) -> bool {
        self.weight != 0.0
    }

    fn batch_node_order(&self, s: &Snapshot, t: TaskId, nodes: &[NodeId], scores: &mut [f64]) {
        if self.weight == 0.0 {
            return;
        }
        let task = s.task(t);
        let req = task.gpu.as_deref();
        let cpu = task.resreq.cpu();
        // Nodes in the same state score the same; large clusters have many of them.
        let mut seen: HashMap<NodeState, f64> = HashMap::new();
        for (i, &n) in nodes.iter().enumerate() {
            let Some(st) = self.state(s, n) else {
                continue;
            };
            let score = match seen.get(&st) {
                Some(v) => *v,
                None => {
                    let gpu = req.map_or(0, |g| g.cores.saturating_mul(g.count));
                    let v = self
                        .best(&st, req, cpu)
                        .map_or(0.0, |(v, _)| v + self.tie_break(&st, gpu, cpu));
                    seen.insert(st, v);
                    v
                }
            };
            if let Some(slot) = scores.get_mut(i) {
                *slot += score * self.weight;
            }
        }
    }

    fn gpu_devices(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Option<Vec<u8>> {
        let req = s.task(t).gpu.as_deref()?;
        let st = self.state(s, n)?;
        let (_, ids) = self.best(&st, Some(req), s.task(t).resreq.cpu())?;
        // The score's view of fit is shares only; the devices must also pass every other rule.
        let g = s.node(n).gpus.as_deref()?;
        ids.iter()
            .all(|&i| g.devices.get(usize::from(i)).is_some_and(|d| d.fits(req)))
            .then_some(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{CacheOptions, build_snapshot};

    /// An fgd with one whole-GPU kind of `cpu` milli-CPU, bound to model 0 when `bound`,
    /// over two models, and the given tie-break weights.
    fn fgd(cpu: i64, bound: bool, balance: f64, pressure_weight: f64) -> Fgd {
        let kinds = vec![TaskKind {
            cpu,
            share: 1000,
            count: 1,
            models: bound.then_some(1),
            weight: 1.0,
        }];
        Fgd {
            weight: 1.0,
            balance,
            cpu_per_gpu: cpu as f64 / 1000.0,
            pressure_weight,
            pressure: model_pressure(&kinds, &[8.0, 8.0]),
            gpu_kinds: kinds,
            cpu_only_weight: 0.0,
            models: vec!["A".into(), "B".into()],
        }
    }

    fn node(model: usize, cpu_left: i64, free: &[u32]) -> NodeState {
        NodeState {
            cpu_left,
            model,
            free: free.to_vec(),
        }
    }

    #[test]
    fn arguments_are_read_and_off_by_default() {
        let Ok(snap) = build_snapshot(&volcano_api::Objects::default(), &CacheOptions::default())
        else {
            panic!("an empty cluster must make a snapshot");
        };
        let off = Fgd::new(&Arguments::default(), &snap);
        assert_eq!((off.balance, off.pressure_weight), (0.0, 0.0));
        let mut args = Arguments::default();
        args.0.insert("fgd.cpuBalance".into(), 2.into());
        args.0.insert("fgd.modelPressure".into(), 3.into());
        let on = Fgd::new(&args, &snap);
        assert_eq!((on.balance, on.pressure_weight), (2.0, 3.0));
    }

    #[test]
    fn cpu_balance_sends_cpu_heavy_pods_where_cpu_is_spare() {
        // 10 cores per GPU in the workload; a node with 2 free GPUs and 20 cores has none to
        // spare, one with 60 cores has plenty.
        let f = fgd(10_000, false, 1.0, 0.0);
        let short = node(0, 20_000, &[1000, 1000]);
        let rich = node(0, 60_000, &[1000, 1000]);
        // A CPU-only pod of 10 cores strands a GPU on the short node, none on the rich one.
        assert!(f.tie_break(&rich, 0, 10_000) > f.tie_break(&short, 0, 10_000));
        // A GPU pod light on CPU (2 cores for a GPU) frees the short node's CPU for its other
        // GPU, so it goes there.
        let short = node(0, 5_000, &[1000, 1000]);
        assert!(f.tie_break(&short, 1000, 2_000) > f.tie_break(&rich, 1000, 2_000));
        // Below one point: it never passes a better score.
        assert!(f.tie_break(&rich, 0, 10_000) < 1.0);
        // Off: no node is preferred.
        let off = fgd(10_000, false, 0.0, 0.0);
        assert_eq!(off.tie_break(&rich, 0, 10_000), 0.0);
        assert_eq!(off.tie_break(&short, 0, 10_000), 0.0);
    }

    #[test]
    fn model_pressure_keeps_bound_models_for_bound_pods() {
        let f = fgd(1_000, true, 0.0, 1.0);
        assert_eq!(f.pressure, vec![1.0, 0.0]);
        let needed = node(0, 50_000, &[1000, 1000]);
        let spare = node(1, 50_000, &[1000, 1000]);
        // A GPU pod that may run anywhere goes to the model nobody is bound to...
        assert!(f.tie_break(&spare, 1000, 1_000) > f.tie_break(&needed, 1000, 1_000));
        // ...and a CPU-only pod takes no GPU, so the model does not matter to it.
        assert_eq!(
            f.tie_break(&spare, 0, 1_000),
            f.tie_break(&needed, 0, 1_000)
        );
        // Unbound kinds put no pressure on any model.
        assert_eq!(fgd(1_000, false, 0.0, 1.0).pressure, vec![0.0, 0.0]);
    }
}
