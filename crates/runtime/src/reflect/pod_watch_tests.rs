use std::sync::{Arc, Mutex};

use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta, Unknown};

use crate::protobuf::MAGIC;

use super::*;

fn pod(name: &str, version: &str) -> pb::Pod {
    pb::Pod {
        metadata: Some(pbmeta::ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some("ns".to_string()),
            resource_version: Some(version.to_string()),
            ..Default::default()
        }),
        spec: Some(pb::PodSpec {
            scheduler_name: Some("volcano".to_string()),
            node_name: Some(String::new()),
            ..Default::default()
        }),
        status: None,
    }
}

/// An object in the envelope the API server puts it in.
fn envelope(kind: &str, object: &impl Message) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some("v1".to_string()),
            kind: Some(kind.to_string()),
        }),
        raw: Some(object.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = MAGIC.to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

/// One watch event as a length-delimited frame.
fn frame(kind: &str, object: Vec<u8>) -> Vec<u8> {
    let ev = pbmeta::WatchEvent {
        r#type: Some(kind.to_string()),
        object: Some(RawExtension { raw: Some(object) }),
    }
    .encode_to_vec();
    let mut out = u32::try_from(ev.len()).unwrap().to_be_bytes().to_vec();
    out.extend(ev);
    out
}

fn gone() -> Vec<u8> {
    let status = pbmeta::Status {
        code: Some(410),
        message: Some("too old resource version: 1 (20)".to_string()),
        ..Default::default()
    };
    frame("ERROR", envelope("Status", &status))
}

#[test]
fn frames_are_cut_where_their_lengths_say_however_the_chunks_fall() {
    let stream = [
        frame("ADDED", envelope("Pod", &pod("a", "11"))),
        frame("BOOKMARK", envelope("Pod", &pod("", "12"))),
    ]
    .concat();
    for cut in 0..=stream.len() {
        let mut frames = Frames::default();
        let mut read = Vec::new();
        for chunk in [&stream[..cut], &stream[cut..]] {
            frames.extend(chunk);
            while let Some(f) = frames.next_frame().unwrap() {
                read.push(event(f).unwrap());
            }
        }
        assert!(
            matches!(&read[..], [Event::Pod(Change::Apply, p), Event::Bookmark(v)]
                if p.metadata.as_ref().and_then(|m| m.name.as_deref()) == Some("a") && v == "12"),
            "cut at {cut}: {read:?}"
        );
    }
}

#[test]
fn a_length_no_event_has_ends_the_stream_instead_of_allocating_it() {
    let mut frames = Frames::default();
    frames.extend(&u32::MAX.to_be_bytes());
    assert!(frames.next_frame().is_err());
}

#[test]
fn a_deletion_and_an_expired_version_read_as_such_and_garbage_as_an_error() {
    let deleted = frame("DELETED", envelope("Pod", &pod("a", "13")));
    assert!(matches!(
        event(&deleted[4..]),
        Ok(Event::Pod(Change::Delete, _))
    ));
    let expired = gone();
    assert!(matches!(event(&expired[4..]), Ok(Event::Error(410, m)) if m.contains("too old")));
    // A JSON object where protobuf was asked for, an unknown type, and every cut of a real
    // event: errors, never a panic.
    let json = frame("ADDED", br#"{"kind":"Pod"}"#.to_vec());
    assert!(event(&json[4..]).is_err());
    let odd = frame("SOMETHING", envelope("Pod", &pod("a", "1")));
    assert!(event(&odd[4..]).is_err());
    for cut in 4..deleted.len() {
        let _ = event(&deleted[4..cut]);
    }
}

#[test]
fn a_pod_reads_as_its_json_does_empty_fields_unset() {
    let p = read(&envelope("Pod", &pod("a", "11")), PodView::Scheduler).unwrap();
    assert_eq!(p.metadata.name.as_deref(), Some("a"));
    assert_eq!(p.metadata.resource_version.as_deref(), Some("11"));
    let spec = p.spec.unwrap();
    assert_eq!(spec.scheduler_name.as_deref(), Some("volcano"));
    // Go writes an empty nodeName in protobuf; JSON leaves it out, and so does this reading.
    assert_eq!(spec.node_name, None);
    assert!(read(b"{}", PodView::Scheduler).is_err());
}

/// An API server answering pod lists in JSON and pod watches from `watches`, one answer per
/// watch request, in order, in protobuf (or in JSON, for `json_watch`); what it was asked is
/// recorded.
fn server(watches: Vec<Vec<u8>>, json_watch: bool) -> (Client, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let watches = Arc::new(Mutex::new(watches.into_iter()));
    let seen = asked.clone();
    let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let uri = req.uri().to_string();
        seen.lock().unwrap().push(uri.clone());
        let watches = watches.clone();
        async move {
            let (body, content_type) = if !uri.contains("watch=true") {
                let list = serde_json::json!({
                    "apiVersion": "v1", "kind": "PodList",
                    "metadata": {"resourceVersion": "10"},
                    "items": [{"metadata": {"name": "listed", "namespace": "ns",
                        "resourceVersion": "9"}, "spec": {"containers": []}}],
                });
                (serde_json::to_vec(&list).unwrap(), "application/json")
            } else if json_watch {
                let line = serde_json::json!({"type": "ADDED", "object": {
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "from-json", "namespace": "ns", "resourceVersion": "11"},
                    "spec": {"containers": []}}});
                (format!("{line}\n").into_bytes(), "application/json")
            } else {
                let next = watches.lock().unwrap().next();
                (
                    next.unwrap_or_default(),
                    "application/vnd.kubernetes.protobuf;stream=watch",
                )
            };
            let mut answer = http::Response::new(kube::client::Body::from(body));
            answer
                .headers_mut()
                .insert(header::CONTENT_TYPE, content_type.parse().unwrap());
            Ok::<_, std::convert::Infallible>(answer)
        }
    });
    (Client::new(service, "default"), asked)
}

/// The name each pod update is about, with its event's kind.
fn describe(update: Update) -> String {
    let Update::Pod(ev) = update else {
        return "not a pod".to_string();
    };
    let name = |p: &Pod| p.metadata.name.clone().unwrap_or_default();
    match ev {
        watcher::Event::Init => "init".to_string(),
        watcher::Event::InitApply(p) => format!("listed {}", name(&p)),
        watcher::Event::InitDone => "listed".to_string(),
        watcher::Event::Apply(p) => format!("apply {}", name(&p)),
        watcher::Event::Delete(p) => format!("delete {}", name(&p)),
    }
}

async fn updates(client: Client, n: usize) -> Vec<String> {
    let (tx, mut rx) = mpsc::channel(16);
    let task = tokio::spawn(run(client, PodScope::cluster(), tx, PodView::Scheduler));
    let mut out = Vec::new();
    while out.len() < n {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(u)) => out.push(describe(u)),
            _ => break,
        }
    }
    task.abort();
    out
}

#[tokio::test]
async fn the_watch_resumes_from_the_last_bookmark_and_lists_again_once_its_version_is_gone() {
    let first = [
        frame("ADDED", envelope("Pod", &pod("added", "11"))),
        frame("DELETED", envelope("Pod", &pod("listed", "12"))),
        frame("BOOKMARK", envelope("Pod", &pod("", "15"))),
    ]
    .concat();
    let (client, asked) = server(vec![first, gone()], false);
    let got = updates(client, 8).await;
    assert_eq!(
        got,
        [
            "init",
            "listed listed",
            "listed",
            "apply added",
            "delete listed",
            // The version was gone: the pods are listed again.
            "init",
            "listed listed",
            "listed",
        ],
    );
    let asked = asked.lock().unwrap().clone();
    let watches: Vec<&String> = asked.iter().filter(|u| u.contains("watch=true")).collect();
    assert!(watches[0].contains("resourceVersion=10"), "{asked:?}");
    // The first watch ended after its bookmark: the next one starts from it.
    assert!(watches[1].contains("resourceVersion=15"), "{asked:?}");
}

#[tokio::test]
async fn a_server_that_watches_only_in_json_is_watched_in_json() {
    let (client, _) = server(vec![], true);
    let got = updates(client, 7).await;
    // The protobuf watch found JSON; kube-rs' JSON watcher lists and watches from there.
    assert_eq!(
        got,
        [
            "init",
            "listed listed",
            "listed",
            "init",
            "listed listed",
            "listed",
            "apply from-json"
        ],
    );
}

/// A pod with every field the scheduler or the controllers read set, as kube-apiserver v1.36
/// answered a GET of it in JSON and in protobuf: the pod of the real-cluster tier's
/// `real_pod_protobuf`, written by it with `VOLCANO_WRITE_FIXTURES`.
#[test]
fn a_pod_from_kube_apiserver_reads_the_same_from_protobuf_as_from_json() {
    let json = include_bytes!("../../tests/fixtures/rich-pod.json");
    let protobuf = include_bytes!("../../tests/fixtures/rich-pod.pb");
    let from_json = PodView::Scheduler.keep(super::super::read::<Pod>(json).unwrap());
    let from_protobuf = read(protobuf, PodView::Scheduler).unwrap();
    assert_eq!(from_protobuf, from_json);
    let for_controllers = PodView::Controllers.keep(super::super::read::<Pod>(json).unwrap());
    assert_eq!(
        read(protobuf, PodView::Controllers).unwrap(),
        for_controllers
    );
    let statuses = for_controllers.status.as_ref().unwrap();
    assert_eq!(statuses.container_statuses.as_ref().map(Vec::len), Some(2));
    assert_eq!(
        statuses.init_container_statuses.as_ref().map(Vec::len),
        Some(1)
    );
    let spec = from_protobuf.spec.as_ref().unwrap();
    assert!(
        spec.affinity
            .as_ref()
            .is_some_and(|a| a.pod_affinity.is_some())
    );
    assert_eq!(spec.volumes.as_ref().map(Vec::len), Some(3));
    assert!(from_protobuf.metadata.deletion_timestamp.is_some());
}

#[tokio::test]
async fn a_watch_cut_short_before_any_event_is_renewed_after_a_delay_not_in_a_loop() {
    // Every watch answers 200 and ends at once.
    let (client, asked) = server(vec![], false);
    let got = updates(client, 3).await;
    assert_eq!(got, ["init", "listed listed", "listed"]);
    tokio::time::sleep(Duration::from_millis(700)).await;
    let watches = asked
        .lock()
        .unwrap()
        .iter()
        .filter(|u| u.contains("watch=true"))
        .count();
    // 100 ms, then 200, then 400 (each ±25%): a few in 0.7 s, where a loop makes thousands.
    assert!((1..=5).contains(&watches), "{watches} watches");
}

#[test]
fn pointer_fields_keep_false_and_empty_as_json_does() {
    let mut p = pod("a", "1");
    if let Some(spec) = p.spec.as_mut() {
        spec.volumes = vec![pb::Volume {
            name: Some("v".to_string()),
            volume_source: Some(pb::VolumeSource {
                csi: Some(pb::CSIVolumeSource {
                    driver: Some("d".to_string()),
                    read_only: Some(false),
                    fs_type: Some(String::new()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
        }];
    }
    let read = read(&envelope("Pod", &p), PodView::Scheduler).unwrap();
    let volumes = read.spec.and_then(|s| s.volumes).unwrap_or_default();
    let csi = volumes[0].csi.as_ref().unwrap();
    assert_eq!(csi.read_only, Some(false));
    assert_eq!(csi.fs_type.as_deref(), Some(""));
}

#[tokio::test]
async fn a_scoped_watch_lists_and_watches_one_namespace_by_its_selector() {
    let first = frame("ADDED", envelope("Pod", &pod("added", "11")));
    let (client, asked) = server(vec![first], false);
    let scope = PodScope {
        namespace: Some("load".to_string()),
        labels: Some("volcano.sh/load-run=abc".to_string()),
    };
    let (tx, mut rx) = mpsc::channel(16);
    let task = tokio::spawn(run(client, scope, tx, PodView::Scheduler));
    let mut got = Vec::new();
    while got.len() < 4 {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(u)) => got.push(describe(u)),
            _ => break,
        }
    }
    task.abort();
    assert_eq!(got, ["init", "listed listed", "listed", "apply added"]);
    let asked = asked.lock().unwrap().clone();
    let selector = "labelSelector=volcano.sh%2Fload-run%3Dabc";
    assert!(
        asked[0].starts_with("/api/v1/namespaces/load/pods?") && asked[0].contains(selector),
        "{asked:?}"
    );
    let watch = &asked[1];
    assert!(
        watch.starts_with("/api/v1/namespaces/load/pods?")
            && watch.contains("watch=true")
            && watch.contains("resourceVersion=10")
            && watch.contains(selector),
        "{asked:?}"
    );
}
