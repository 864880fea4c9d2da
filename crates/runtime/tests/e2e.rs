//! End to end against the local control plane, through kube-rs: Jobs are admitted, gangs
//! bound and run, and queues honoured, as a user of a cluster sees them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Cluster, eventually, job};
use kube::api::{Api, ListParams, PostParams};
use kube::core::DynamicObject;
use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::scheduling::{PodGroup, Queue};

fn job_phase(j: &Job) -> String {
    j.status
        .as_ref()
        .map(|s| s.state.phase.clone())
        .unwrap_or_default()
}

async fn create_job(client: &kube::Client, body: serde_json::Value) {
    let job: Job = serde_json::from_value(body).unwrap();
    Api::<Job>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap();
}

both_tiers!(
    a_gang_job_is_bound_runs_and_completes,
    2,
    super::a_gang_job_is_bound_runs_and_completes
);

async fn a_gang_job_is_bound_runs_and_completes(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    create_job(&client, job("train", "default", 3, "1", 1)).await;

    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let (done, phase) = eventually(30, async || {
        let j = jobs.get("train").await.unwrap();
        let p = job_phase(&j);
        (p == "Completed", p)
    })
    .await;
    assert!(done, "job phase is {phase}, not Completed");

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let list = pods.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 3);
    for p in &list.items {
        assert!(p.spec.as_ref().unwrap().node_name.is_some());
        assert_eq!(
            p.status.as_ref().unwrap().phase.as_deref(),
            Some("Succeeded")
        );
    }
    assert!(sched.ready.is_ready() && ctl.ready.is_ready());
    assert_eq!(sched.metrics.pods_bound.get(), 3);
    let snapshots = |source: &str| {
        sched
            .metrics
            .snapshots
            .get_or_create(&[("source", source.to_string())])
            .get()
    };
    assert!(
        snapshots("kept") > snapshots("rebuilt"),
        "most sessions keep their snapshot: kept {} rebuilt {}",
        snapshots("kept"),
        snapshots("rebuilt")
    );
    for stage in ["Watched", "Assumed", "Bound"] {
        let l = [("stage", stage.to_string())];
        assert!(
            sched.metrics.task_latency_ms.get(&l).is_some(),
            "task latency to {stage} recorded"
        );
    }
    let completed = [
        ("job_name", "default/train".to_string()),
        ("queue_name", "default".to_string()),
    ];
    assert_eq!(
        ctl.metrics.job_completed.get(&completed).map(|c| c.get()),
        Some(1),
        "volcano_job_completed_phase_count counts the job once"
    );
    let queue = Api::<Queue>::all(client.clone())
        .get("default")
        .await
        .unwrap();
    assert!(queue.status.is_some(), "the default queue has a status");
    sched.stop().await;
    ctl.stop().await;
}

both_tiers!(
    a_gang_that_cannot_fit_whole_binds_nothing_and_says_why,
    2,
    super::a_gang_that_cannot_fit_whole_binds_nothing_and_says_why
);

async fn a_gang_that_cannot_fit_whole_binds_nothing_and_says_why(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    // Three pods of 2.5 CPUs on two 4-CPU nodes: the queue may use 8 CPUs, so the job is
    // enqueued and its pods created, but only one fits per node and the gang never binds.
    create_job(&client, job("big", "default", 3, "2500m", 30)).await;

    let pgs: Api<PodGroup> = Api::namespaced(client.clone(), "default");
    let (unschedulable, conds) = eventually(20, async || {
        let list = pgs.list(&ListParams::default()).await.unwrap();
        let conds: Vec<_> = list
            .items
            .iter()
            .flat_map(|pg| pg.status.iter().flat_map(|s| s.conditions.iter()))
            .map(|c| (c.type_.clone(), c.status.clone(), c.message.clone()))
            .collect();
        (
            conds
                .iter()
                .any(|(t, s, _)| t == "Unschedulable" && s == "True"),
            conds,
        )
    })
    .await;
    assert!(
        unschedulable,
        "conditions: {conds:?}; podgroups: {:?}",
        pgs.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|p| &p.status)
            .collect::<Vec<_>>()
    );
    let pods = Api::<Pod>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        pods.items
            .iter()
            .all(|p| p.spec.as_ref().unwrap().node_name.is_none())
    );
    assert_eq!(sched.metrics.pods_bound.get(), 0);
    let events: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::discovery::ApiResource::erase::<volcano_api::k8s_openapi::api::events::v1::Event>(
            &(),
        ),
    );
    let (seen, _) = eventually(10, async || {
        let l = events.list(&ListParams::default()).await.unwrap();
        let any = l
            .items
            .iter()
            .any(|e| e.data.get("reason").and_then(|r| r.as_str()) == Some("Unschedulable"));
        (any, ())
    })
    .await;
    assert!(seen, "an Unschedulable event is recorded");
    sched.stop().await;
    ctl.stop().await;
}

/// The events of `reason` about the object named `name`, as (note, occurrences): a repeat
/// aggregated into an event's series counts as many times as it happened.
async fn events_of(client: &kube::Client, reason: &str, name: &str) -> Vec<(String, u64)> {
    let events: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::discovery::ApiResource::erase::<volcano_api::k8s_openapi::api::events::v1::Event>(
            &(),
        ),
    );
    let list = events.list(&ListParams::default()).await.unwrap();
    list.items
        .iter()
        .filter(|e| e.data.get("reason").and_then(|r| r.as_str()) == Some(reason))
        .filter(|e| {
            e.data
                .get("regarding")
                .and_then(|r| r.get("name"))
                .and_then(|n| n.as_str())
                == Some(name)
        })
        .map(|e| {
            let note = e.data.get("note").and_then(|n| n.as_str()).unwrap_or("");
            let count = e
                .data
                .get("series")
                .and_then(|s| s.get("count"))
                .and_then(|c| c.as_u64())
                .unwrap_or(1);
            (note.to_string(), count)
        })
        .collect()
}

/// The one PodGroup of namespace `default` (the job controller names it after the Job and
/// its UID), once it exists.
async fn only_pod_group(client: &kube::Client) -> PodGroup {
    let pgs: Api<PodGroup> = Api::namespaced(client.clone(), "default");
    let (_, list) = eventually(10, async || {
        let l = pgs.list(&ListParams::default()).await.unwrap().items;
        (l.len() == 1, l)
    })
    .await;
    assert_eq!(list.len(), 1, "{list:?}");
    list.into_iter().next().unwrap()
}

/// A message without its figures, which may move between sessions.
fn words(message: &str) -> String {
    message.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// Sessions a scheduler has run: it takes one snapshot per session, kept or rebuilt.
fn sessions_run(sched: &common::Running<volcano_runtime::metrics::SchedulerMetrics>) -> u64 {
    ["kept", "rebuilt"]
        .iter()
        .map(|source| {
            sched
                .metrics
                .snapshots
                .get_or_create(&[("source", source.to_string())])
                .get()
        })
        .sum()
}

/// Sessions waited for where a test checks that a scheduler repeats nothing: the one running
/// when the wait starts, then enough whole ones that a repeat would have shown.
const SESSIONS_TO_REPEAT: u64 = 5;

/// Waits until `sched` has run [`SESSIONS_TO_REPEAT`] more sessions, so that what it would
/// repeat has had the chance to be repeated; fails if it does not run them.
async fn after_sessions(sched: &common::Running<volcano_runtime::metrics::SchedulerMetrics>) {
    let start = sessions_run(sched);
    let (ran, seen) = eventually(20, async || {
        let n = sessions_run(sched);
        (n >= start + SESSIONS_TO_REPEAT, n)
    })
    .await;
    assert!(
        ran,
        "the scheduler ran {} sessions, not {SESSIONS_TO_REPEAT}",
        seen - start
    );
}

/// Waits until a newly started scheduler has listed the cluster and run sessions since, so
/// what it would repeat has had the chance to be repeated.
async fn restarted_and_in_session(
    sched: &common::Running<volcano_runtime::metrics::SchedulerMetrics>,
) {
    let (ready, _) = eventually(20, async || (sched.ready.is_ready(), ())).await;
    assert!(ready, "the new scheduler never became ready");
    after_sessions(sched).await;
}

fn occurrences(events: &[(String, u64)]) -> u64 {
    events.iter().map(|(_, n)| n).sum()
}

both_tiers!(
    a_job_its_queue_cannot_admit_gets_an_event_saying_why,
    1,
    super::a_job_its_queue_cannot_admit_gets_an_event_saying_why
);

async fn a_job_its_queue_cannot_admit_gets_an_event_saying_why(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    create_job(&client, job("huge", "default", 3, "2", 30)).await;
    let pg = only_pod_group(&client).await;
    let pg_name = pg.metadata.name.clone().unwrap();
    let (seen, notes) = eventually(15, async || {
        let notes = events_of(&client, "NotEnqueued", &pg_name).await;
        (!notes.is_empty(), notes)
    })
    .await;
    assert!(seen, "a NotEnqueued event is recorded");
    assert!(
        notes[0].0.starts_with("not admitted by enqueue"),
        "{notes:?}"
    );
    // The PodGroup carries the reason, so a restarted scheduler knows it was said.
    let pg = only_pod_group(&client).await;
    let conds = pg.status.map(|s| s.conditions).unwrap_or_default();
    assert!(
        conds.iter().any(|c| c.type_ == "Unschedulable"
            && c.reason == "NotEnqueued"
            && c.message == notes[0].0),
        "{conds:?}"
    );
    // Sessions go on, the scheduler restarts: the reason is not announced again while it holds.
    after_sessions(&sched).await;
    sched.stop().await;
    let sched = cluster.scheduler("sched-1", false);
    restarted_and_in_session(&sched).await;
    let all = events_of(&client, "NotEnqueued", &pg_name).await;
    assert_eq!(occurrences(&all), 1, "{all:?}");
    sched.stop().await;
    ctl.stop().await;
}

both_tiers!(
    a_waiting_gangs_pods_say_why_once_across_a_scheduler_restart,
    2,
    super::a_waiting_gangs_pods_say_why_once_across_a_scheduler_restart
);

async fn a_waiting_gangs_pods_say_why_once_across_a_scheduler_restart(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    // Three pods of 2.5 CPUs on two 4-CPU nodes: admitted, but the gang never fits whole.
    create_job(&client, job("wide", "default", 3, "2500m", 30)).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let scheduled_false = |p: &Pod| {
        p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"))
            .filter(|c| c.status == "False")
            .map(|c| {
                (
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default(),
                )
            })
    };
    // Every pod marked, all with the reason of the whole gang (a pod marked while the controller
    // had made only some of them is marked again once the reason changes).
    let (all_marked, seen) = eventually(20, async || {
        let list = pods.list(&ListParams::default()).await.unwrap();
        let marked: Vec<_> = list.items.iter().filter_map(scheduled_false).collect();
        let one_reason = marked.windows(2).all(|w| words(&w[0].1) == words(&w[1].1));
        (
            list.items.len() == 3 && marked.len() == 3 && one_reason,
            marked,
        )
    })
    .await;
    assert!(all_marked, "PodScheduled=False on every pod: {seen:?}");
    let pg = only_pod_group(&client).await;
    let why = pg
        .status
        .iter()
        .flat_map(|s| s.conditions.iter())
        .find(|c| c.type_ == "Unschedulable" && c.status == "True")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(why.contains("tasks in gang unschedulable"), "{why}");
    for (reason, message) in &seen {
        assert_eq!(reason, "Unschedulable");
        // Written when the pod was first seen waiting: its figures may be older.
        assert_eq!(words(message), words(&why));
    }
    // What each pod was told: once, in one event, why it waits. A session that ran while the
    // controller had made only some of the pods said "not enough pods": that pod was told the
    // new reason in a second event, not as a repeat of the first.
    after_sessions(&sched).await;
    // Events are published off the loop: wait until every pod's current reason is out.
    let (out, told) = eventually(15, async || {
        let told = told_why(&client, &pods).await;
        let out = told
            .values()
            .all(|events| events.iter().any(|(note, _)| words(note) == words(&why)));
        (out, told)
    })
    .await;
    assert!(out, "every pod is told why: {told:?}");
    for (name, events) in &told {
        assert!(
            (1..=2).contains(&events.len()) && events.iter().all(|(_, n)| *n == 1),
            "{name}: {events:?}"
        );
        assert!(
            events.iter().any(|(note, _)| words(note) == words(&why)),
            "{name}: {events:?}, not {why}"
        );
    }
    // More sessions, then a new scheduler: nothing is said again.
    after_sessions(&sched).await;
    assert_eq!(
        told_why(&client, &pods).await,
        told,
        "repeated by the same scheduler"
    );
    sched.stop().await;
    let sched = cluster.scheduler("sched-1", false);
    restarted_and_in_session(&sched).await;
    assert_eq!(
        told_why(&client, &pods).await,
        told,
        "repeated after a restart"
    );
    let list = pods.list(&ListParams::default()).await.unwrap();
    for p in &list.items {
        assert!(p.spec.as_ref().unwrap().node_name.is_none());
    }
    sched.stop().await;
    ctl.stop().await;
}

/// Each pod's `FailedScheduling` events (note and count), by pod name.
async fn told_why(
    client: &kube::Client,
    pods: &Api<Pod>,
) -> std::collections::BTreeMap<String, Vec<(String, u64)>> {
    let mut told = std::collections::BTreeMap::new();
    for p in pods.list(&ListParams::default()).await.unwrap().items {
        let name = p.metadata.name.clone().unwrap();
        let events = events_of(client, "FailedScheduling", &name).await;
        told.insert(name, events);
    }
    told
}

both_tiers!(
    a_queue_written_with_an_empty_spec_neither_stalls_the_watch_nor_its_jobs,
    1,
    super::a_queue_written_with_an_empty_spec_neither_stalls_the_watch_nor_its_jobs
);

// Both API servers refuse a Queue without `spec` (the CRD requires it); one with an empty
// spec is taken, and reads with Volcano's defaults.
async fn a_queue_written_with_an_empty_spec_neither_stalls_the_watch_nor_its_jobs(
    cluster: Cluster,
) {
    let client = cluster.client();
    // Every field of the spec left to its default.
    let queues: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &kube::discovery::ApiResource::erase::<Queue>(&()),
    );
    let bare: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": "bare"}, "spec": {}
    }))
    .unwrap();
    queues.create(&PostParams::default(), &bare).await.unwrap();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    create_job(&client, job("in-bare", "bare", 1, "1", 1)).await;
    create_job(&client, job("in-default", "default", 1, "1", 1)).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let (done, phases) = eventually(30, async || {
        let a = job_phase(&jobs.get("in-bare").await.unwrap());
        let b = job_phase(&jobs.get("in-default").await.unwrap());
        (a == "Completed" && b == "Completed", (a, b))
    })
    .await;
    assert!(done, "phases {phases:?}");
    sched.stop().await;
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_job_is_refused_by_admission_and_nothing_of_it_is_created() {
    let cluster = Cluster::start(1).await;
    let client = cluster.client();
    let mut body = job("bad", "default", 2, "1", 1);
    body["spec"]["minAvailable"] = serde_json::json!(5);
    let job: Job = serde_json::from_value(body).unwrap();
    let err = Api::<Job>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("not an API error: {err}");
    };
    assert_eq!(status.code, 400);
    assert!(
        status
            .message
            .contains("admission webhook \"validatejob.volcano.sh\" denied the request")
            && status.message.contains("minAvailable"),
        "{}",
        status.message
    );
    let pgs = Api::<PodGroup>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(pgs.items.is_empty());
}
