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
