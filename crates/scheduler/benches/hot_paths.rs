//! The hot paths of a session, one by one, over 5,000 nodes (32 CPU, 128 GiB) carrying 50,000
//! running pods, with 1,000 pending single-pod jobs:
//!
//! - `snapshot/build`: the cache reads every object (the start of the scheduler, or a change it
//!   cannot take in place);
//! - `snapshot/kept`: a session's snapshot from the kept state (every session after that);
//! - `predicate/500_nodes`: the configured predicates of one task on 500 nodes (the share of a
//!   5,000-node cluster a task's search visits);
//! - `score/500_nodes`: the configured node scores of one task on 500 nodes;
//! - `allocate/1000_pods`: one whole session placing the 1,000 pending pods.
//!
//! Run with `cargo bench -p volcano-scheduler --bench hot_paths`.

// The benchmarks share the tests' session helpers but need only some of them.
#[allow(dead_code)]
#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use support::*;
use volcano_api::Objects;
use volcano_scheduler::cache::{CacheOptions, SchedulerCache, build_snapshot};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::framework::Session;
use volcano_scheduler::model::{NodeId, TaskId, TaskStatus};
use volcano_scheduler::run_session;
use volcano_testkit::build::*;

const NODES: usize = 5_000;
const RUNNING_PER_NODE: usize = 10;
const PENDING: usize = 1_000;
const VISITED: usize = 500;

fn objects() -> Objects {
    let mut c = cluster()
        .with_all((0..NODES).map(|i| node(&format!("node-{i:05}")).cpu(32).mem_gi(128)))
        .with_all((0..4).map(|q| queue(&format!("q{q}"))));
    for i in 0..NODES * RUNNING_PER_NODE / 10 {
        let name = format!("running-{i:05}");
        let pods = (0..10).map(|k| {
            pod("bench", &format!("{name}-{k}"))
                .cpu_milli(1000)
                .mem(2 * GI)
                .group(&name)
                .on(&format!("node-{:05}", (i * 10 + k) % NODES))
                .running()
        });
        c = c
            .with(gang("bench", &name).queue(&format!("q{}", i % 4)).min(10))
            .with_all(pods);
    }
    c.with_all((0..PENDING).map(|j| {
        gang("bench", &format!("job-{j:05}"))
            .queue(&format!("q{}", j % 4))
            .min(1)
            .pods(1, 1000 * (1 + (j % 2) as i64), 2 * GI)
    }))
    .objects()
}

fn bench(c: &mut Criterion) {
    let objs = objects();
    let opts = CacheOptions::default();
    let conf = SchedulerConf::default_conf();

    let mut snapshot = c.benchmark_group("snapshot");
    snapshot.bench_function("build", |b| {
        b.iter(|| build_snapshot(black_box(&objs), &opts))
    });
    let mut cache = SchedulerCache::new(opts.clone());
    if let Err(e) = cache.snapshot(&objs) {
        panic!("the cache rejected the benchmark objects: {e}");
    }
    snapshot.bench_function("kept", |b| b.iter(|| cache.snapshot(black_box(&objs))));
    snapshot.finish();

    let snap = match cache.snapshot(&objs) {
        Ok(s) => s,
        Err(e) => panic!("the cache rejected the benchmark objects: {e}"),
    };
    let ssn = Session::open(snap.clone(), &conf, session_options(1));
    let Some(task) = (0..ssn.snap.tasks.len() as u32)
        .map(TaskId)
        .find(|&t| ssn.snap.task(t).status == TaskStatus::Pending)
    else {
        panic!("the benchmark has no pending task");
    };
    let nodes: Vec<NodeId> = (0..VISITED as u32).map(NodeId).collect();

    let mut group = c.benchmark_group("per_task");
    group.throughput(Throughput::Elements(VISITED as u64));
    group.bench_function("predicate/500_nodes", |b| {
        b.iter(|| {
            nodes
                .iter()
                .filter(|&&n| ssn.predicate(black_box(task), n).is_ok())
                .count()
        })
    });
    let mut scores = Vec::with_capacity(VISITED);
    group.bench_function("score/500_nodes", |b| {
        b.iter(|| ssn.score_nodes(black_box(task), &nodes, &mut scores))
    });
    group.finish();

    let mut session = c.benchmark_group("allocate");
    session.throughput(Throughput::Elements(PENDING as u64));
    session.bench_function("1000_pods", |b| {
        b.iter_batched(
            || snap.clone(),
            |s| run_session(s, &conf, session_options(1)),
            BatchSize::LargeInput,
        )
    });
    session.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
