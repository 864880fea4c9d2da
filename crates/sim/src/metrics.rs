//! What a simulation run measured: the figures `volcano sim` prints, writes as JSON and draws
//! in its report. Plain data; the run fills it, the outputs read it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

/// Everything one simulation run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SimMetrics {
    /// The headline figures.
    pub summary: Summary,
    /// Resource names tracked in `timeline[].utilisation` (cpu, memory, nvidia.com/gpu, ...).
    pub resources: Vec<String>,
    /// Queue names tracked in `timeline[].queues`.
    pub queues: Vec<String>,
    /// One record per job (Volcano Job, or PodGroup of bare pods), in submission order.
    pub jobs: Vec<JobRecord>,
    /// Samples of the cluster over virtual time, one per sampling interval.
    pub timeline: Vec<Sample>,
    /// Every eviction, in order.
    pub evictions: Vec<EvictionRecord>,
    /// Wall-clock latency of each scheduling session, in milliseconds, in order.
    pub session_ms: Vec<f64>,
    /// The faults injected and the invariants they broke, when the run injected any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub faults: Option<FaultReport>,
    /// With HyperNodes: where gangs landed, waits for a domain, and each domain's occupancy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyReport>,
    /// The seed of the run (`--seed`: the workload generator's), so it can be repeated.
    pub seed: u64,
    /// The scheduler configuration the run used, as text (Volcano's default when none was
    /// given).
    pub scheduler_conf: String,
}

/// What a run with faults went through.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultReport {
    /// The seed the faults were drawn from.
    pub seed: u64,
    /// How many of each fault struck.
    pub injected: crate::faults::FaultCounts,
    /// Every invariant broken, in words (empty: all held).
    pub violations: Vec<String>,
}

/// The headline figures of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Virtual time simulated, in seconds.
    pub simulated_s: f64,
    /// From the first submission to the last job's end, in seconds (0 when none ended).
    pub makespan_s: f64,
    /// Scheduling sessions run.
    pub sessions: u64,
    /// Jobs submitted.
    pub jobs: u64,
    /// Jobs that completed.
    pub completed: u64,
    /// Jobs that failed or were aborted.
    pub failed: u64,
    /// Jobs not finished when the run ended.
    pub unfinished: u64,
    /// Pods bound.
    pub pods_bound: u64,
    /// Pods evicted.
    pub evictions: u64,
    /// Wait from submission to the start of running, in seconds, over jobs that started.
    pub wait_s: Stats,
    /// Time from submission to the end, in seconds, over jobs that ended.
    pub completion_s: Stats,
    /// Session latency, in milliseconds.
    pub session_ms: Stats,
    /// Mean utilisation of each resource over the run, as a fraction of allocatable.
    pub mean_utilisation: BTreeMap<String, f64>,
}

/// A distribution in a few numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    /// How many values.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// One job's life.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobRecord {
    /// `namespace/name`.
    pub name: String,
    /// Its queue.
    pub queue: String,
    /// Pods it asked for.
    pub pods: u32,
    /// Virtual time of submission, in seconds.
    pub submitted_s: f64,
    /// When its first pod started running.
    pub started_s: Option<f64>,
    /// When it reached a final phase.
    pub finished_s: Option<f64>,
    /// Its phase at the end of the run.
    pub phase: String,
    /// `started_s - submitted_s`.
    pub wait_s: Option<f64>,
    /// `finished_s - submitted_s`.
    pub completion_s: Option<f64>,
    /// Why it waited: each why-pending message its PodGroup carried while pending or
    /// inqueue, with the virtual time spent under it, in the order first seen.
    pub waited: Vec<WaitedRecord>,
    /// Why it failed, when it failed (or was aborted or terminated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureRecord>,
    /// Its gang's `minMember` (for the network-topology figures, not written out).
    #[serde(skip)]
    pub min_member: u32,
    /// The nodes its pods ran on (for the network-topology figures, not written out).
    #[serde(skip)]
    pub nodes: Vec<String>,
    /// The network topology it asked for, and how long it waited for a network domain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_topology: Option<NetworkTopologyRecord>,
}

/// A job's network topology and its wait for a domain.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkTopologyRecord {
    /// `hard` or `soft`.
    pub mode: String,
    /// `highestTierAllowed` (or the tier `highestTierName` names), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub highest_tier_allowed: Option<i64>,
    /// Virtual seconds its PodGroup waited under the job-level reason `NetworkTopology`.
    pub network_topology_wait_s: f64,
}

/// Time a job spent waiting under one why-pending message.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitedRecord {
    /// The message as the scheduler wrote it on the PodGroup (`0/4 nodes are available: ...`);
    /// messages that differ only in their figures count as one, shown as last written.
    pub reason: String,
    /// Virtual seconds spent under it, summed over every interval.
    pub seconds: f64,
}

/// Why a job failed, as the kubelet and the job controller recorded it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureRecord {
    /// `PodFailed`, `NodeLost`, `PodEvicted`, or the Job's own status reason (`InvalidJob`).
    pub reason: String,
    /// In words: the pod, its exit code or lost node, and the Job's phases to the end.
    pub message: String,
    /// The failed pod's exit code, when its container ended with one.
    pub exit_code: Option<i32>,
    /// The pod whose failure is told (`namespace/name`), when one failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// The Job's phases from its first run to its end (`Running`, `Aborting`, `Aborted`):
    /// the policy action shows as the phase it led to.
    pub phases: Vec<String>,
    /// Whole-job restarts (`status.retryCount`).
    pub retries: i32,
    /// The Job's `maxRetry` (Volcano's default 3 when unset); 0 for bare pods.
    pub max_retry: i32,
}

/// The cluster at one instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    /// Virtual time, in seconds.
    pub t_s: f64,
    /// Jobs submitted and not yet running any pod.
    pub pending_jobs: u32,
    /// Jobs with a running pod.
    pub running_jobs: u32,
    /// Pods running.
    pub running_pods: u32,
    /// Requested by bound pods over allocatable of ready nodes, per resource (0..1).
    pub utilisation: BTreeMap<String, f64>,
    /// Per queue: its allocated and deserved share of the cluster.
    pub queues: BTreeMap<String, QueueShare>,
}

/// A queue's share at one instant, each as the largest fraction over resources (the
/// dominant share), so queues of CPU and GPU work compare on one axis.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueShare {
    /// What its running pods hold.
    pub allocated: f64,
    /// What proportion (or capacity) says it deserves.
    pub deserved: f64,
}

/// One eviction.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvictionRecord {
    /// Virtual time, in seconds.
    pub t_s: f64,
    /// `namespace/pod`.
    pub pod: String,
    /// Who took its place.
    pub reason: String,
}

/// The network-topology figures of a run with HyperNodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyReport {
    /// What `used`, `total` and `stranded` count: `nvidia.com/gpu`, or `cpu` without GPUs.
    pub resource: String,
    /// Gangs (minMember > 1) whose pods ran.
    pub gangs_ran: u64,
    /// Of those, the gangs whose pods all ran inside one tier-1 domain.
    pub gangs_in_one_tier1_domain: u64,
    /// Jobs with a network topology.
    pub topology_jobs: u64,
    /// Their wait from submission to the first pod running, in seconds (those that started).
    pub topology_wait_s: Stats,
    /// Σ time they waited under the job-level reason `NetworkTopology`, in seconds.
    pub network_topology_wait_s: f64,
    /// Gangs still waiting at the end of the run.
    pub gangs_waiting: u64,
    /// The smallest of their demands for `resource`, in whole units (none when no gang
    /// waits for any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smallest_waiting_gang: Option<f64>,
    /// Free `resource` at the end of the run in tier-1 domains too small for any gang
    /// still waiting, in whole units.
    pub stranded: f64,
    /// Every domain at the end of the run, tier by tier, lowest first.
    pub domains: Vec<DomainOccupancy>,
}

/// One domain at the end of the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainOccupancy {
    /// The HyperNode's name.
    pub name: String,
    /// Its tier.
    pub tier: i64,
    /// Its tier's name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tier_name: String,
    /// The domain it is a member of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Nodes it holds.
    pub nodes: u64,
    /// `resource` in use by pods on its nodes, in whole units.
    pub used: f64,
    /// Allocatable `resource` of its nodes, in whole units.
    pub total: f64,
    /// A tier-1 domain whose free `resource` no waiting gang can use.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stranded: bool,
}

impl TopologyReport {
    /// The domains under `parent` (`None`: the roots), in order.
    pub fn children_of<'a>(
        &'a self,
        parent: Option<&'a str>,
    ) -> impl Iterator<Item = &'a DomainOccupancy> + 'a {
        self.domains
            .iter()
            .filter(move |d| d.parent.as_deref() == parent)
    }

    /// How many domains each tier has, lowest first, with the tier's name.
    pub fn tiers(&self) -> Vec<(i64, String, usize)> {
        let mut out: BTreeMap<i64, (String, usize)> = BTreeMap::new();
        for d in &self.domains {
            let e = out
                .entry(d.tier)
                .or_insert_with(|| (d.tier_name.clone(), 0));
            e.1 += 1;
        }
        out.into_iter().map(|(t, (n, c))| (t, n, c)).collect()
    }

    /// Names of the stranded domains.
    pub fn stranded_domains(&self) -> BTreeSet<&str> {
        self.domains
            .iter()
            .filter(|d| d.stranded)
            .map(|d| d.name.as_str())
            .collect()
    }
}
