use super::*;

fn small(jobs: usize, gang: usize) -> BenchSpec {
    BenchSpec {
        nodes: 20,
        jobs,
        gang,
        running: 40,
        queues: 2,
        gpu: 0.25,
        seed: 7,
        max_sessions: 10,
        constraint: None,
        topology: Vec::new(),
        network_topology: None,
    }
}

#[test]
fn a_workload_that_fits_is_placed_whole() {
    let r = run(&small(30, 3), &SchedulerConf::default_conf()).expect("bench runs");
    assert_eq!(r.pods_bound, 90);
    assert_eq!(r.pods_left_pending, 0);
    assert_eq!(r.jobs_placed, 30);
    assert!(r.seconds_to_place_all.is_some());
    assert!(r.pods_per_second > 0.0);
    assert!(r.session_ms_p50 <= r.session_ms_p99 && r.session_ms_p99 <= r.session_ms_max);
}

#[test]
fn a_gang_larger_than_the_cluster_binds_nothing() {
    // 20 nodes × 110 pods: a gang of 3,000 cannot be placed, and no pod of it is bound.
    let r = run(&small(1, 3_000), &SchedulerConf::default_conf()).expect("bench runs");
    assert_eq!(r.pods_bound, 0);
    assert_eq!(r.jobs_placed, 0);
    assert_eq!(r.seconds_to_place_all, None);
    assert_eq!(r.sessions, 1);
}

#[test]
fn the_workload_is_the_same_for_the_same_seed() {
    let a = workload::build(&small(10, 2));
    let b = workload::build(&small(10, 2));
    let c = workload::build(&BenchSpec {
        seed: 8,
        ..small(10, 2)
    });
    assert_eq!(a.pods, b.pods);
    assert_ne!(a.pods, c.pods);
    assert_eq!(a.nodes.len(), 20);
    // A quarter of the nodes have GPUs.
    let gpu_nodes = a
        .nodes
        .iter()
        .filter(|n| {
            n.status
                .as_ref()
                .and_then(|s| s.allocatable.as_ref())
                .is_some_and(|l| l.contains_key("nvidia.com/gpu"))
        })
        .count();
    assert_eq!(gpu_nodes, 5);
}

#[test]
fn quantiles_take_the_nearest_rank() {
    let v = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(quantile(&v, 0.5), 2.0);
    assert_eq!(quantile(&v, 0.99), 4.0);
    assert_eq!(quantile(&[], 0.5), 0.0);
}

fn constrained(jobs: usize, gang: usize, c: constraint::Constraint) -> BenchSpec {
    BenchSpec {
        running: 0,
        gpu: 0.0,
        constraint: Some(c),
        ..small(jobs, gang)
    }
}

#[test]
fn host_port_pods_take_one_node_each() {
    let r = run(
        &constrained(30, 1, constraint::Constraint::HostPort),
        &SchedulerConf::default_conf(),
    )
    .expect("bench runs");
    assert_eq!(r.pods_bound, 20, "20 nodes have one port 8080 each");
    assert_eq!(r.pods_left_pending, 10);
}

#[test]
fn an_anti_affine_gang_needs_a_node_per_pod() {
    let conf = SchedulerConf::default_conf();
    let fits = run(
        &constrained(1, 20, constraint::Constraint::PodAntiAffinity),
        &conf,
    )
    .expect("bench runs");
    assert_eq!(fits.pods_bound, 20);
    let too_big = run(
        &constrained(1, 21, constraint::Constraint::PodAntiAffinity),
        &conf,
    )
    .expect("bench runs");
    assert_eq!(
        too_big.pods_bound, 0,
        "a gang of 21 on 20 nodes is placed whole or not at all"
    );
}

#[test]
fn constraints_are_named_as_on_the_command_line() {
    for c in constraint::Constraint::ALL {
        assert_eq!(constraint::Constraint::from_name(c.name()), Some(c));
    }
    assert_eq!(constraint::Constraint::from_name("anti-affinity"), None);
    let pods = workload::build(&constrained(1, 2, constraint::Constraint::TopologySpread));
    let zones: Vec<_> = pods
        .nodes
        .iter()
        .filter_map(|n| {
            n.metadata
                .labels
                .as_ref()?
                .get(constraint::ZONE_LABEL)
                .cloned()
        })
        .collect();
    assert_eq!(zones.len(), 20, "zone rules label every node with a zone");
    let plain = workload::build(&small(1, 2));
    assert!(plain.nodes.iter().all(|n| {
        n.metadata
            .labels
            .as_ref()
            .is_some_and(|l| !l.contains_key(constraint::ZONE_LABEL))
    }));
}

fn tiers(text: &str) -> Vec<TopologyTier> {
    match crate::generate::parse_topology(text) {
        Ok(t) => t,
        Err(e) => panic!("{text}: {e}"),
    }
}

/// The shape, scaled down: HyperNodes in three tiers over the nodes, and every pending
/// PodGroup with a hard network topology of tier 1.
fn topology_shape() -> BenchSpec {
    BenchSpec {
        nodes: 100,
        jobs: 4,
        gang: 8,
        running: 0,
        topology: tiers("leaf:16,spine:2,zone:2"),
        network_topology: Some(BenchNetworkTopology {
            mode: TopologyMode::Hard,
            highest_tier_allowed: 1,
        }),
        ..small(4, 8)
    }
}

#[test]
fn the_topology_shape_builds_three_tiers_and_hard_gangs() {
    let objects = workload::build(&topology_shape());
    let per_tier = |tier: i64| {
        objects
            .hyper_nodes
            .iter()
            .filter(|h| h.spec.tier == tier)
            .count()
    };
    // 100 nodes: 7 leaves (the last of 4 nodes), 4 spines, 2 zones.
    assert_eq!((per_tier(1), per_tier(2), per_tier(3)), (7, 4, 2));
    let topo = |pg: &volcano_api::scheduling::PodGroup| pg.spec.network_topology.clone();
    let pending: Vec<_> = objects
        .pod_groups
        .iter()
        .filter(|pg| {
            pg.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("job-"))
        })
        .collect();
    assert_eq!(pending.len(), 4);
    for pg in pending {
        let t = topo(pg).expect("every pending PodGroup has a network topology");
        assert_eq!((t.mode.as_str(), t.highest_tier_allowed), ("hard", Some(1)));
    }
}

#[test]
fn the_topology_shape_runs_and_counts_gangs_in_one_leaf() {
    let r = run(&topology_shape(), &SchedulerConf::default_conf()).expect("bench runs");
    assert_eq!(r.pods_bound, 32);
    let t = r
        .hyper_nodes
        .as_ref()
        .expect("a run with HyperNodes has topology figures");
    assert_eq!(t.hyper_nodes_per_tier, vec![7, 4, 2]);
    assert!(t.jobs_in_one_tier1_domain <= r.jobs_placed);
    let json = serde_json::to_value(&r).expect("the report is JSON");
    assert_eq!(json["topology"][0]["name"], "leaf");
    assert_eq!(json["hyper_nodes"]["hyper_nodes_per_tier"][2], 2);
    assert_eq!(json["network_topology"]["mode"], "hard");
}
