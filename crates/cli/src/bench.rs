//! `volcano bench`: scheduling sessions over a synthetic cluster held in memory, timed.

use std::path::PathBuf;

use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::bench::constraint::Constraint;
use volcano_sim::bench::{self, BenchNetworkTopology, BenchReport, BenchSpec};
use volcano_sim::generate::{self, TopologyMode, TopologyTier};

use crate::{Failure, Format};

/// Flags of `volcano bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Nodes (32 CPUs, 128 GiB, 110 pods each; GPU nodes also 8 GPUs).
    #[arg(long, default_value_t = 1_000)]
    pub nodes: usize,
    /// Pending jobs (PodGroups).
    #[arg(long, default_value_t = 1_000)]
    pub jobs: usize,
    /// Pods per pending job, all of them needed (minMember).
    #[arg(long, default_value_t = 1)]
    pub gang: usize,
    /// Pods already bound and running, spread over the nodes.
    #[arg(long, default_value_t = 0)]
    pub running: usize,
    /// Queues the jobs are spread over.
    #[arg(long, default_value_t = 4)]
    pub queues: usize,
    /// Share (0 to 1) of the nodes with GPUs and of the jobs that ask for a GPU per pod.
    #[arg(long, default_value_t = 0.0)]
    pub gpu: f64,
    /// Seed of the job sizes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Most sessions to run (they stop earlier once nothing is pending or nothing was bound).
    #[arg(long, default_value_t = 100)]
    pub max_sessions: u32,
    /// A placement rule every pending pod carries: pod-anti-affinity (to its own job on the
    /// hostname), pod-affinity (to its own job on the zone), topology-spread (its job over
    /// zones, maxSkew 1) or host-port (8080). Nodes get 10 zones for the zone rules.
    #[arg(long, value_parser = parse_constraint)]
    pub constraint: Option<Constraint>,
    /// HyperNodes over the nodes, lowest tier first, as name:N (tier 1: N nodes per domain;
    /// higher tiers: N domains of the tier below), e.g. leaf:16,spine:8,zone:8.
    #[arg(long, value_parser = parse_topology)]
    pub topology: Option<Tiers>,
    /// networkTopology mode of every pending PodGroup: hard or soft (needs --topology).
    #[arg(long, value_parser = generate::parse_topology_mode, requires = "topology")]
    pub topology_mode: Option<TopologyMode>,
    /// highestTierAllowed of the pending PodGroups' networkTopology.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub topology_tier: u32,
    /// Scheduler configuration (volcano-scheduler.conf, or a ConfigMap holding one); the
    /// built-in default when absent.
    #[arg(long)]
    pub conf: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: Format,
}

/// The tiers of `--topology`, lowest first (one value, so clap does not take it for a list).
#[derive(Debug, Clone)]
pub struct Tiers(pub Vec<TopologyTier>);

/// Reads `--topology`'s tiers.
fn parse_topology(text: &str) -> Result<Tiers, String> {
    generate::parse_topology(text).map(Tiers)
}

/// Reads `--constraint`'s value, naming the rules there are when it is none of them.
fn parse_constraint(name: &str) -> Result<Constraint, String> {
    Constraint::from_name(name).ok_or_else(|| {
        let names: Vec<_> = Constraint::ALL.iter().map(|c| c.name()).collect();
        format!("no constraint '{name}'; one of: {}", names.join(", "))
    })
}

/// Runs `volcano bench`.
pub fn run(args: &BenchArgs) -> Result<(), Failure> {
    if !(0.0..=1.0).contains(&args.gpu) {
        return Err(Failure::Input(format!(
            "--gpu: {} is not a share between 0 and 1",
            args.gpu
        )));
    }
    let topology = args.topology.clone().map(|t| t.0).unwrap_or_default();
    if args.topology_mode.is_some() && args.topology_tier as usize > topology.len() {
        return Err(Failure::Input(format!(
            "--topology-tier: {} is above the {} tier(s) of --topology",
            args.topology_tier,
            topology.len()
        )));
    }
    let conf = match &args.conf {
        Some(path) => crate::schedule::read_conf_file(path)?,
        None => SchedulerConf::default_conf(),
    };
    let spec = BenchSpec {
        nodes: args.nodes,
        jobs: args.jobs,
        gang: args.gang,
        running: args.running,
        queues: args.queues,
        gpu: args.gpu,
        seed: args.seed,
        max_sessions: args.max_sessions,
        constraint: args.constraint,
        topology,
        network_topology: args.topology_mode.map(|mode| BenchNetworkTopology {
            mode,
            highest_tier_allowed: args.topology_tier,
        }),
    };
    let report = bench::run(&spec, &conf).map_err(|e| Failure::Internal(e.into()))?;
    crate::output::print_report(args.output, &report, text)
}

fn text(r: &BenchReport) -> String {
    let s = &r.spec;
    let mut out = format!(
        "workload: {} nodes, {} pending jobs of {} pods, {} running pods, {} queues, GPU share {}, seed {}\n",
        s.nodes, s.jobs, s.gang, s.running, s.queues, s.gpu, s.seed
    );
    if let Some(c) = s.constraint {
        out += &format!("constraint: {} on every pending pod\n", c.name());
    }
    if !s.topology.is_empty() {
        let tiers: Vec<String> = s
            .topology
            .iter()
            .zip(
                r.hyper_nodes
                    .iter()
                    .flat_map(|h| h.hyper_nodes_per_tier.iter()),
            )
            .map(|(t, n)| format!("{n} {} ({} members each)", t.name, t.fanout))
            .collect();
        out += &format!("HyperNodes: {}\n", tiers.join(", "));
        if let Some(t) = s.network_topology {
            out += &format!(
                "networkTopology: {} up to tier {} on every pending PodGroup\n",
                t.mode.as_str(),
                t.highest_tier_allowed
            );
        }
    }
    out += &format!(
        "bound {} pods ({} left pending), {} jobs whole, in {} sessions\n",
        r.pods_bound, r.pods_left_pending, r.jobs_placed, r.sessions
    );
    out += &format!("throughput: {:.0} pods/s\n", r.pods_per_second);
    out += &format!(
        "session: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (snapshot p50 {:.2} ms)\n",
        r.session_ms_p50, r.session_ms_p99, r.session_ms_max, r.snapshot_ms_p50
    );
    if let Some(per_job) = r.ms_per_job {
        out += &format!("per placed job: {per_job:.4} ms\n");
    }
    if let Some(h) = &r.hyper_nodes {
        out += &format!(
            "jobs inside one tier-1 HyperNode: {} of {} placed\n",
            h.jobs_in_one_tier1_domain, r.jobs_placed
        );
    }
    match r.seconds_to_place_all {
        Some(t) => out += &format!("all pending pods placed in {t:.3} s of scheduling\n"),
        None => out += "not every pending pod was placed\n",
    }
    out += &format!(
        "cache: first read of all objects {:.1} ms, {} snapshots rebuilt since\n",
        r.cache_build_ms, r.snapshots_rebuilt
    );
    out += &format!(
        "peak resident memory: {:.1} MiB\n",
        r.peak_rss_bytes as f64 / (1024.0 * 1024.0)
    );
    out
}
