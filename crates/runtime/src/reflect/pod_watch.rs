//! The pod watch of the scheduler and of the controller-manager, in Kubernetes' protobuf
//! encoding as kube-scheduler's and kube-controller-manager's are.
//!
//! Every pod event goes to every pod watcher, so the API server writes a pod per event per
//! watcher: a JSON pod is larger than the same pod in protobuf, and writing it cost the API
//! server measurably more CPU per scheduled pod (the README's load section). kube-rs watches
//! in JSON only, so this watcher does its own watch requests: the list is JSON (once, and
//! read object by object as every other kind's), the watch that follows is protobuf. A server
//! that answers the watch in JSON (`volcano up`'s) gets the JSON watcher from then on.

use std::time::Duration;

use futures::StreamExt;
use http::header;
use http_body_util::BodyExt;
use k8s_pb::api::core::v1 as pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pbmeta;
use kube::api::ListParams;
use kube::runtime::watcher;
use kube::{Api, Client};
use prost::Message;
use tokio::sync::mpsc;
use volcano_api::k8s_openapi::api::core::v1::Pod;

use super::pod_protobuf::read_pod;
use super::{Lenient, PodView, WatchBackoff, kept, typed};
use crate::mirror::Update;
use crate::protobuf::{self, read::field};

/// What the watch asks for: protobuf watch frames, or JSON from a server without them.
const ACCEPT: &str = "application/vnd.kubernetes.protobuf;stream=watch, application/json";

/// How long the API server keeps one watch open, as kube-rs asks by default.
const WATCH_SECONDS: u64 = 290;

/// Longer than any gap the API server leaves between two writes on a live watch (bookmarks
/// come about once a minute): past it the connection is taken for dead and the watch renewed.
const IDLE: Duration = Duration::from_secs(WATCH_SECONDS + 10);

/// Bounds what a corrupt length can make this buffer: far beyond any pod (the API server
/// takes no request body over 3 MiB), so a longer frame means the stream is not pod events.
const MAX_FRAME: usize = 64 << 20;

/// How long the API server is given to answer a watch request (its headers) or to send an
/// error's body: a server that never answers would otherwise hold the pod watch forever.
const ANSWER: Duration = Duration::from_secs(30);

/// Pods listed per page, as kube-rs' watcher lists them.
const PAGE: u32 = 500;

/// Why a pod could not be read from protobuf.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The bytes are not an object in Kubernetes' protobuf envelope (nor an event holding one).
    #[error("the object has no protobuf envelope")]
    NoEnvelope,
    /// A message did not decode.
    #[error("{what}: {source}")]
    Decode {
        /// Which message.
        what: &'static str,
        /// What protobuf said.
        source: prost::DecodeError,
    },
    /// A frame's length is more than any event takes.
    #[error("a watch frame of {0} bytes: not a pod event")]
    FrameTooLong(usize),
    /// An event of a type the watch protocol does not have.
    #[error("a watch event of type {0:?}")]
    UnknownType(String),
}

/// Why one watch request ended.
#[derive(Debug, thiserror::Error)]
enum WatchEnd {
    /// The server closed it after some events, as it does after [`WATCH_SECONDS`]: resume
    /// from the last version.
    #[error("the watch ended")]
    Closed,
    /// The version watched from is compacted away (410 Gone): list again.
    #[error("resource version too old: {0}")]
    Gone(String),
    /// The server answers watches in JSON.
    #[error("the API server does not watch in protobuf")]
    NotProtobuf,
    /// The loop that owns the mirror is gone: stop.
    #[error("the receiver is gone")]
    ReceiverGone,
    /// The request failed, the stream broke or ended without an event: resume from the last
    /// version after a delay.
    #[error("{0}")]
    Failed(String),
}

/// Which pods a watch covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodScope {
    /// Only this namespace's; `None`: the whole cluster's.
    pub namespace: Option<String>,
    /// Only those this label selector selects.
    pub labels: Option<String>,
}

impl PodScope {
    /// Every pod of the cluster.
    pub fn cluster() -> Self {
        PodScope::default()
    }

    fn api(&self, client: Client) -> Api<Lenient<Pod>> {
        match &self.namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        }
    }

    /// The list parameters kube-rs' watcher lists with (any version, [`PAGE`] pods a page).
    fn list_params(&self) -> ListParams {
        let params = ListParams::default().match_any().limit(PAGE);
        match &self.labels {
            Some(l) => params.labels(l),
            None => params,
        }
    }

    /// What kube-rs' JSON watcher is given for the same pods.
    fn json_config(&self) -> watcher::Config {
        let config = watcher::Config::default().any_semantic();
        match &self.labels {
            Some(l) => config.labels(l),
            None => config,
        }
    }

    /// The path and query of a watch from `version`.
    fn watch_path(&self, version: &str) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query
            .append_pair("watch", "true")
            .append_pair("allowWatchBookmarks", "true")
            .append_pair("timeoutSeconds", &WATCH_SECONDS.to_string())
            .append_pair("resourceVersion", version);
        if let Some(l) = &self.labels {
            query.append_pair("labelSelector", l);
        }
        let query = query.finish();
        match &self.namespace {
            Some(ns) => format!("/api/v1/namespaces/{ns}/pods?{query}"),
            None => format!("/api/v1/pods?{query}"),
        }
    }
}

/// Watches the pods of `scope` for a mirror that keeps `pods` of each, in protobuf while the
/// server speaks it.
pub(super) async fn run(client: Client, scope: PodScope, tx: mpsc::Sender<Update>, pods: PodView) {
    let api = scope.api(client.clone());
    if pods == PodView::Full {
        // Protobuf is read into the fields a view names; only JSON gives the whole pod.
        return super::json_watch_of(api, scope.json_config(), tx, Update::Pod).await;
    }
    let mut backoff = WatchBackoff::default();
    let mut said = false;
    loop {
        let mut version = match list(&api, &scope, &tx, pods).await {
            Ok(Listed::Version(v)) => v,
            Ok(Listed::ReceiverGone) => return,
            Ok(Listed::NoVersion) => {
                tracing::warn!(
                    kind = "Pod",
                    "the list gave no resourceVersion; listing again"
                );
                tokio::time::sleep(backoff.next().unwrap_or(WatchBackoff::CAP)).await;
                continue;
            }
            Err(e) => {
                tracing::warn!(kind = "Pod", error = %e, "watch failed; retrying");
                tokio::time::sleep(backoff.next().unwrap_or(WatchBackoff::CAP)).await;
                continue;
            }
        };
        loop {
            match watch(&client, &scope, &mut version, &tx, pods, &mut said).await {
                // Events came, so the watch works: the next failure starts the delays over.
                WatchEnd::Closed => backoff = WatchBackoff::default(),
                WatchEnd::Gone(why) => {
                    // After a delay, as kube-rs relists: a list served by one API server and a
                    // watch refused by another would otherwise list the cluster in a loop.
                    tracing::info!(kind = "Pod", %why, "watch too old; listing again");
                    tokio::time::sleep(backoff.next().unwrap_or(WatchBackoff::CAP)).await;
                    break;
                }
                WatchEnd::NotProtobuf => {
                    tracing::info!("the API server does not watch in protobuf: watching JSON");
                    super::json_watch_of(api, scope.json_config(), tx, move |ev| {
                        Update::Pod(kept(ev, |p| pods.keep(p)))
                    })
                    .await;
                    return;
                }
                WatchEnd::ReceiverGone => return,
                WatchEnd::Failed(e) => {
                    tracing::warn!(kind = "Pod", error = %e, "watch failed; retrying");
                    tokio::time::sleep(backoff.next().unwrap_or(WatchBackoff::CAP)).await;
                }
            }
        }
    }
}

/// How a list ended.
enum Listed {
    /// Every pod was sent; the watch starts from this version.
    Version(String),
    /// The list named no version to watch from.
    NoVersion,
    /// The loop that owns the mirror is gone.
    ReceiverGone,
}

/// Lists every pod of the scope into the mirror (`Init`, one `InitApply` each, `InitDone`).
async fn list(
    api: &Api<Lenient<Pod>>,
    scope: &PodScope,
    tx: &mpsc::Sender<Update>,
    pods: PodView,
) -> Result<Listed, kube::Error> {
    let send = |ev| tx.send(Update::Pod(kept(ev, |p| pods.keep(p))));
    if send(watcher::Event::Init).await.is_err() {
        return Ok(Listed::ReceiverGone);
    }
    let mut params = scope.list_params();
    loop {
        let page = api.list(&params).await?;
        for item in page.items {
            let Some(ev) = typed("Pod", watcher::Event::InitApply(item)) else {
                continue;
            };
            if send(ev).await.is_err() {
                return Ok(Listed::ReceiverGone);
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params.continue_token = Some(token),
            None => {
                let Some(version) = page.metadata.resource_version.filter(|v| !v.is_empty()) else {
                    return Ok(Listed::NoVersion);
                };
                if send(watcher::Event::InitDone).await.is_err() {
                    return Ok(Listed::ReceiverGone);
                }
                return Ok(Listed::Version(version));
            }
        }
    }
}

/// One watch request from `version`, its events sent on as they come; `version` follows them.
async fn watch(
    client: &Client,
    scope: &PodScope,
    version: &mut String,
    tx: &mpsc::Sender<Update>,
    pods: PodView,
    said: &mut bool,
) -> WatchEnd {
    let request = match http::Request::get(scope.watch_path(version))
        .header(header::ACCEPT, ACCEPT)
        // Kubernetes from 1.37 compresses watch streams event by event; kube-rs opts out too.
        .header(header::ACCEPT_ENCODING, "identity")
        .body(kube::client::Body::empty())
    {
        Ok(r) => r,
        Err(e) => return WatchEnd::Failed(e.to_string()),
    };
    let response = match tokio::time::timeout(ANSWER, client.send(request)).await {
        Err(_) => return WatchEnd::Failed("the API server did not answer the watch".to_string()),
        Ok(Err(e)) => return WatchEnd::Failed(e.to_string()),
        Ok(Ok(r)) => r,
    };
    let code = response.status();
    let protobuf = protobuf::is_protobuf(response.headers());
    if !code.is_success() {
        let body = tokio::time::timeout(ANSWER, response.into_body().collect_bytes())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        // A Status is short; anything longer is cut to what a log line holds.
        let text = String::from_utf8_lossy(&body[..body.len().min(1024)]);
        return if code == http::StatusCode::GONE {
            WatchEnd::Gone(text.into_owned())
        } else {
            WatchEnd::Failed(format!("{code}: {}", text.trim()))
        };
    }
    if !protobuf {
        return WatchEnd::NotProtobuf;
    }
    if !std::mem::replace(said, true) {
        tracing::info!("watching pods in protobuf");
    }
    let mut body = response.into_body().into_data_stream();
    let mut frames = Frames::default();
    let mut events = 0usize;
    loop {
        let chunk = match tokio::time::timeout(IDLE, body.next()).await {
            Err(_) => return WatchEnd::Failed("no word from the API server".to_string()),
            // A watch that ends before its first event (bookmarks come within a minute) is a
            // server or proxy cutting it short: renewed at once, it would be renewed in a loop.
            Ok(None) if events == 0 => {
                return WatchEnd::Failed("the watch ended before any event".to_string());
            }
            Ok(None) => return WatchEnd::Closed,
            Ok(Some(Err(e))) => return WatchEnd::Failed(e.to_string()),
            Ok(Some(Ok(chunk))) => chunk,
        };
        frames.extend(&chunk);
        loop {
            let frame = match frames.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => return WatchEnd::Failed(e.to_string()),
            };
            events += 1;
            match event(frame) {
                Ok(Event::Pod(kind, pod)) => {
                    let pod = read_pod(*pod, pods);
                    if let Some(v) = pod.metadata.resource_version.clone() {
                        *version = v;
                    }
                    let ev = match kind {
                        Change::Apply => watcher::Event::Apply(pod),
                        Change::Delete => watcher::Event::Delete(pod),
                    };
                    if tx
                        .send(Update::Pod(kept(ev, |p| pods.keep(p))))
                        .await
                        .is_err()
                    {
                        return WatchEnd::ReceiverGone;
                    }
                }
                Ok(Event::Bookmark(v)) if !v.is_empty() => *version = v,
                Ok(Event::Bookmark(_)) => {}
                Ok(Event::Error(410, why)) => return WatchEnd::Gone(why),
                Ok(Event::Error(code, why)) => return WatchEnd::Failed(format!("{code}: {why}")),
                // As an object JSON cannot read, a pod that protobuf cannot is left out.
                Err(e) => {
                    tracing::warn!(kind = "Pod", error = %e, "watch event left out: it cannot be read")
                }
            }
        }
    }
}

/// The length-delimited frames of a protobuf watch (a 4-byte big-endian length, then that
/// many bytes), cut from the chunks as they arrive.
#[derive(Debug, Default)]
struct Frames {
    buf: Vec<u8>,
    start: usize,
}

impl Frames {
    fn extend(&mut self, chunk: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next whole frame, borrowed, `None` until one has arrived; an error for a length no
    /// event has.
    fn next_frame(&mut self) -> Result<Option<&[u8]>, ReadError> {
        let rest = &self.buf[self.start..];
        let Some((len, body)) = rest.split_first_chunk::<4>() else {
            return Ok(None);
        };
        let len = u32::from_be_bytes(*len) as usize;
        if len > MAX_FRAME {
            return Err(ReadError::FrameTooLong(len));
        }
        let Some(frame) = body.get(..len) else {
            return Ok(None);
        };
        self.start += 4 + len;
        Ok(Some(frame))
    }
}

/// What a pod changed into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Apply,
    Delete,
}

/// One protobuf watch event, read.
#[derive(Debug)]
enum Event {
    /// A pod added, changed or deleted.
    Pod(Change, Box<pb::Pod>),
    /// Nothing changed up to this resourceVersion.
    Bookmark(String),
    /// The server ended the watch with this code and message.
    Error(i32, String),
}

/// A `metav1.WatchEvent` (type = 1, object = 2), its object a `runtime.RawExtension` (raw =
/// 1) holding the object in its envelope. Walked in place: only the object is decoded.
fn event(frame: &[u8]) -> Result<Event, ReadError> {
    let decode = |what| move |source| ReadError::Decode { what, source };
    let kind = field(frame, 1).unwrap_or_default();
    let raw = field(frame, 2)
        .and_then(|extension| field(extension, 1))
        .unwrap_or_default();
    let object = protobuf::object(raw).ok_or(ReadError::NoEnvelope)?;
    let pod = || pb::Pod::decode(object).map(Box::new).map_err(decode("pod"));
    match kind {
        b"ADDED" | b"MODIFIED" => Ok(Event::Pod(Change::Apply, pod()?)),
        b"DELETED" => Ok(Event::Pod(Change::Delete, pod()?)),
        b"BOOKMARK" => Ok(Event::Bookmark(
            pod()?
                .metadata
                .and_then(|m| m.resource_version)
                .unwrap_or_default(),
        )),
        b"ERROR" => {
            let status = pbmeta::Status::decode(object).map_err(decode("status"))?;
            Ok(Event::Error(
                status.code.unwrap_or_default(),
                status.message.unwrap_or_default(),
            ))
        }
        _ => Err(ReadError::UnknownType(
            String::from_utf8_lossy(kind).into_owned(),
        )),
    }
}

/// A pod in its protobuf envelope (as a GET answers it in protobuf, or a watch event holds
/// it), read exactly as a watch keeping `view` of each pod reads it.
pub fn read(envelope: &[u8], view: PodView) -> Result<Pod, ReadError> {
    let object = protobuf::object(envelope).ok_or(ReadError::NoEnvelope)?;
    let pod = pb::Pod::decode(object).map_err(|source| ReadError::Decode {
        what: "pod",
        source,
    })?;
    Ok(view.keep(read_pod(pod, view)))
}

#[cfg(test)]
#[path = "pod_watch_tests.rs"]
mod tests;
