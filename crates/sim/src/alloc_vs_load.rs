//! The arrival-only experiment of the FGD paper (USENIX ATC'23, §5 there): pods of a trace
//! arrive one at a time and never leave, each scheduled before the next, those that fit
//! nowhere dropped; the GPU share allocated is recorded against the GPU load arrived.
//!
//! One run per seed: the trace is shuffled, topped up by resampling (or trimmed) to 130% of the
//! cluster's GPUs, and each node gets a random rank that breaks score ties. The whole arrival
//! sequence is then one scheduling session of the real scheduler: one single-pod job per pod,
//! in arrival order, so each is placed (or not) on the cluster the pods before it left.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use volcano_api::Objects;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use volcano_api::k8s_openapi::jiff::Timestamp;
use volcano_api::scheduling::{PodGroup, PodGroupSpec, PodGroupStatus, phase};
use volcano_scheduler::cache::{BuildError, CacheOptions, build_snapshot};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::framework::SessionOptions;

use crate::openb::{TraceNode, TracePod, node_object, pod_object};

/// Load levels of the curve, in percent of the cluster's GPUs.
pub const MAX_LOAD: usize = 130;
/// The load the pods are topped up or trimmed to, as a multiple of the cluster's GPUs.
pub const TUNE_RATIO: f64 = 1.3;
/// Namespace of the experiment's pods.
const NAMESPACE: &str = "trace";

/// The experiment's input: the cluster, the trace and the scheduler configuration.
pub struct Experiment<'a> {
    /// The nodes.
    pub nodes: &'a [TraceNode],
    /// The pods, in any order.
    pub pods: &'a [TracePod],
    /// The scheduler configuration (its plugins are the policy).
    pub conf: &'a SchedulerConf,
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The cluster has no GPU.
    #[error("the node list has no GPU, so there is no GPU load to measure")]
    NoGpus,
    /// The trace has no pod.
    #[error("the pod list is empty")]
    NoPods,
    /// The scheduler could not read an object built from the trace.
    #[error(transparent)]
    Snapshot(#[from] BuildError),
    /// The run of one seed stopped with a panic (a defect, reported rather than spread).
    #[error("the run of seed {0} crashed")]
    Crashed(u64),
}

/// One seed's allocation curve: the allocated GPU share (percent) at each load 0..=130, `None`
/// where no arrival fell near that load.
pub type Curve = Vec<Option<f64>>;

/// Python's `round(x, digits)` as the paper's analysis uses it: ties to even.
fn round_to(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round_ties_even() / f
}

/// The arrival sequence of one seed: the shuffled trace, then the resampled top-up (or the
/// trimmed trace), as in the published simulator.
pub fn arrivals(pods: &[TracePod], capacity_milli: u64, rng: &mut StdRng) -> Vec<TracePod> {
    let mut original: Vec<&TracePod> = pods.iter().collect();
    original.sort_by(|a, b| a.name.cmp(&b.name));
    let mut order: Vec<TracePod> = original.iter().map(|p| (*p).clone()).collect();
    order.shuffle(rng);
    let target = (capacity_milli as f64 * TUNE_RATIO) as u64;
    let mut total: u64 = order.iter().map(TracePod::gpu_total_milli).sum();
    if total < target {
        let mut i = 0usize;
        loop {
            let j = rand::RngExt::random_range(rng, 0..original.len());
            let pick = original[j];
            // The published simulator compares with the per-GPU share here, not the total.
            if total + u64::from(pick.gpu_milli) > target {
                break;
            }
            let mut copy = pick.clone();
            copy.name = format!("{}-tuned-{i}", pick.name);
            total += pick.gpu_total_milli();
            order.push(copy);
            i += 1;
        }
    } else {
        while total > target && !order.is_empty() {
            let j = rand::RngExt::random_range(rng, 0..order.len());
            total -= order.remove(j).gpu_total_milli();
        }
    }
    order
}

/// The experiment's cluster as objects: `nodes` named `names`, and one single-pod job per pod
/// of `order`, created one second apart so the scheduler takes them in that order.
pub fn trace_objects(nodes: &[&TraceNode], names: &[String], order: &[TracePod]) -> Objects {
    let mut objects = Objects::default();
    for (n, name) in nodes.iter().zip(names) {
        objects.nodes.push(node_object(n, name));
    }
    for (i, p) in order.iter().enumerate() {
        let group = format!("arrival-{i:06}");
        let mut pod = pod_object(p, NAMESPACE, &format!("{group}-{}", p.name));
        pod.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(volcano_api::keys::GROUP_NAME.to_string(), group.clone());
        objects.pods.push(pod.into());
        objects.pod_groups.push(PodGroup {
            metadata: ObjectMeta {
                name: Some(group),
                namespace: Some(NAMESPACE.to_string()),
                creation_timestamp: Some(Time(
                    Timestamp::from_second(i as i64).unwrap_or(Timestamp::UNIX_EPOCH),
                )),
                ..Default::default()
            },
            spec: PodGroupSpec {
                min_member: 1,
                ..Default::default()
            },
            status: Some(PodGroupStatus {
                phase: phase::INQUEUE.to_string(),
                ..Default::default()
            }),
        });
    }
    objects
}

/// Runs one seed and returns its curve.
pub fn run_seed(x: &Experiment<'_>, seed: u64) -> Result<Curve, ExperimentError> {
    let capacity: u64 = x.nodes.iter().map(|n| u64::from(n.gpus) * 1000).sum();
    if capacity == 0 {
        return Err(ExperimentError::NoGpus);
    }
    if x.pods.is_empty() {
        return Err(ExperimentError::NoPods);
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let order = arrivals(x.pods, capacity, &mut rng);

    // A random rank per node, carried in its name: the scheduler breaks score ties by name.
    let mut nodes: Vec<&TraceNode> = x.nodes.iter().collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    let mut rank: Vec<usize> = (0..nodes.len()).collect();
    rank.shuffle(&mut rng);
    let names: Vec<String> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{:04}-{}", rank[i], n.name))
        .collect();
    let objects = trace_objects(&nodes, &names, &order);
    let snap = build_snapshot(&objects, &CacheOptions::default())?;
    let decisions = volcano_scheduler::run_session(
        snap,
        x.conf,
        SessionOptions {
            uid: format!("alloc-vs-load-{seed}"),
            percentage_nodes_to_find: Some(100),
            ..Default::default()
        },
    );
    let bound: std::collections::HashSet<&str> = decisions
        .binds
        .iter()
        .filter(|(pod, _)| pod.namespace == NAMESPACE)
        .map(|(pod, _)| pod.name.as_str())
        .collect();

    // One record per arrival: (load arrived %, allocated %).
    let mut records = Vec::with_capacity(order.len());
    let (mut arrived, mut used) = (0u64, 0u64);
    for (i, p) in order.iter().enumerate() {
        arrived += p.gpu_total_milli();
        if bound.contains(format!("arrival-{i:06}-{}", p.name).as_str()) {
            used += p.gpu_total_milli();
        }
        let load = (arrived as f64 / capacity as f64 * 100.0).round_ties_even();
        let alloc = round_to(used as f64 / capacity as f64 * 100.0, 2);
        records.push((load as i64, alloc));
    }
    Ok(bin(&records))
}

/// The curve from per-arrival records, binned as the paper's analysis does: the mean of the
/// records at each integer load, or of those within one point of it when none is exactly there.
pub fn bin(records: &[(i64, f64)]) -> Curve {
    let mut at: BTreeMap<i64, (f64, u32)> = BTreeMap::new();
    for &(load, alloc) in records {
        let e = at.entry(load).or_default();
        e.0 += alloc;
        e.1 += 1;
    }
    (0..=MAX_LOAD as i64)
        .map(|l| {
            let mean = |lo: i64, hi: i64| {
                let (sum, n) = at
                    .range(lo..=hi)
                    .fold((0.0, 0u32), |(s, c), (_, (v, k))| (s + v, c + k));
                (n > 0).then(|| round_to(sum / f64::from(n), 2))
            };
            mean(l, l).or_else(|| mean(l - 1, l + 1))
        })
        .collect()
}

/// The result over several seeds.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AllocVsLoad {
    /// Load levels, 0..=130 (% of the cluster's GPUs arrived).
    pub loads: Vec<u32>,
    /// Allocation % at each load, averaged over the seeds that have a value there.
    pub mean: Vec<Option<f64>>,
    /// Seed → allocation % at each load.
    pub per_seed: BTreeMap<u64, Curve>,
}

/// Runs every seed, on up to `threads` threads, and averages.
pub fn run(
    x: &Experiment<'_>,
    seeds: &[u64],
    threads: usize,
) -> Result<AllocVsLoad, ExperimentError> {
    let mut per_seed = BTreeMap::new();
    for chunk in seeds.chunks(threads.max(1)) {
        let results: Vec<(u64, Result<Curve, ExperimentError>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|&seed| (seed, scope.spawn(move || run_seed(x, seed))))
                .collect();
            handles
                .into_iter()
                .map(|(seed, h)| {
                    (
                        seed,
                        h.join().unwrap_or(Err(ExperimentError::Crashed(seed))),
                    )
                })
                .collect()
        });
        for (seed, r) in results {
            per_seed.insert(seed, r?);
        }
    }
    let mean = (0..=MAX_LOAD)
        .map(|l| {
            let vals: Vec<f64> = per_seed.values().filter_map(|c| c[l]).collect();
            (!vals.is_empty()).then(|| round_to(vals.iter().sum::<f64>() / vals.len() as f64, 2))
        })
        .collect();
    Ok(AllocVsLoad {
        loads: (0..=MAX_LOAD as u32).collect(),
        mean,
        per_seed,
    })
}
