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
    let events: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::discovery::ApiResource::erase::<volcano_api::k8s_openapi::api::events::v1::Event>(
            &(),
        ),
    );
    let (seen, notes) = eventually(15, async || {
        let l = events.list(&ListParams::default()).await.unwrap();
        let notes: Vec<String> = l
            .items
            .iter()
            .filter(|e| e.data.get("reason").and_then(|r| r.as_str()) == Some("NotEnqueued"))
            .filter_map(|e| {
                e.data
                    .get("note")
                    .and_then(|n| n.as_str())
                    .map(str::to_string)
            })
            .collect();
        (!notes.is_empty(), notes)
    })
    .await;
    assert!(seen, "a NotEnqueued event is recorded");
    assert!(notes[0].contains("not admitted by enqueue"), "{notes:?}");
    // Sessions go on; the reason is not announced again while it holds.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let again = events.list(&ListParams::default()).await.unwrap();
    let n = again
        .items
        .iter()
        .filter(|e| e.data.get("reason").and_then(|r| r.as_str()) == Some("NotEnqueued"))
        .count();
    assert_eq!(n, 1);
    sched.stop().await;
    ctl.stop().await;
}

// Local tier only: a real API server refuses a Queue without `spec` (our CRD requires it), but
// one stored under an older CRD that did not, or restored from a backup, reads the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_written_without_spec_neither_stalls_the_watch_nor_its_jobs() {
    let cluster = Cluster::start(1).await;
    let client = cluster.client();
    // The CRD does not require `spec`; a typed watch would fail on this object and, with it,
    // the whole list of queues.
    let queues: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &kube::discovery::ApiResource::erase::<Queue>(&()),
    );
    let bare: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": "bare"}
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
