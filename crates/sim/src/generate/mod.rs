//! A synthetic workload: a cluster, queues and Volcano Jobs drawn from a few distributions,
//! so that "what if" needs no YAML. Same spec and seed, same objects; the objects are those a
//! user could have written (they load and pass admission like any scenario).

use volcano_api::Objects;

mod objects;
mod sample;
mod spec;
mod topology;
mod yaml;

#[cfg(test)]
mod tests;

pub(crate) use objects::job_seed;
pub use spec::{
    Arrival, DurationDist, IntRange, QueueWeight, SpecError, TopologyMode, TopologyTier,
    parse_topology, parse_topology_mode,
};
pub use topology::hyper_nodes_over;
pub use yaml::{YamlError, to_yaml};

/// What `--generate` prints for `help`: every key, its default and what it means.
pub const HELP: &str = "\
Generate a workload: a comma-separated key=value list; every key is optional.

  nodes=10               nodes in all (GPU nodes included)
  gpu-nodes=0            how many of them carry GPUs
  gpus-per-node=8        GPUs on each GPU node
  gpu-model=A100         nvidia.com/gpu.product label and vGPU device type
  gpu-memory=<model>     MiB per GPU (or a quantity such as 80Gi); default by model, else 81920
  gpu-taint=true         taint GPU nodes nvidia.com/gpu=present:NoSchedule (GPU pods tolerate
                         it); only when some nodes have no GPU
  node-cpu=64            cores per node
  node-memory=256Gi      memory per node
  queues=team-a:1;team-b:1
                         queues as name:weight, separated by ';'; jobs are spread over them in
                         proportion to weight, each in a namespace named after its queue
  jobs=100               Volcano Jobs to submit
  over=1h                submissions spread over this long (0s: all at once)
  arrival=poisson        poisson (exponential gaps at rate jobs/over), uniform (evenly spaced)
                         or diurnal (random, peaking at 14:00 of each simulated day)
  job-size=1-4           pods per gang: A-B (uniform) or N (fixed)
  pod-cpu=1-8            cores per pod of CPU jobs: A-B or N
  memory-per-cpu=4Gi     memory per core of CPU jobs
  gpu-jobs=0.5           fraction of jobs that use GPUs (ignored without GPU nodes)
  gpu-share=0.2          fraction of GPU jobs that are single-pod GPU shares (volcano.sh/vgpu-*)
  duration=lognormal:10m:1.0
                         how long pods run: exponential:MEAN, lognormal:MEDIAN:SIGMA,
                         uniform:A-B or fixed:D (clamped to 1s..30d)
  fail-rate=0            fraction of jobs whose pods fail (sim.volcano-rs.io/fail-after)
  topology=              HyperNodes (network domains) over the nodes, lowest tier first, as
                         name:N separated by ';' (or ','): tier 1 groups N nodes in order
                         (GPU nodes first), each higher tier N domains of the tier below; the
                         words are the tiers' tierName and the HyperNodes' name prefixes.
                         topology=leaf:8;spine:4 makes leaf-0.. of 8 nodes, spine-0.. of 4 leaves
  topology-mode=         hard or soft: every gang (more than one pod) carries a
                         networkTopology of this mode; none without it
  topology-tier=1        the gangs' highestTierAllowed

Example: nodes=40,gpu-nodes=16,queues=research:3;prod:1,jobs=300,over=24h,arrival=diurnal
Topology: nodes=64,gpu-nodes=64,topology=leaf:8;spine:4,topology-mode=hard,topology-tier=1
";

/// What to generate; parse one from `key=value,...` (see [`HELP`] for every key).
///
/// - `nodes` (10): nodes in all; `gpu-nodes` (0) of them carry `gpus-per-node` (8) GPUs of
///   `gpu-model` (A100) with `gpu-memory` MiB each (by model, else 81920), advertised as
///   `nvidia.com/gpu`, as `volcano.sh/vgpu-number` (10 per GPU) and in the
///   `volcano.sh/node-vgpu-register` annotation. With `gpu-taint` (true) and some CPU-only
///   nodes, GPU nodes are tainted `nvidia.com/gpu=present:NoSchedule` and GPU pods tolerate it.
/// - `node-cpu` (64) cores and `node-memory` (256Gi) on every node.
/// - `queues` (`team-a:1;team-b:1`): `name:weight` separated by `;`, reclaimable; each job goes
///   to a queue drawn in proportion to weight, in the namespace of the queue's name.
/// - `jobs` (100) submitted over `over` (1h) by `arrival`: `poisson` (exponential gaps at rate
///   jobs/over), `uniform` (evenly spaced) or `diurnal` (random, peaking at 14:00 each day).
/// - `job-size` (1-4): pods per gang, `A-B` or `N`. CPU pods ask `pod-cpu` (1-8) cores and
///   `memory-per-cpu` (4Gi) per core.
/// - `gpu-jobs` (0.5): fraction of jobs using GPUs when the cluster has any. Training gangs ask
///   a power of two of whole GPUs per pod (up to `gpus-per-node`) and three quarters of a
///   GPU's share of the node's cpu and memory per GPU. `gpu-share` (0.2) of GPU jobs are
///   single-pod notebooks asking `volcano.sh/vgpu-number: 1` with 10-90% of a device's cores
///   and memory instead.
/// - `duration` (`lognormal:10m:1.0`): `exponential:MEAN`, `lognormal:MEDIAN:SIGMA`,
///   `uniform:A-B`, `fixed:D`; clamped to 1s..30d.
/// - `fail-rate` (0): fraction of jobs whose pods fail (`sim.volcano-rs.io/fail-after`, after
///   10-100% of their drawn duration) instead of succeeding.
/// - `topology` (none): HyperNodes over the nodes, `name:N` per tier, lowest first (see
///   [`TopologyTier`]); `topology-mode` (none) `hard`/`soft` gives every gang a
///   `networkTopology` with `highestTierAllowed: topology-tier` (1).
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateSpec {
    /// Nodes in all.
    pub nodes: u32,
    /// How many of the nodes carry GPUs.
    pub gpu_nodes: u32,
    /// GPUs per GPU node.
    pub gpus_per_node: u32,
    /// GPU model name.
    pub gpu_model: String,
    /// Memory of one GPU, in MiB.
    pub gpu_memory_mib: u64,
    /// Whether GPU nodes are tainted against CPU work (when some nodes have no GPU).
    pub gpu_taint: bool,
    /// Cores per node.
    pub node_cpu: u32,
    /// Memory per node, in bytes.
    pub node_memory_bytes: u64,
    /// Queues and their weights.
    pub queues: Vec<QueueWeight>,
    /// Jobs to submit.
    pub jobs: u32,
    /// Span of the submissions, in seconds.
    pub over_s: f64,
    /// How submissions are spread.
    pub arrival: Arrival,
    /// Pods per gang.
    pub job_size: IntRange,
    /// Cores per pod of CPU jobs.
    pub pod_cpu: IntRange,
    /// Memory per core of CPU jobs, in bytes.
    pub memory_per_cpu_bytes: u64,
    /// Fraction of jobs that use GPUs.
    pub gpu_jobs: f64,
    /// Fraction of GPU jobs that share a GPU.
    pub gpu_share: f64,
    /// How long pods run.
    pub duration: DurationDist,
    /// Fraction of jobs that fail.
    pub fail_rate: f64,
    /// Tiers of HyperNodes, lowest first; none when empty.
    pub topology: Vec<TopologyTier>,
    /// The network topology mode of gangs; none when `None`.
    pub topology_mode: Option<TopologyMode>,
    /// The gangs' highest tier allowed.
    pub topology_tier: u32,
}

impl Default for GenerateSpec {
    fn default() -> Self {
        const GI: u64 = 1 << 30;
        GenerateSpec {
            nodes: 10,
            gpu_nodes: 0,
            gpus_per_node: 8,
            gpu_model: "A100".to_string(),
            gpu_memory_mib: 81_920,
            gpu_taint: true,
            node_cpu: 64,
            node_memory_bytes: 256 * GI,
            queues: vec![
                QueueWeight {
                    name: "team-a".to_string(),
                    weight: 1,
                },
                QueueWeight {
                    name: "team-b".to_string(),
                    weight: 1,
                },
            ],
            jobs: 100,
            over_s: 3600.0,
            arrival: Arrival::Poisson,
            job_size: IntRange { lo: 1, hi: 4 },
            pod_cpu: IntRange { lo: 1, hi: 8 },
            memory_per_cpu_bytes: 4 * GI,
            gpu_jobs: 0.5,
            gpu_share: 0.2,
            duration: DurationDist::LogNormal {
                median_s: 600.0,
                sigma: 1.0,
            },
            fail_rate: 0.0,
            topology: Vec::new(),
            topology_mode: None,
            topology_tier: 1,
        }
    }
}

/// The workload of `spec`: nodes, queues and Volcano Jobs, the same for the same seed.
pub fn generate(spec: &GenerateSpec, seed: u64) -> Objects {
    objects::build(spec, seed)
}
