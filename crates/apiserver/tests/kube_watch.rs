//! Watches through kube-rs: the runtime watcher, selectors, bookmarks, expiry and recovery, and
//! the simulated kubelets seen over HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod common;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::wait::await_condition;
use kube::runtime::watcher::{self, Event, watcher};
use serde_json::json;
use volcano_apiserver::ServerOptions;
use volcano_apiserver::kubelet::{KubeletOptions, Kubelets, NodeSpec};

/// The next event of a runtime watcher, as a short string.
async fn next_event<S>(stream: &mut S) -> String
where
    S: futures::Stream<Item = Result<Event<Pod>, watcher::Error>> + Unpin,
{
    match common::within(10, stream.next()).await {
        Some(Ok(Event::Init)) => "Init".into(),
        Some(Ok(Event::InitDone)) => "InitDone".into(),
        Some(Ok(Event::InitApply(p))) => format!("InitApply({})", p.name_any()),
        Some(Ok(Event::Apply(p))) => {
            let tier = p.labels().get("tier").cloned().unwrap_or_default();
            format!("Apply({}{tier})", p.name_any())
        }
        Some(Ok(Event::Delete(p))) => format!("Delete({})", p.name_any()),
        Some(Err(e)) => format!("Error({e})"),
        None => "End".into(),
    }
}

#[tokio::test]
async fn runtime_watcher_sees_every_change() {
    let t = common::start().await;
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "default");
    pods.create(&PostParams::default(), &common::pod("before", &[]))
        .await
        .unwrap();
    let mut stream = watcher(pods.clone(), watcher::Config::default()).boxed();
    assert_eq!(next_event(&mut stream).await, "Init");
    assert_eq!(next_event(&mut stream).await, "InitApply(before)");
    assert_eq!(next_event(&mut stream).await, "InitDone");
    pods.create(&PostParams::default(), &common::pod("a", &[]))
        .await
        .unwrap();
    assert_eq!(next_event(&mut stream).await, "Apply(a)");
    let patch = json!({"metadata": {"labels": {"tier": "-web"}}});
    pods.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(next_event(&mut stream).await, "Apply(a-web)");
    pods.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(next_event(&mut stream).await, "Delete(a)");
    t.server.shutdown().await;
}

#[tokio::test]
async fn streaming_lists_end_with_a_marked_bookmark() {
    let t = common::start().await;
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "default");
    pods.create(&PostParams::default(), &common::pod("x", &[]))
        .await
        .unwrap();
    let mut stream = watcher(pods.clone(), watcher::Config::default().streaming_lists()).boxed();
    assert_eq!(next_event(&mut stream).await, "Init");
    assert_eq!(next_event(&mut stream).await, "InitApply(x)");
    assert_eq!(next_event(&mut stream).await, "InitDone");
    t.server.shutdown().await;
}

#[tokio::test]
async fn selected_watch_sees_objects_leave_and_bookmarks() {
    let t = common::start_with(ServerOptions {
        bookmark_interval: Duration::from_millis(100),
        ..ServerOptions::default()
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "default");
    let rv = pods
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let wp = WatchParams::default().labels("tier=web").timeout(10);
    let mut events = pods.watch(&wp, &rv).await.unwrap().boxed();
    pods.create(&PostParams::default(), &common::pod("a", &[]))
        .await
        .unwrap();
    let label = json!({"metadata": {"labels": {"tier": "web"}}});
    pods.patch("a", &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    let unlabel = json!({"metadata": {"labels": {"tier": null}}});
    pods.patch("a", &PatchParams::default(), &Patch::Merge(&unlabel))
        .await
        .unwrap();
    // Bookmarks may come at any idle moment; after the last change, one must come.
    let (mut seen, mut bookmark_rv) = (Vec::new(), 0u64);
    while seen.len() < 2 || bookmark_rv == 0 {
        match common::within(10, events.try_next()).await.unwrap() {
            Some(WatchEvent::Added(p)) => seen.push(format!("ADDED {}", p.name_any())),
            Some(WatchEvent::Deleted(p)) => seen.push(format!("DELETED {}", p.name_any())),
            Some(WatchEvent::Bookmark(b)) if seen.len() == 2 => {
                bookmark_rv = b.metadata.resource_version.parse().unwrap();
            }
            Some(WatchEvent::Bookmark(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, ["ADDED a", "DELETED a"]);
    let current: u64 = pods
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(bookmark_rv, current);
    t.server.shutdown().await;
}

#[tokio::test]
async fn an_expired_watch_gets_gone_and_the_watcher_relists() {
    let t = common::start_with(ServerOptions {
        watch_history: 5,
        ..ServerOptions::default()
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "default");
    let maps: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    pods.create(&PostParams::default(), &common::pod("old", &[]))
        .await
        .unwrap();
    let mut stream = watcher(
        pods.clone(),
        watcher::Config::default().timeout(1).disable_bookmarks(),
    )
    .boxed();
    for want in ["Init", "InitApply(old)", "InitDone"] {
        assert_eq!(next_event(&mut stream).await, want);
    }
    // Writes to another kind move the history past the pod watcher's resourceVersion.
    for i in 0..10 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("cm{i}")}})).unwrap();
        maps.create(&PostParams::default(), &cm).await.unwrap();
    }
    let mut raw = pods
        .watch(&WatchParams::default(), "1")
        .await
        .unwrap()
        .boxed();
    match common::within(5, raw.try_next()).await.unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410, got {other:?}"),
    }
    // The watcher's watch times out, it resumes from its old resourceVersion, gets 410, relists.
    let error = next_event(&mut stream).await;
    assert!(
        error.starts_with("Error(") && error.contains("xpired"),
        "{error}"
    );
    for want in ["Init", "InitApply(old)", "InitDone"] {
        assert_eq!(next_event(&mut stream).await, want);
    }
    pods.create(&PostParams::default(), &common::pod("new", &[]))
        .await
        .unwrap();
    assert_eq!(next_event(&mut stream).await, "Apply(new)");
    t.server.shutdown().await;
}

#[tokio::test]
async fn kubelet_runs_a_bound_sleep_pod_to_success() {
    let t = common::start().await;
    let opts = KubeletOptions {
        startup_delay: Duration::from_millis(100),
    };
    let _kubelets = Kubelets::start(t.server.store(), &[NodeSpec::new("n1")], opts)
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "default");
    let mut p = common::pod("sleeper", &["sleep", "1"]);
    p.spec.as_mut().unwrap().node_name = Some("n1".into());
    pods.create(&PostParams::default(), &p).await.unwrap();
    let phase = |want: &'static str| {
        move |p: Option<&Pod>| p.and_then(|p| p.status.as_ref()?.phase.as_deref()) == Some(want)
    };
    common::within(
        10,
        await_condition(pods.clone(), "sleeper", phase("Running")),
    )
    .await
    .unwrap();
    common::within(
        10,
        await_condition(pods.clone(), "sleeper", phase("Succeeded")),
    )
    .await
    .unwrap();
    let done = pods.get("sleeper").await.unwrap();
    let status = done.status.unwrap();
    assert!(status.pod_ip.is_some() && status.start_time.is_some());
    t.server.shutdown().await;
}
