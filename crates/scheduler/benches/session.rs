//! One scheduling session at scale: 1,000 nodes (32 CPU, 128 GiB each) and 10,000 pending pods
//! in 1,000 gangs of 10 (1 or 2 CPU, 2 or 4 GiB per pod) over 4 queues, with the built-in
//! configuration. Every gang fits, so the session places all 10,000 pods.
//!
//! Measured: the cache (`build_snapshot`) plus the session (`run_session`), and the session
//! alone on a clone of a prepared snapshot. Throughput is reported in pods per second.
//!
//! Run with `cargo bench -p volcano-scheduler --bench session`.

// The benchmarks share the tests' session helpers but need only some of them.
#[allow(dead_code)]
#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use support::*;
use volcano_api::Objects;
use volcano_scheduler::cache::{CacheOptions, build_snapshot};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::model::Snapshot;
use volcano_scheduler::run_session;
use volcano_testkit::build::*;

const NODES: usize = 1_000;
const GANGS: usize = 1_000;
const GANG_SIZE: usize = 10;
const PODS: u64 = (GANGS * GANG_SIZE) as u64;
const QUEUES: usize = 4;

fn objects() -> Objects {
    cluster()
        .with_all((0..NODES).map(|i| node(&format!("node-{i:04}")).cpu(32).mem_gi(128)))
        .with_all((0..QUEUES).map(|q| queue(&format!("q{q}"))))
        .with_all((0..GANGS).map(|g| {
            let size = 1 + (g % 2) as i64;
            gang("bench", &format!("job-{g:04}"))
                .queue(&format!("q{}", g % QUEUES))
                .min(GANG_SIZE as i32)
                .pods(GANG_SIZE, size * 1000, size * 2 * GI)
        }))
        .objects()
}

fn snapshot(objs: &Objects) -> Snapshot {
    match build_snapshot(objs, &CacheOptions::default()) {
        Ok(s) => s,
        Err(e) => panic!("the cache rejected the benchmark objects: {e}"),
    }
}

/// One untimed-by-criterion run, printed, so the figures that matter are visible even when
/// criterion's own output is filtered: phase times and how many pods were bound.
fn report_once(objs: &Objects) {
    let conf = SchedulerConf::default_conf();
    let t0 = Instant::now();
    let snap = snapshot(objs);
    let t1 = Instant::now();
    let d = run_session(snap, &conf, session_options(1));
    let t2 = Instant::now();
    let (build, session) = (t1 - t0, t2 - t1);
    eprintln!(
        "session over {NODES} nodes / {PODS} pods: build_snapshot {:.3} s, run_session {:.3} s \
         ({:.0} pods/s), {} pods bound, {} pipelined, {} PodGroups unschedulable",
        build.as_secs_f64(),
        session.as_secs_f64(),
        PODS as f64 / session.as_secs_f64(),
        d.binds.len(),
        d.pipelined.len(),
        d.unschedulable.len(),
    );
}

fn bench_session(c: &mut Criterion) {
    let objs = objects();
    report_once(&objs);
    let conf = SchedulerConf::default_conf();

    let mut group = c.benchmark_group("session_1000_nodes_10000_pods");
    group.throughput(Throughput::Elements(PODS));
    group.bench_function("build_snapshot+run_session", |b| {
        b.iter(|| {
            let snap = snapshot(black_box(&objs));
            run_session(snap, &conf, session_options(1))
        })
    });
    let prepared = snapshot(&objs);
    group.bench_function("run_session", |b| {
        b.iter_batched(
            || prepared.clone(),
            |snap| run_session(snap, &conf, session_options(1)),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(15));
    targets = bench_session
}
criterion_main!(benches);
