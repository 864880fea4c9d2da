//! Volcano's admission webhooks as a user meets them: each invalid object is refused at create
//! with Volcano's message, by the webhook server on a real API server (`volcano
//! webhook-manager`, running in the test process) and by `volcano up`'s in-process admission,
//! from the one implementation of `volcano_controllers::admission`. In the real tier also: a
//! webhook that is down blocks no pod and no Job and fails queue writes at once, and a new
//! certificate is trusted without restarting the API server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::Cluster;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_runtime::webhook::certs::CertSource;

fn object<K: DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap()
}

fn queue(name: &str, spec: Value) -> Queue {
    object(
        json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": name}, "spec": spec}),
    )
}

/// The API server's message of a refused write; panics if it was admitted.
fn refused<T>(result: Result<T, kube::Error>, what: &str) -> String {
    match result {
        Ok(_) => panic!("{what} was admitted"),
        Err(kube::Error::Api(e)) => e.message,
        Err(e) => e.to_string(),
    }
}

async fn create_queue(c: &Cluster, name: &str, spec: Value) -> Result<Queue, kube::Error> {
    Api::<Queue>::all(c.client())
        .create(&PostParams::default(), &queue(name, spec))
        .await
}

/// Creates a queue the scheduler would have created at its start, unless it exists.
async fn ensure_queue(c: &Cluster, name: &str) {
    match create_queue(c, name, json!({"weight": 1})).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("queue {name}: {e}"),
    }
}

/// Sets a queue's `status.state`, as the queue controller would.
async fn set_state(c: &Cluster, name: &str, state: &str) {
    Api::<Queue>::all(c.client())
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"state": state}})),
        )
        .await
        .unwrap();
}

fn pod_group(name: &str, queue: &str) -> PodGroup {
    object(
        json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": 1, "queue": queue}}),
    )
}

fn volcano_job(name: &str, queue: &str, plugins: Value) -> Job {
    let mut body = common::job(name, queue, 1, "100m", 1);
    body["spec"]["plugins"] = plugins;
    object(body)
}

fn pod(name: &str, annotations: Value) -> Pod {
    object(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]}}))
}

async fn invalid_objects_are_refused_with_volcanos_messages(c: Cluster) {
    let queues: Api<Queue> = Api::all(c.client());
    let q = |spec: Value| spec;
    // What the scheduler creates at its start.
    for name in ["root", "default"] {
        ensure_queue(&c, name).await;
    }

    let why = refused(
        create_queue(
            &c,
            "upside-down",
            q(json!({"weight": 1, "guarantee": {"resource": {"cpu": "4"}},
                "deserved": {"cpu": "2"}, "capability": {"cpu": "1"}})),
        )
        .await,
        "guarantee > deserved > capability",
    );
    assert!(
        why.starts_with("admission webhook \"validatequeue.volcano.sh\" denied the request: ")
            && why.contains("deserved[cpu]=2 must be >= guarantee[cpu]=4")
            && why.contains("deserved[cpu]=2 must be <= capability[cpu]=1"),
        "{why}"
    );

    let why = refused(
        create_queue(&c, "orphan", q(json!({"weight": 1, "parent": "nowhere"}))).await,
        "a queue whose parent does not exist",
    );
    assert!(
        why.contains(
            "failed to get parent queue nowhere of queue orphan: queue.scheduling.volcano.sh \"nowhere\" not found"
        ),
        "{why}"
    );

    // A new queue gets Volcano's defaults.
    let eng = create_queue(&c, "eng", q(json!({"weight": 2})))
        .await
        .unwrap();
    assert_eq!(eng.spec.reclaimable, Some(true));
    create_queue(&c, "dev", q(json!({"weight": 1, "parent": "eng"})))
        .await
        .unwrap();
    let why = refused(
        queues
            .patch(
                "eng",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"parent": "dev"}})),
            )
            .await,
        "a parent cycle",
    );
    assert!(why.contains("cycle eng -> dev -> eng"), "{why}");

    for name in ["root", "default"] {
        let why = refused(
            queues.delete(name, &DeleteParams::default()).await,
            "deleting {name}",
        );
        assert!(
            why.contains(&format!("`{name}` queue can not be deleted")),
            "{why}"
        );
    }
    let why = refused(
        queues.delete("eng", &DeleteParams::default()).await,
        "deleting a parent",
    );
    assert!(
        why.contains("queue eng can not be deleted because it has"),
        "{why}"
    );
    assert!(why.contains("dev"), "{why}");

    // A queue whose PodGroups hold pods stays.
    queues
        .patch_status(
            "dev",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"allocated": {"pods": "2", "cpu": "1"}}})),
        )
        .await
        .unwrap();
    let why = refused(
        queues.delete("dev", &DeleteParams::default()).await,
        "deleting a queue with running PodGroups",
    );
    assert!(why.contains("queue dev cannot be deleted because"), "{why}");

    let groups: Api<PodGroup> = Api::namespaced(c.client(), "default");
    let why = refused(
        groups
            .create(&PostParams::default(), &pod_group("lost", "nowhere"))
            .await,
        "a PodGroup to a missing queue",
    );
    assert!(
        why.contains("admission webhook \"validatepodgroup.volcano.sh\" denied the request: unable to find queue: queue.scheduling.volcano.sh \"nowhere\" not found"),
        "{why}"
    );
    create_queue(&c, "shut", q(json!({"weight": 1})))
        .await
        .unwrap();
    set_state(&c, "shut", "Closed").await;
    let why = refused(
        groups
            .create(&PostParams::default(), &pod_group("late", "shut"))
            .await,
        "a PodGroup to a closed queue",
    );
    assert!(
        why.contains(
            "can only submit PodGroup to queue with state `Open`, queue `shut` status is `Closed`."
        ),
        "{why}"
    );

    let jobs: Api<Job> = Api::namespaced(c.client(), "default");
    let why = refused(
        jobs.create(
            &PostParams::default(),
            &volcano_job("bad-args", "default", json!({"svc": ["--no-such-flag"]})),
        )
        .await,
        "a Job whose plugin arguments do not parse",
    );
    assert!(
        why.contains("admission webhook \"validatejob.volcano.sh\" denied the request")
            && why.contains("spec.plugins.svc")
            && why.contains("no-such-flag"),
        "{why}"
    );
    let why = refused(
        jobs.create(
            &PostParams::default(),
            &volcano_job("closed", "shut", json!({})),
        )
        .await,
        "a Job to a closed queue",
    );
    assert!(
        why.contains(
            "can only submit job to queue with state `Open`, queue `shut` status is `Closed`"
        ),
        "{why}"
    );
    // A valid Job is defaulted as Volcano defaults it.
    let mut unqueued = volcano_job("plain", "", json!({}));
    unqueued.spec.max_retry = None;
    let created = jobs
        .create(&PostParams::default(), &unqueued)
        .await
        .unwrap();
    assert_eq!(created.spec.queue, "default");
    assert_eq!(created.spec.max_retry, Some(3));

    let pods: Api<Pod> = Api::namespaced(c.client(), "default");
    let bad_budget = json!({"volcano.sh/jdb-min-available": "150%"});
    let mut replica = pod("budget", bad_budget.clone());
    replica.metadata.labels = Some([("pod-template-hash".to_string(), "7d4b9".to_string())].into());
    let why = refused(
        pods.create(&PostParams::default(), &replica).await,
        "a Deployment's pod with a bad disruption budget",
    );
    assert!(
        why.contains("admission webhook \"validatepod.volcano.sh\" denied the request: invalid value <\"150%\"> for volcano.sh/jdb-min-available"),
        "{why}"
    );
    // A bare pod is sent to no pod webhook (each would cost the API server a conversion of the
    // pod): its budget, which governs no other pod, is carried unchecked.
    pods.create(&PostParams::default(), &pod("bare-budget", bad_budget))
        .await
        .expect("a bare pod is not sent to the pod webhooks");
    pods.delete("bare-budget", &DeleteParams::default())
        .await
        .unwrap();
    // Nothing in kube-system is sent to a webhook, so the cluster's own pods always start.
    let system: Api<Pod> = Api::namespaced(c.client(), "kube-system");
    replica.metadata.namespace = Some("kube-system".into());
    system
        .create(&PostParams::default(), &replica)
        .await
        .expect("a kube-system pod is not sent to the webhooks");
    system
        .delete("budget", &DeleteParams::default())
        .await
        .unwrap();
}

both_tiers!(
    invalid_objects_refused,
    1,
    super::invalid_objects_are_refused_with_volcanos_messages
);

/// Runs `f` and returns how long it took with its result.
async fn timed<T>(f: impl Future<Output = T>) -> (Duration, T) {
    let start = Instant::now();
    let out = f.await;
    (start.elapsed(), out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_is_down_blocks_no_pod_and_no_job() {
    let Some(mut c) = Cluster::real(1, "a_webhook_that_is_down_blocks_no_pod_and_no_job").await
    else {
        return;
    };
    ensure_queue(&c, "default").await;
    c.stop_webhook().await;
    let pods: Api<Pod> = Api::namespaced(c.client(), "default");
    let (took, created) =
        timed(pods.create(&PostParams::default(), &pod("unchecked", json!({})))).await;
    created.expect("a pod is created while the webhook is down");
    assert!(took < Duration::from_secs(3), "pod create took {took:?}");
    let jobs: Api<Job> = Api::namespaced(c.client(), "default");
    let (took, created) = timed(jobs.create(
        &PostParams::default(),
        &volcano_job("unchecked", "default", json!({})),
    ))
    .await;
    created.expect("a Job is created while the webhook is down");
    assert!(took < Duration::from_secs(3), "Job create took {took:?}");
    // Queue trees are never written unchecked: the write fails, at once.
    let (took, result) = timed(create_queue(&c, "unchecked", json!({"weight": 1}))).await;
    let why = refused(result, "a queue while the webhook is down");
    assert!(why.contains("failed calling webhook"), "{why}");
    assert!(took < Duration::from_secs(6), "queue create took {took:?}");
    // Back up, it answers again.
    c.start_webhook(None).await;
    create_queue(&c, "checked", json!({"weight": 1}))
        .await
        .unwrap();
}

/// A CA and a serving certificate for 127.0.0.1, written as PEM files.
fn write_cert_files(dir: &std::path::Path) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "test-ca");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    // The key first: the server reloads once all three files have changed size or time.
    std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
    std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("ca.crt"), ca_cert.pem()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_certificate_is_trusted_without_restarting_the_api_server() {
    let Some(mut c) = Cluster::real(
        1,
        "a_new_certificate_is_trusted_without_restarting_the_api_server",
    )
    .await
    else {
        return;
    };
    // A restarted webhook server generates a new CA and writes it into the configurations.
    c.stop_webhook().await;
    c.start_webhook(None).await;

    // Certificates from files (a cert-manager Secret) are re-read when they change.
    let dir = tempfile::tempdir().unwrap();
    write_cert_files(dir.path());
    c.stop_webhook().await;
    c.start_webhook(Some(CertSource::Files {
        cert: dir.path().join("tls.crt"),
        key: dir.path().join("tls.key"),
        ca: dir.path().join("ca.crt"),
    }))
    .await;
    let before = Api::<
        volcano_api::k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
    >::all(c.client())
    .get("volcano-admission-service-queues-validate")
    .await
    .unwrap();
    // Rotated: a new CA signs a new certificate.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    write_cert_files(dir.path());
    let configs = Api::<
        volcano_api::k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
    >::all(c.client());
    let bundle = |v: &volcano_api::k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration| {
        v.webhooks.as_ref().unwrap()[0].client_config.ca_bundle.clone()
    };
    let (changed, _) = common::eventually(15, async || {
        let now = configs
            .get("volcano-admission-service-queues-validate")
            .await
            .unwrap();
        (bundle(&now) != bundle(&before), ())
    })
    .await;
    assert!(changed, "the new CA never reached the configuration");
    // The same API server, never restarted, calls the webhook with the new CA.
    c.wait_webhook_answers().await;
    let why = refused(
        create_queue(&c, "q", json!({"weight": 1, "parent": "nowhere"})).await,
        "a queue whose parent does not exist, after rotation",
    );
    assert!(why.contains("failed to get parent queue nowhere"), "{why}");
}
