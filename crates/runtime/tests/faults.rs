//! Faults: restarts, a second replica, a conflict storm (in both tiers), refused writes (the
//! local control plane's fault injection). What must hold: nothing lost, nothing bound twice,
//! no event repeated, memory bounded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Cluster, eventually, job};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::json;
use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::scheduling::Queue;
use volcano_runtime::metrics::label;

async fn submit(client: &kube::Client, names: impl IntoIterator<Item = String>, secs: u32) {
    let api = Api::<Job>::namespaced(client.clone(), "default");
    for n in names {
        let j: Job = serde_json::from_value(job(&n, "default", 1, "1", secs)).unwrap();
        api.create(&PostParams::default(), &j).await.unwrap();
    }
}

async fn job_phases(jobs: &Api<Job>) -> Vec<String> {
    jobs.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|j| {
            j.status
                .as_ref()
                .map(|s| s.state.phase.clone())
                .unwrap_or_default()
        })
        .collect()
}

async fn bound_pods(client: &kube::Client) -> usize {
    Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_some()))
        .count()
}

async fn event_count(client: &kube::Client) -> usize {
    let events: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &kube::discovery::ApiResource::erase::<volcano_api::k8s_openapi::api::events::v1::Event>(
            &(),
        ),
    );
    events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .len()
}

both_tiers!(
    a_scheduler_restarted_mid_run_loses_nothing_and_binds_nothing_twice,
    2,
    super::a_scheduler_restarted_mid_run_loses_nothing_and_binds_nothing_twice
);

async fn a_scheduler_restarted_mid_run_loses_nothing_and_binds_nothing_twice(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl");
    // Eight slots, sixteen one-CPU jobs of two seconds: two waves.
    submit(&client, (0..16).map(|i| format!("j{i}")), 2).await;
    let first = cluster.scheduler("sched-a", false);
    let (some, _) = eventually(20, async || (bound_pods(&client).await >= 4, ())).await;
    assert!(some, "the first scheduler bound pods");
    first.kill();
    // A bind the killed scheduler had sent may still land (the API server finishes what it
    // took): the new one starts once the bound pods stop changing, as a restarted process
    // comes up after its predecessor's connections are gone. A bind landing after the new
    // scheduler listed the pod would be refused by the API server, never made twice.
    let mut seen = bound_pods(&client).await;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = bound_pods(&client).await;
        if now == seen {
            break;
        }
        seen = now;
    }
    let second = cluster.scheduler("sched-b", false);
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let (all, phases) = eventually(60, async || {
        let phases = job_phases(&jobs).await;
        (phases.iter().all(|p| p == "Completed"), phases)
    })
    .await;
    assert!(all, "every job completes after the restart: {phases:?}");
    assert_eq!(
        second.metrics.bind_failures.get(),
        0,
        "the new scheduler never tried to bind a pod the old one had bound"
    );
    assert!(second.metrics.pods_bound.get() > 0);
    second.stop().await;
    ctl.stop().await;
}

both_tiers!(
    a_controller_restart_emits_no_new_event_for_running_jobs,
    2,
    super::a_controller_restart_emits_no_new_event_for_running_jobs
);

async fn a_controller_restart_emits_no_new_event_for_running_jobs(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-a");
    let sched = cluster.scheduler("sched", false);
    let j: Job = serde_json::from_value(job("long", "default", 2, "1", 600)).unwrap();
    Api::<Job>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &j)
        .await
        .unwrap();
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let (running, _) = eventually(20, async || {
        let j = jobs.get("long").await.unwrap();
        (j.status.is_some_and(|s| s.state.phase == "Running"), ())
    })
    .await;
    assert!(running);
    // Let the last events of the start land.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = event_count(&client).await;
    ctl.stop().await;
    let ctl = cluster.controllers("ctl-b");
    let (_, _) = eventually(5, async || (ctl.ready.is_ready(), ())).await;
    // The new controller has done its work on what it found: it took turns, then none for
    // two seconds of polls (any event of that work is written within its turn).
    let (mut last, mut quiet_polls) = (0, 0);
    let (settled, turns) = eventually(20, async || {
        let now = ctl.metrics.turns.get();
        quiet_polls = if now > 0 && now == last {
            quiet_polls + 1
        } else {
            0
        };
        last = now;
        (quiet_polls >= 20, now)
    })
    .await;
    assert!(
        settled,
        "the new controller took {turns} turns and never settled"
    );
    assert!(ctl.ready.is_ready());
    assert_eq!(
        event_count(&client).await,
        before,
        "no event after the restart"
    );
    sched.stop().await;
    ctl.stop().await;
}

both_tiers!(
    two_scheduler_replicas_never_both_bind_and_the_standby_takes_over,
    2,
    super::two_scheduler_replicas_never_both_bind_and_the_standby_takes_over
);

async fn two_scheduler_replicas_never_both_bind_and_the_standby_takes_over(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl");
    let a = cluster.scheduler("sched-a", true);
    let b = cluster.scheduler("sched-b", true);
    submit(&client, (0..4).map(|i| format!("w{i}")), 600).await;
    let (bound, _) = eventually(20, async || (bound_pods(&client).await == 4, ())).await;
    assert!(bound);
    // The API server shows a bind before the binder has counted it: wait for the count.
    let (_, (ab, bb)) = eventually(5, async || {
        let (ab, bb) = (a.metrics.pods_bound.get(), b.metrics.pods_bound.get());
        (ab + bb >= 4, (ab, bb))
    })
    .await;
    assert!(
        ab == 0 || bb == 0,
        "both replicas bound pods: {ab} and {bb}"
    );
    assert_eq!(ab + bb, 4);
    let (leader, standby) = if ab > 0 { (a, b) } else { (b, a) };
    assert!(standby.metrics.sessions_standby.get() > 0);

    // The leader dies without releasing its lease: the standby waits it out, then binds.
    leader.kill();
    submit(&client, (4..8).map(|i| format!("w{i}")), 600).await;
    let (bound, n) = eventually(20, async || {
        let n = bound_pods(&client).await;
        (n == 8, n)
    })
    .await;
    assert!(bound, "{n} of 8 pods bound after failover");
    // The API server shows a bind before the binder has counted it: wait for the count.
    let (_, counted) = eventually(5, async || {
        let c = standby.metrics.pods_bound.get();
        (c >= 4, c)
    })
    .await;
    assert_eq!(counted, 4);
    assert_eq!(standby.metrics.bind_failures.get(), 0);
    standby.stop().await;
    ctl.stop().await;
}

both_tiers!(
    a_conflict_storm_on_queue_status_leaves_the_work_queues_bounded,
    2,
    super::a_conflict_storm_on_queue_status_leaves_the_work_queues_bounded
);

async fn a_conflict_storm_on_queue_status_leaves_the_work_queues_bounded(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl");
    let sched = cluster.scheduler("sched", false);
    let queues: Api<Queue> = Api::all(client.clone());
    for i in 0..5 {
        let q: Queue = serde_json::from_value(json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": format!("q{i}")},
            "spec": {"weight": 1},
        }))
        .unwrap();
        queues.create(&PostParams::default(), &q).await.unwrap();
    }
    submit(&client, (0..4).map(|i| format!("s{i}")), 600).await;
    // Another writer hammers every queue's status while both components run.
    let storm = {
        let queues = queues.clone();
        tokio::spawn(async move {
            for n in 0..2000u32 {
                let q = format!("q{}", n % 5);
                let patch = json!({"status": {"reservation": {"nodes": [format!("n{n}")]}}});
                let _ = queues
                    .patch_status(&q, &PatchParams::default(), &Patch::Merge(&patch))
                    .await;
            }
        })
    };
    let mut peak = 0;
    while !storm.is_finished() {
        let depth = ctl
            .metrics
            .queue_depth
            .get_or_create(&label("controller", "queue"))
            .get();
        peak = peak.max(depth);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    storm.await.unwrap();
    assert!(
        peak <= 7,
        "the queue controller's work queue peaked at {peak} for 7 queues"
    );
    let failed = ctl
        .metrics
        .changes
        .get_or_create(&label("result", "failed"))
        .get();
    assert_eq!(failed, 0, "no controller write was refused");
    let (bound, _) = eventually(20, async || (bound_pods(&client).await == 4, ())).await;
    assert!(bound, "scheduling went on through the storm");
    sched.stop().await;
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_binds_and_status_writes_are_retried_and_every_job_completes_once() {
    // Every fifth write of pods, PodGroups and Job and Queue status fails (409 or 500).
    let cluster = Cluster::start_with(
        2,
        volcano_apiserver::ServerOptions {
            refuse_every_nth_write: 5,
            ..Default::default()
        },
    )
    .await;
    let client = cluster.client();
    let ctl = cluster.controllers("ctl");
    let sched = cluster.scheduler("sched", false);
    // Twelve one-CPU jobs of a second on eight CPUs: two waves.
    submit(&client, (0..12).map(|i| format!("j{i}")), 1).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let (all, phases) = eventually(90, async || {
        let phases = job_phases(&jobs).await;
        (
            phases.len() == 12 && phases.iter().all(|p| p == "Completed"),
            phases,
        )
    })
    .await;
    assert!(
        all,
        "every job completes through the refused writes: {phases:?}"
    );
    assert!(
        cluster.server().refused_writes() >= 10,
        "writes were refused: {}",
        cluster.server().refused_writes()
    );
    // One pod per job, each bound once: a refused bind leaves the pod pending for the next
    // session, never bound twice or recreated.
    let pods = Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(pods.len(), 12, "one pod per job");
    assert_eq!(
        sched.metrics.pods_bound.get(),
        12,
        "each pod bound exactly once"
    );
    sched.stop().await;
    ctl.stop().await;
}
