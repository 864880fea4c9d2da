//! What a real API server punishes and the local control plane used to forgive, in both tiers:
//! Jobs with the `svc` and `ssh` plugins run under the deploy/ permissions, a write refused for
//! a lasting reason is told on the Job at once, a RestartJob of an `svc` Job does not stall,
//! protected queues stay, a Deployment's pods share one PodGroup that passes
//! `OwnerReferencesPermissionEnforcement` and a Deployment asking for a gang binds whole or not
//! at all, the runtime is back within seconds of an API server outage, and an event repeated is
//! one event counting its series (created in protobuf on a real server, JSON on ours), and a
//! pod made again under its name is neither bound nor evicted in place of the one decided on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::jobs::{assert_no_write_refused, create, events_about, phase, wait_phase};
use common::workloads::{container, mpi_job, tensorflow_job};
use common::{Cluster, eventually};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::core::DynamicObject;
use serde_json::json;
use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::{ConfigMap, Pod};
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_apiserver::kubelet::NodeSpec;
use volcano_runtime::metrics::label;

async fn mpi_job_with_svc_and_ssh_runs_to_completion(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    create(&client, mpi_job("mpi", 3)).await;
    let phases = wait_phase(&client, "mpi", "Completed", 60).await;
    assert!(phases.contains(&"Running".to_string()), "{phases:?}");
    assert_no_write_refused(&client, "mpi").await;
    sched.stop().await;
    ctl.stop().await;
}

both_tiers!(
    mpi_job_with_svc_and_ssh_runs_to_completion,
    2,
    super::mpi_job_with_svc_and_ssh_runs_to_completion
);

async fn a_restarted_svc_job_runs_again_without_stalling(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    create(&client, mpi_job("restarted", 8)).await;
    wait_phase(&client, "restarted", "Running", 30).await;
    let uid = Api::<Job>::namespaced(client.clone(), "default")
        .get("restarted")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let command: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": "restart-restarted", "namespace": "default"},
        "action": "RestartJob",
        "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                   "name": "restarted", "uid": uid},
    }))
    .unwrap();
    let commands: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::discovery::ApiResource::erase::<volcano_api::bus::Command>(&()),
    );
    let restarted_at = Instant::now();
    commands
        .create(&PostParams::default(), &command)
        .await
        .unwrap();
    // Restarting, then Running again with new pods, then Completed once the master is done:
    // well within the 85 s that the ConfigMap's 404s used to cost.
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let (again, seen) = eventually(30, async || {
        let j = jobs.get("restarted").await.unwrap();
        let version = j.status.as_ref().map_or(0, |s| s.version);
        (version >= 1 && phase(&j) == "Running", (version, phase(&j)))
    })
    .await;
    assert!(
        again,
        "the job did not run again after its restart: {seen:?}"
    );
    let took = restarted_at.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "running again took {took:?}"
    );
    // Its pods find the hosts of the new run (the ConfigMap is deleted by the restart and
    // written again, not patched while it is gone).
    let cm: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert!(
        cm.get_opt("restarted-svc").await.unwrap().is_some(),
        "the svc plugin's host lists are back after the restart"
    );
    wait_phase(&client, "restarted", "Completed", 45).await;
    assert_no_write_refused(&client, "restarted").await;
    sched.stop().await;
    ctl.stop().await;
}

both_tiers!(
    a_restarted_svc_job_runs_again_without_stalling,
    2,
    super::a_restarted_svc_job_runs_again_without_stalling
);

async fn a_failed_pod_restarts_a_tensorflow_job_which_then_completes(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    create(&client, tensorflow_job("tf")).await;
    wait_phase(&client, "tf", "Running", 30).await;
    // A worker dies (its node's kubelet reports it Failed, exit code 137).
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let failed = json!({"status": {"phase": "Failed", "containerStatuses": [{
        "name": "tensorflow", "ready": false, "restartCount": 0, "image": "busybox:1.36",
        "imageID": "", "state": {"terminated": {"exitCode": 137, "reason": "Error"}},
    }]}});
    pods.patch_status(
        "tf-worker-0",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&failed),
    )
    .await
    .unwrap();
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let (restarted, seen) = eventually(30, async || {
        let j = jobs.get("tf").await.unwrap();
        let version = j.status.as_ref().map_or(0, |s| s.version);
        (version >= 1 && phase(&j) == "Running", (version, phase(&j)))
    })
    .await;
    assert!(
        restarted,
        "the job did not run again after the failure: {seen:?}"
    );
    wait_phase(&client, "tf", "Completed", 45).await;
    assert_no_write_refused(&client, "tf").await;
    sched.stop().await;
    ctl.stop().await;
}

both_tiers!(
    a_failed_pod_restarts_a_tensorflow_job_which_then_completes,
    2,
    super::a_failed_pod_restarts_a_tensorflow_job_which_then_completes
);

/// Two GPU nodes, so that a GPU gang is admitted and its pods are written.
fn gpu_nodes() -> Vec<NodeSpec> {
    (0..2)
        .map(|i| {
            NodeSpec::new(format!("gpu-{i}"))
                .cpu("8")
                .memory("16Gi")
                .gpus(4)
        })
        .collect()
}

async fn a_pod_the_server_refuses_is_told_on_the_job_at_once_on(mut cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    // The queue controller's one write (the default queue's parent) is done while the
    // webhook answers: queue writes fail while it is down (failurePolicy Fail).
    let queues: Api<Queue> = Api::all(client.clone());
    let (settled, _) = eventually(10, async || {
        let q = queues.get("default").await.unwrap();
        (q.spec.parent == "root", ())
    })
    .await;
    assert!(
        settled,
        "the queue controller gives the default queue its parent"
    );
    // The webhook would refuse this Job at create (below); with it down (failurePolicy
    // Ignore) the Job gets in, and its pods meet the API server's own rules.
    cluster.stop_webhook().await;
    // An extended resource requested without a limit: a real API server refuses the pod (422,
    // "Limit must be set for non overcommitable resources"), however often it is sent.
    let mut body = common::job("gpu", "default", 1, "1", 30);
    body["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] =
        json!("1");
    create(&client, body).await;
    let (told, events) = eventually(15, async || {
        let ev = events_about(&client, "Job", "gpu").await;
        (ev.iter().any(|(r, _, _)| r == "FailedCreate"), ev)
    })
    .await;
    assert!(told, "no FailedCreate event on the Job: {events:?}");
    let (_, note, _) = events.iter().find(|(r, _, _)| r == "FailedCreate").unwrap();
    assert!(
        note.contains("Limit must be set") && note.contains("gpu-worker-0"),
        "{note}"
    );
    // Not hammered: retried after 0.2, 0.4, 0.8 s... (the budget of 15 fast retries, 5 ms
    // doubling, would have sent it some ten times by now and terminated the job later).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let attempts = ctl
        .metrics
        .changes
        .get_or_create(&label("result", "failed"))
        .get();
    assert!(
        (2..=6).contains(&attempts),
        "{attempts} refused attempts in ~5 s"
    );
    let j = Api::<Job>::namespaced(client.clone(), "default")
        .get("gpu")
        .await
        .unwrap();
    assert_eq!(
        phase(&j),
        "Pending",
        "the job waits for its template to be fixed"
    );
    // Told once: a repeat would be counted in the event's series.
    let told = events_about(&client, "Job", "gpu")
        .await
        .into_iter()
        .filter(|(r, _, _)| r == "FailedCreate")
        .map(|(_, _, n)| n)
        .sum::<u64>();
    assert_eq!(told, 1, "the same refusal was told again");
    sched.stop().await;
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_the_server_refuses_is_told_on_the_job_at_once() {
    let test = "a_pod_the_server_refuses_is_told_on_the_job_at_once";
    if let Some(c) = Cluster::real_with_specs(&gpu_nodes(), test).await {
        a_pod_the_server_refuses_is_told_on_the_job_at_once_on(c).await;
    }
}

/// Volcano's Job webhook refuses such a Job at create, as `validateTaskTemplate` does: the
/// webhook server on a real API server, and `volcano up` in process.
async fn a_gpu_job_without_limits_is_refused_at_create_on(cluster: Cluster) {
    let mut body = common::job("gpu", "default", 1, "1", 30);
    body["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] =
        json!("1");
    let job: Job = serde_json::from_value(body).unwrap();
    let err = Api::<Job>::namespaced(cluster.client(), "default")
        .create(&PostParams::default(), &job)
        .await
        .unwrap_err();
    let kube::Error::Api(s) = err else {
        panic!("not an API error: {err}")
    };
    assert_eq!(s.code, 400);
    assert!(
        s.message
            .contains("admission webhook \"validatejob.volcano.sh\" denied the request")
            && s.message.contains("Limit must be set"),
        "{}",
        s.message
    );
}

both_tiers!(
    a_gpu_job_without_limits_is_refused_at_create,
    1,
    super::a_gpu_job_without_limits_is_refused_at_create_on
);

async fn queue(client: &kube::Client, name: &str, parent: Option<&str>) {
    let mut spec = json!({"weight": 1, "reclaimable": true});
    if let Some(p) = parent {
        spec["parent"] = json!(p);
    }
    let q: Queue = serde_json::from_value(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap();
    Api::<Queue>::all(client.clone())
        .create(&PostParams::default(), &q)
        .await
        .unwrap();
}

async fn delete_queue(client: &kube::Client, name: &str) -> Result<(), kube::core::Status> {
    match Api::<Queue>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) => Err(*s),
        Err(e) => panic!("deleting queue {name}: {e}"),
    }
}

async fn protected_queues_cannot_be_deleted(cluster: Cluster) {
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    let queues: Api<Queue> = Api::all(client.clone());
    let (made, _) = eventually(10, async || {
        (queues.get_opt("default").await.unwrap().is_some(), ())
    })
    .await;
    assert!(made, "the scheduler creates the default queue");
    // Refused by the webhook (400), or on a cluster first by deploy/'s
    // ValidatingAdmissionPolicy (403), in Volcano's words either way.
    let refused = |s: &kube::core::Status| s.code == 400 || s.code == 403;
    for name in ["default", "root"] {
        let s = delete_queue(&client, name).await.unwrap_err();
        assert!(refused(&s), "{name}: {s:?}");
        assert!(
            s.message
                .contains(&format!("`{name}` queue can not be deleted")),
            "{}",
            s.message
        );
    }
    queue(&client, "eng", None).await;
    queue(&client, "eng-dev", Some("eng")).await;
    let s = delete_queue(&client, "eng").await.unwrap_err();
    assert!(
        refused(&s)
            && s.message
                .contains("queue eng can not be deleted because it has 1 child queues: eng-dev"),
        "{s:?}"
    );
    // A queue whose job runs holds resources.
    queue(&client, "busy", None).await;
    create(&client, common::job("busy-job", "busy", 1, "1", 60)).await;
    let (held, _) = eventually(20, async || {
        let q = queues.get("busy").await.unwrap();
        let cpu = q
            .status
            .and_then(|s| s.allocated)
            .and_then(|a| a.get("cpu").cloned());
        (cpu.is_some_and(|c| c.0 != "0"), ())
    })
    .await;
    assert!(held, "the scheduler records what the busy queue holds");
    let s = delete_queue(&client, "busy").await.unwrap_err();
    assert!(
        refused(&s) && s.message.contains("queue busy cannot be deleted because"),
        "{s:?}"
    );
    // A leaf with nothing running goes.
    delete_queue(&client, "eng-dev").await.unwrap();
    assert!(queues.get_opt("default").await.unwrap().is_some());
    sched.stop().await;
    ctl.stop().await;
}

both_tiers!(
    protected_queues_cannot_be_deleted,
    1,
    super::protected_queues_cannot_be_deleted
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_pods_share_one_pod_group_and_a_gang_binds_whole_or_not_at_all() {
    let test = "deployment_pods_share_one_pod_group_and_a_gang_binds_whole_or_not_at_all";
    let Some(cluster) = Cluster::real(2, test).await else {
        return;
    };
    if !cluster.has_controller_manager() {
        eprintln!("skipped {test}: no kube-controller-manager to run the Deployment");
        return;
    }
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", false);
    create_deployment(&client, "web", 2, "250m", None).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let (running, seen) = eventually(30, async || {
        let l = pods.list(&ListParams::default()).await.unwrap();
        let phases: Vec<String> = l
            .items
            .iter()
            .map(|p| {
                p.status
                    .as_ref()
                    .and_then(|s| s.phase.clone())
                    .unwrap_or_default()
            })
            .collect();
        (
            phases.len() == 2 && phases.iter().all(|p| p == "Running"),
            phases,
        )
    })
    .await;
    let pgs = Api::<PodGroup>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        running,
        "pods {seen:?}; PodGroups {:?}",
        pgs.items
            .iter()
            .map(|p| &p.metadata.name)
            .collect::<Vec<_>>()
    );
    // As in Volcano, the pods of one controller (the ReplicaSet) share one PodGroup, owned by
    // it, without blocking its deletion.
    assert_eq!(pgs.items.len(), 1, "one PodGroup for the ReplicaSet's pods");
    let owner = &pgs.items[0].metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(owner.kind, "ReplicaSet");
    assert_eq!(owner.block_owner_deletion, None);

    // A Deployment asking for a gang of 3 with room for 2 (3 cpu each, one per 4-cpu node):
    // none of its pods binds. One whose gang fits binds all three.
    create_deployment(&client, "gang", 3, "3", Some("3")).await;
    create_deployment(&client, "fits", 3, "1", Some("3")).await;
    let bound_of = |app: &'static str| {
        let pods = pods.clone();
        async move {
            pods.list(&ListParams::default().labels(&format!("app={app}")))
                .await
                .unwrap()
                .items
                .iter()
                .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
                .count()
        }
    };
    let (fits, seen) = eventually(30, async || {
        let n = bound_of("fits").await;
        (n == 3, n)
    })
    .await;
    assert!(fits, "{seen} of the fitting gang's 3 pods bound");
    // The scheduler has had sessions since; the gang that cannot fit still holds nothing.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(
        bound_of("gang").await,
        0,
        "no pod of the gang of 3 is bound"
    );
    let groups = Api::<PodGroup>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    let min_members: Vec<i32> = groups.items.iter().map(|g| g.spec.min_member).collect();
    assert_eq!(
        min_members.iter().filter(|m| **m == 3).count(),
        2,
        "{min_members:?}"
    );
    sched.stop().await;
    ctl.stop().await;
}

/// Creates a Deployment of `replicas` pods requesting `cpu`, asking for a gang of
/// `min_member` when given.
async fn create_deployment(
    client: &kube::Client,
    name: &str,
    replicas: i32,
    cpu: &str,
    min_member: Option<&str>,
) {
    let annotations = match min_member {
        Some(m) => json!({"scheduling.volcano.sh/group-min-member": m}),
        None => json!({}),
    };
    let deployment: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "schedulerName": "volcano",
                    "containers": [container(name, 3600, json!({"requests": {"cpu": cpu}}))],
                },
            },
        },
    }))
    .unwrap();
    Api::<DynamicObject>::namespaced_with(
        client.clone(),
        "default",
        &kube::discovery::ApiResource::erase::<volcano_api::k8s_openapi::api::apps::v1::Deployment>(
            &(),
        ),
    )
    .create(&PostParams::default(), &deployment)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_created_right_after_an_api_server_outage_is_bound_within_five_seconds() {
    let test = "a_job_created_right_after_an_api_server_outage_is_bound_within_five_seconds";
    let Some(mut cluster) = Cluster::real(2, test).await else {
        return;
    };
    let client = cluster.client();
    let ctl = cluster.controllers("ctl-0");
    let sched = cluster.scheduler("sched-0", true);
    create(&client, common::job("before", "default", 1, "1", 1)).await;
    wait_phase(&client, "before", "Completed", 30).await;
    let outage = std::env::var("VOLCANO_TEST_OUTAGE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    cluster
        .plane()
        .api_outage(Duration::from_secs(outage))
        .await
        .unwrap();
    let client = cluster.client();
    // Recovered means serving its clients: a restarted API server answers 403 for a moment,
    // until its RBAC caches are filled, though it says it is ready.
    let as_controllers: Api<Job> = Api::namespaced(cluster.controllers_client(), "default");
    let (serving, _) = eventually(30, async || {
        (
            as_controllers.list(&ListParams::default()).await.is_ok(),
            (),
        )
    })
    .await;
    assert!(serving, "the API server did not come back");
    let created = Instant::now();
    create(&client, common::job("after", "default", 2, "1", 30)).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let (bound, _) = eventually(15, async || {
        let l = pods.list(&ListParams::default()).await.unwrap();
        let n = l
            .items
            .iter()
            .filter(|p| {
                p.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("after-"))
            })
            .filter(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_some()))
            .count();
        (n == 2, ())
    })
    .await;
    let took = created.elapsed();
    eprintln!("after a {outage} s API server outage, a new Job was bound in {took:?}");
    assert!(bound, "the job created after the outage was not bound");
    assert!(
        took < Duration::from_secs(5),
        "bound {took:?} after creation, after a {outage} s outage"
    );
    sched.stop().await;
    ctl.stop().await;
}

async fn a_repeated_event_is_one_event_counting_its_series(cluster: Cluster) {
    use volcano_api::k8s_openapi::api::core::v1::ObjectReference;
    use volcano_api::k8s_openapi::api::events::v1::Event;
    use volcano_runtime::events::recorder::{Note, Recorder, Reporter};

    let client = cluster.client();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "volcano".into(),
            instance: "volcano-0".into(),
            action: "Scheduling".into(),
        },
    );
    let regarding = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some("default".into()),
        name: Some("waiting-0".into()),
        ..ObjectReference::default()
    };
    let note = Note {
        type_: "Warning",
        reason: "FailedScheduling",
        note: "0/3 nodes are unavailable: 3 Insufficient cpu.",
        regarding: &regarding,
        count: 1,
        combined: false,
        gist: volcano_runtime::events::recorder::gist(
            "0/3 nodes are unavailable: 3 Insufficient cpu.",
        ),
    };
    for _ in 0..3 {
        recorder.publish(&note).await.unwrap();
    }
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let ours: Vec<Event> = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("waiting-0"))
        .collect();
    assert_eq!(ours.len(), 1, "{ours:?}");
    let e = &ours[0];
    assert_eq!(e.reason.as_deref(), Some("FailedScheduling"));
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(e.reporting_controller.as_deref(), Some("volcano"));
    assert_eq!(e.note.as_deref(), note.note.into());
    assert_eq!(e.series.as_ref().map(|s| s.count), Some(3));
}

both_tiers!(
    a_repeated_event_is_one_event_counting_its_series,
    1,
    super::a_repeated_event_is_one_event_counting_its_series
);

async fn a_pod_made_again_under_its_name_is_not_bound_or_evicted_in_place_of_the_first(
    cluster: Cluster,
) {
    use kube::Error as KubeError;
    use volcano_runtime::scheduler::writes::binding::{Binder, DecidedPod};
    use volcano_runtime::scheduler::writes::eviction::Evictor;

    let client = cluster.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "reborn"},
        "spec": {"schedulerName": "nobody", "containers": [container("main", 60, json!({}))]},
    }))
    .unwrap();
    let first = pods.create(&PostParams::default(), &pod).await.unwrap();
    let first_uid = first.metadata.uid.unwrap();
    pods.delete("reborn", &DeleteParams::default())
        .await
        .unwrap();
    let (gone, _) = eventually(10, async || {
        (pods.get_opt("reborn").await.unwrap().is_none(), ())
    })
    .await;
    assert!(gone, "an unbound pod is deleted at once");
    let second = pods.create(&PostParams::default(), &pod).await.unwrap();
    let second_uid = second.metadata.uid.unwrap();

    let decided_on = |uid| DecidedPod {
        namespace: "default",
        name: "reborn",
        uid: Some(uid),
    };
    let refused = |r: Result<(), KubeError>| match r {
        Err(KubeError::Api(s)) => s.code,
        other => panic!("the first pod's write was not refused: {other:?}"),
    };
    let binder = Binder::default();
    let bound = binder.bind(&client, decided_on(&first_uid), "node-0").await;
    assert_eq!(refused(bound), 409);
    // kube-apiserver retries a conflict on a pending pod's eviction for about 10 s first.
    let evicted = Evictor::default()
        .evict(&client, decided_on(&first_uid))
        .await;
    assert_eq!(refused(evicted), 409);
    let now = pods.get("reborn").await.unwrap();
    assert_eq!(now.metadata.uid.as_deref(), Some(second_uid.as_str()));
    assert!(
        now.spec.unwrap().node_name.is_none(),
        "the pod made again was bound in place of the first"
    );

    binder
        .bind(&client, decided_on(&second_uid), "node-0")
        .await
        .unwrap();
    let now = pods.get("reborn").await.unwrap();
    assert_eq!(now.spec.unwrap().node_name.as_deref(), Some("node-0"));
    Evictor::default()
        .evict(&client, decided_on(&second_uid))
        .await
        .unwrap();
    let going = pods.get_opt("reborn").await.unwrap();
    assert!(
        going.is_none_or(|p| p.metadata.deletion_timestamp.is_some()),
        "the pod decided on is evicted"
    );
}

both_tiers!(
    a_pod_made_again_under_its_name_is_not_bound_or_evicted_in_place_of_the_first,
    1,
    super::a_pod_made_again_under_its_name_is_not_bound_or_evicted_in_place_of_the_first
);
