//! The writer: what it writes, and what it keeps assumed while writes are in flight.

use super::*;

fn queue(name: &str) -> QueueAllocated {
    QueueAllocated {
        name: name.to_string(),
        state: "Open".to_string(),
        allocated: Default::default(),
        changed: true,
    }
}

#[test]
fn a_queue_that_is_gone_is_not_written_and_a_404_is_not_retried() {
    let d = Decisions {
        queues: vec![queue("kept"), queue("deleted"), queue("refused")],
        ..Default::default()
    };
    let mut versions: BTreeMap<String, Option<String>> = [
        ("kept".to_string(), Some("1".to_string())),
        ("refused".to_string(), Some("5".to_string())),
    ]
    .into();
    let names = |v: Vec<&QueueAllocated>| v.iter().map(|q| q.name.clone()).collect::<Vec<_>>();
    let mut gone = BTreeMap::new();
    // The implicit queue the snapshot adds while the cluster has none is not written.
    assert_eq!(
        names(queues_to_write(&d, &versions, &mut gone)),
        ["kept", "refused"]
    );
    // `refused` answered 404 (deleted, the watch has not said so yet): not written again.
    gone.insert("refused".to_string(), Some("5".to_string()));
    assert_eq!(names(queues_to_write(&d, &versions, &mut gone)), ["kept"]);
    assert_eq!(names(queues_to_write(&d, &versions, &mut gone)), ["kept"]);
    // Recreated under the same name: written again.
    versions.insert("refused".to_string(), Some("9".to_string()));
    assert_eq!(
        names(queues_to_write(&d, &versions, &mut gone)),
        ["kept", "refused"]
    );
    assert!(gone.is_empty());
}

fn pod(uid: &str, version: &str) -> volcano_api::k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "reborn", "namespace": "default", "uid": uid,
            "resourceVersion": version},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "main"}]},
    }))
    .unwrap()
}

fn node_of(mirror: &ClusterMirror, key: &NamespacedName) -> Option<String> {
    mirror.pod(key)?.spec.as_ref()?.node_name.clone()
}

#[tokio::test]
async fn a_bind_for_a_pod_since_made_again_neither_stays_assumed_nor_undoes_the_new_pods() {
    use kube::runtime::watcher::Event as Watched;

    use crate::mirror::Update;

    // An API server that never answers: the bind stays in flight.
    let service = tower::service_fn(|_: http::Request<kube::client::Body>| {
        futures::future::pending::<
            Result<http::Response<kube::client::Body>, std::convert::Infallible>,
        >()
    });
    let client = Client::new(service, "default");
    let events = EventSink::start(client.clone(), "volcano", "volcano-0");
    let metrics = SchedulerMetrics::register(&mut prometheus_client::registry::Registry::default());
    let (mut writer, _outcomes) = Writer::start(client, 4, events, metrics);
    let mut mirror = ClusterMirror::journaling();
    let key = NamespacedName::new("default", "reborn");
    mirror.apply(Update::Pod(Watched::Apply(pod("uid-1", "1"))));
    let d = Decisions {
        binds: vec![(key.clone(), "node-0".to_string())],
        ..Default::default()
    };
    writer.dispatch(&d, &mut mirror);
    assert_eq!(node_of(&mirror, &key).as_deref(), Some("node-0"));

    // A newer version of the same pod (annotated by its controller) keeps the bind assumed.
    mirror.apply(Update::Pod(Watched::Apply(pod("uid-1", "2"))));
    writer.reassert(&mut mirror);
    assert_eq!(node_of(&mirror, &key).as_deref(), Some("node-0"));

    // Deleted and made again under its name: another pod, which the bind is not for.
    mirror.apply(Update::Pod(Watched::Delete(pod("uid-1", "3"))));
    mirror.apply(Update::Pod(Watched::Apply(pod("uid-2", "4"))));
    writer.reassert(&mut mirror);
    assert_eq!(
        node_of(&mirror, &key),
        None,
        "the new pod waits to be decided on"
    );
    assert_eq!(writer.in_flight(), 0, "the bind is forgotten");

    // The new pod is bound in its turn; then the first pod's bind comes back refused (409).
    let d = Decisions {
        binds: vec![(key.clone(), "node-1".to_string())],
        ..Default::default()
    };
    writer.dispatch(&d, &mut mirror);
    let refused = |uid: &str| Outcome::Bound {
        key: key.clone(),
        uid: Some(uid.to_string()),
        node: "node-0".to_string(),
        error: Some("409 Conflict".to_string()),
        took: Duration::ZERO,
    };
    writer.settle(refused("uid-1"), &mut mirror);
    assert_eq!(
        node_of(&mirror, &key).as_deref(),
        Some("node-1"),
        "the first pod's refusal does not undo the new pod's bind"
    );
    assert_eq!(writer.in_flight(), 1);
    writer.settle(refused("uid-2"), &mut mirror);
    assert_eq!(node_of(&mirror, &key), None, "its own refusal does");
}
