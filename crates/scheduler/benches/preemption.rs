//! Preemption and reclaim at scale: 1,000 nodes (32 CPU, 128 GiB each), every one full of
//! running low-priority pods (16,000 pods of 2 CPU in 1,000 jobs), and 250 high-priority gangs
//! of 4 pods waiting, so every gang gets in only by eviction.
//!
//! - `preempt`: everything in one queue; the gangs preempt by priority.
//! - `reclaim`: the running jobs fill queue `lender`, the gangs wait in queue `owed` of equal
//!   weight, so reclaim takes back what `lender` holds beyond its share.
//!
//! Measured: one session (`run_session`) on a clone of a prepared snapshot. Run with
//! `cargo bench -p volcano-scheduler --bench preemption`.

// The benchmarks share the tests' session helpers but need only some of them.
#[allow(dead_code)]
#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use support::*;
use volcano_api::Objects;
use volcano_api::scheduling::PodGroupStatus;
use volcano_scheduler::cache::{CacheOptions, build_snapshot};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::model::Snapshot;
use volcano_scheduler::run_session;
use volcano_testkit::build::*;

const NODES: usize = 1_000;
const PODS_PER_NODE: usize = 16;
const GANGS: usize = 250;
const GANG_SIZE: usize = 4;

fn objects(running_queue: &str, waiting_queue: &str) -> Objects {
    let mut c = cluster()
        .with(priority_class("low", 10))
        .with(priority_class("high", 1000))
        .with_all((0..NODES).map(|i| node(&format!("node-{i:04}")).cpu(32).mem_gi(128)));
    for q in [running_queue, waiting_queue] {
        c = c.with(queue(q).weight(1));
    }
    let mut objs = c.objects();
    for n in 0..NODES {
        let name = format!("run-{n:04}");
        let (pg, pods) = gang("bench", &name)
            .queue(running_queue)
            .min(1)
            .priority_class("low")
            .pods(PODS_PER_NODE, 2000, 4 * GI)
            .build();
        objs.pod_groups.push(pg);
        for mut p in pods {
            if let Some(spec) = p.spec.as_mut() {
                spec.node_name = Some(format!("node-{n:04}"));
            }
            if let Some(st) = p.status.as_mut() {
                st.phase = Some("Running".into());
            }
            objs.pods.push(p.into());
        }
    }
    for g in 0..GANGS {
        let (mut pg, pods) = gang("bench", &format!("urgent-{g:03}"))
            .queue(waiting_queue)
            .min(GANG_SIZE as i32)
            .priority_class("high")
            .pods(GANG_SIZE, 2000, 4 * GI)
            .build();
        pg.status = Some(PodGroupStatus {
            phase: "Inqueue".into(),
            ..Default::default()
        });
        objs.pod_groups.push(pg);
        objs.pods.extend(pods.into_iter().map(Arc::new));
    }
    for pg in &mut objs.pod_groups {
        if pg.status.is_none() {
            pg.status = Some(PodGroupStatus {
                phase: "Running".into(),
                ..Default::default()
            });
        }
    }
    objs
}

fn snapshot(objs: &Objects) -> Snapshot {
    match build_snapshot(objs, &CacheOptions::default()) {
        Ok(s) => s,
        Err(e) => panic!("the cache rejected the benchmark objects: {e}"),
    }
}

fn report_once(label: &str, snap: &Snapshot, conf: &SchedulerConf) {
    let t = Instant::now();
    let d = run_session(snap.clone(), conf, session_options(1));
    eprintln!(
        "{label}: {NODES} nodes, {} running pods, {GANGS} gangs of {GANG_SIZE}: run_session {:.3} s, \
         {} evicted, {} pipelined",
        NODES * PODS_PER_NODE,
        t.elapsed().as_secs_f64(),
        d.evictions.len(),
        d.pipelined.len(),
    );
}

fn bench(c: &mut Criterion) {
    let conf = conf(volcano_testkit::conf::evicting());
    let mut group = c.benchmark_group("evictions_1000_nodes");
    for (label, running, waiting) in [("preempt", "q1", "q1"), ("reclaim", "lender", "owed")] {
        let snap = snapshot(&objects(running, waiting));
        report_once(label, &snap, &conf);
        group.bench_function(label, |b| {
            b.iter_batched(
                || snap.clone(),
                |s| run_session(s, &conf, session_options(1)),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    targets = bench
}
criterion_main!(benches);
