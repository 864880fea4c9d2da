//! `volcano bench`: a synthetic cluster and workload in memory, real sessions of the configured
//! actions and plugins over it, their decisions applied to the store, and the figures.
//!
//! Each session takes a snapshot from the scheduler cache, runs, and has its decisions applied
//! to the objects and fed back to the cache, as the runtime does against a cluster. Sessions
//! run until no pod is pending or a session binds nothing (or `max_sessions`).
//!
//! What is timed is the scheduler's part of a session: the snapshot, the actions and the close.
//! Reading every object into the cache once at start (the runtime's first list) is timed apart
//! as `cache_build_ms`, and applying the decisions to the store (the API server's part) as
//! `apply_ms`.

pub mod constraint;
pub mod rss;
pub mod store;
pub mod workload;

use std::time::{Duration, Instant};

use serde::Serialize;
use volcano_scheduler::cache::{BuildError, CacheOptions, SchedulerCache};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::framework::SessionOptions;
use volcano_scheduler::run_session;

use crate::generate::{TopologyMode, TopologyTier};

/// The workload of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchSpec {
    /// Nodes.
    pub nodes: usize,
    /// Pending jobs (PodGroups).
    pub jobs: usize,
    /// Pods per pending job, all needed (`minMember`).
    pub gang: usize,
    /// Pods already bound and running, in PodGroups of [`workload::RUNNING_GROUP`].
    pub running: usize,
    /// Queues the jobs are spread over, round-robin.
    pub queues: usize,
    /// Share (0 to 1) of the nodes with GPUs and of the jobs that ask for one per pod.
    pub gpu: f64,
    /// Seed of the job sizes.
    pub seed: u64,
    /// Most sessions to run.
    pub max_sessions: u32,
    /// The placement rule every pending pod carries, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constraint: Option<constraint::Constraint>,
    /// Tiers of HyperNodes over the nodes, lowest first (none when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topology: Vec<TopologyTier>,
    /// The network topology every pending PodGroup carries, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_topology: Option<BenchNetworkTopology>,
}

/// `networkTopology` of the pending PodGroups: a mode and the highest tier allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BenchNetworkTopology {
    /// `hard` or `soft`.
    pub mode: TopologyMode,
    /// `highestTierAllowed`.
    pub highest_tier_allowed: u32,
}

impl Default for BenchSpec {
    fn default() -> Self {
        BenchSpec {
            nodes: 1_000,
            jobs: 1_000,
            gang: 1,
            running: 0,
            queues: 4,
            gpu: 0.0,
            seed: 1,
            max_sessions: 100,
            constraint: None,
            topology: Vec::new(),
            network_topology: None,
        }
    }
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// The workload.
    #[serde(flatten)]
    pub spec: BenchSpec,
    /// Pods bound by the run, over the scheduler's time (snapshot, actions, close).
    pub pods_per_second: f64,
    /// Sessions run.
    pub sessions: u32,
    /// Median scheduler time of a session, in milliseconds.
    pub session_ms_p50: f64,
    /// 99th percentile of the same.
    pub session_ms_p99: f64,
    /// The longest session.
    pub session_ms_max: f64,
    /// Median time to take a snapshot, in milliseconds (part of the session time).
    pub snapshot_ms_p50: f64,
    /// Σ scheduler time of all sessions, in seconds.
    pub scheduling_seconds: f64,
    /// Scheduler time until the last pending pod was bound (`null` when some never were).
    pub seconds_to_place_all: Option<f64>,
    /// Scheduler time per pending job that was bound whole, in milliseconds.
    pub ms_per_job: Option<f64>,
    /// Pods bound.
    pub pods_bound: usize,
    /// Pending pods left unbound at the end.
    pub pods_left_pending: usize,
    /// Pending jobs whose every pod was bound.
    pub jobs_placed: usize,
    /// Σ time to apply decisions to the store, in milliseconds (not in the figures above).
    pub apply_ms: f64,
    /// Time to generate the workload, in milliseconds.
    pub generate_ms: f64,
    /// Time the cache took to read every object once, at start (not in the session time).
    pub cache_build_ms: f64,
    /// Sessions whose snapshot had to be built from all objects again (a change the cache
    /// could not take in place).
    pub snapshots_rebuilt: u64,
    /// Peak resident memory of the process, in bytes (0 where the OS does not tell).
    pub peak_rss_bytes: u64,
    /// With HyperNodes: how many of them, and where the pending gangs landed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hyper_nodes: Option<BenchTopologyFigures>,
}

/// What a run with HyperNodes built and where its gangs landed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BenchTopologyFigures {
    /// HyperNodes per tier, tier 1 first.
    pub hyper_nodes_per_tier: Vec<usize>,
    /// Pending jobs placed whole with every pod inside one tier-1 HyperNode.
    pub jobs_in_one_tier1_domain: usize,
}

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The scheduler cache refused an object of the workload.
    #[error("the workload has an object the scheduler cannot read: {0}")]
    Snapshot(#[from] BuildError),
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The `q` quantile (0 to 1) of `sorted`, nearest rank.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs the benchmark of `spec` with `conf`.
pub fn run(spec: &BenchSpec, conf: &SchedulerConf) -> Result<BenchReport, BenchError> {
    let t = Instant::now();
    let mut store = store::BenchStore::new(workload::build(spec));
    let generate = t.elapsed();
    let pending_total = spec.jobs * spec.gang.max(1);
    let mut cache = SchedulerCache::new(CacheOptions::default());
    // The scheduler lists the cluster once, at start; sessions then take their snapshots from
    // what the cache kept.
    let t = Instant::now();
    cache.snapshot(&store.objects)?;
    let cache_build = t.elapsed();

    let mut sessions = Vec::new();
    let mut snapshots = Vec::new();
    let mut apply = Duration::ZERO;
    let mut bound = 0;
    let mut to_place_all = None;
    let mut elapsed = Duration::ZERO;
    for i in 1..=spec.max_sessions.max(1) {
        let t0 = Instant::now();
        let snap = cache.snapshot(&store.objects)?;
        let t1 = Instant::now();
        let d = run_session(
            snap,
            conf,
            SessionOptions {
                uid: format!("bench-{i}"),
                ..SessionOptions::default()
            },
        );
        let took = t0.elapsed();
        snapshots.push(ms(t1 - t0));
        sessions.push(ms(took));
        elapsed += took;
        let t2 = Instant::now();
        store.apply(&d, &mut cache);
        apply += t2.elapsed();
        bound += d.binds.len();
        if bound >= pending_total && to_place_all.is_none() {
            to_place_all = Some(elapsed.as_secs_f64());
        }
        if bound >= pending_total || d.binds.is_empty() {
            break;
        }
    }
    let jobs_placed = jobs_placed(&store.objects);
    let hyper_nodes = (!spec.topology.is_empty()).then(|| topology_figures(&store.objects));
    sessions.sort_by(f64::total_cmp);
    snapshots.sort_by(f64::total_cmp);
    let secs = elapsed.as_secs_f64();
    Ok(BenchReport {
        spec: spec.clone(),
        pods_per_second: if secs > 0.0 { bound as f64 / secs } else { 0.0 },
        sessions: sessions.len() as u32,
        session_ms_p50: quantile(&sessions, 0.5),
        session_ms_p99: quantile(&sessions, 0.99),
        session_ms_max: sessions.last().copied().unwrap_or(0.0),
        snapshot_ms_p50: quantile(&snapshots, 0.5),
        scheduling_seconds: secs,
        seconds_to_place_all: to_place_all,
        ms_per_job: (jobs_placed > 0).then(|| secs * 1e3 / jobs_placed as f64),
        pods_bound: bound,
        pods_left_pending: pending_total.saturating_sub(bound),
        jobs_placed,
        apply_ms: ms(apply),
        generate_ms: ms(generate),
        cache_build_ms: ms(cache_build),
        snapshots_rebuilt: cache.stats().rebuilt.saturating_sub(1),
        peak_rss_bytes: rss::peak_rss_bytes().unwrap_or(0),
        hyper_nodes,
    })
}

/// HyperNodes per tier, and the pending jobs of `objects` whose pods all sit in one tier-1
/// domain.
fn topology_figures(objects: &volcano_api::Objects) -> BenchTopologyFigures {
    let mut per_tier: Vec<usize> = Vec::new();
    for h in &objects.hyper_nodes {
        let tier = usize::try_from(h.spec.tier).unwrap_or(0).max(1);
        if per_tier.len() < tier {
            per_tier.resize(tier, 0);
        }
        per_tier[tier - 1] += 1;
    }
    let gangs = crate::topology::placed_gangs(objects, |group| group.starts_with("job-"));
    let jobs_in_one_tier1_domain = crate::topology::Domains::of(objects).map_or(0, |d| {
        gangs.iter().filter(|g| d.in_one_leaf(&g.nodes)).count()
    });
    BenchTopologyFigures {
        hyper_nodes_per_tier: per_tier,
        jobs_in_one_tier1_domain,
    }
}

/// Pending jobs of the workload whose every pod is bound.
fn jobs_placed(objects: &volcano_api::Objects) -> usize {
    use std::collections::HashSet;
    let mut unbound: HashSet<&str> = HashSet::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for p in &objects.pods {
        let Some(group) = p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(volcano_api::keys::GROUP_NAME))
        else {
            continue;
        };
        if !group.starts_with("job-") {
            continue;
        }
        seen.insert(group);
        let on_node = p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .is_some_and(|n| !n.is_empty());
        if !on_node {
            unbound.insert(group);
        }
    }
    seen.difference(&unbound).count()
}

#[cfg(test)]
mod tests;
