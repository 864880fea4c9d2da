//! `?watch=true`: a chunked stream of newline-delimited watch events.
//!
//! Each line is `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}`. A watch from
//! a resourceVersion older than the retained history answers 200 with a single ERROR event
//! holding a 410 Expired Status, as the Kubernetes API server does; clients relist. Bookmarks
//! (with `allowWatchBookmarks=true`) are sent after each idle interval. The stream ends at
//! `timeoutSeconds`, when the server shuts down, or when the watcher falls too far behind.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::AppState;
use super::table::{self, Include};
use super::target::{Params, Target};
use crate::error::ApiError;
use crate::kinds::KindInfo;
use crate::shared::Watch;
use crate::store::Selectors;

/// A watch's length when the client does not say (Kubernetes picks 30 to 60 minutes).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

struct Stream {
    watch: Watch,
    kind: &'static KindInfo,
    deadline: Instant,
    bookmarks: Option<Duration>,
    /// `sendInitialEvents=true`: a bookmark marks the end of the initial objects.
    initial_end_pending: bool,
    table: Option<Include>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    state: AppState,
    /// An event to send before anything else (the Gone error), after which the stream ends.
    last_words: Option<Value>,
}

fn line(event_type: &str, object: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(&json!({"type": event_type, "object": object}))
        // Serializing a `Value` cannot fail.
        .unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

impl Stream {
    fn bookmark(&self, initial_end: bool) -> Bytes {
        let mut object = json!({
            "kind": self.kind.kind,
            "apiVersion": self.kind.api_version(),
            "metadata": {"resourceVersion": self.watch.resource_version().to_string()},
        });
        if initial_end {
            object["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        line("BOOKMARK", &object)
    }

    /// The next line to send, or None to end the stream.
    async fn next_line(&mut self) -> Option<Bytes> {
        if let Some(words) = self.last_words.take() {
            self.deadline = Instant::now();
            return Some(line("ERROR", &words));
        }
        if self.initial_end_pending && self.watch.backlog_len() == 0 {
            self.initial_end_pending = false;
            return Some(self.bookmark(true));
        }
        let idle = self.bookmarks.unwrap_or(Duration::from_secs(3600));
        tokio::select! {
            biased;
            _ = self.shutdown.changed() => None,
            _ = tokio::time::sleep_until(self.deadline) => None,
            event = self.watch.next() => {
                let event = event?;
                let object = match self.table {
                    Some(include) => table::table(
                        self.kind, [&*event.object], None, include, self.state.store.now(),
                    ),
                    None => (*event.object).clone(),
                };
                Some(line(event.change.as_str(), &object))
            }
            _ = tokio::time::sleep(idle), if self.bookmarks.is_some() => Some(self.bookmark(false)),
        }
    }
}

/// Serves a watch request.
pub fn serve(state: &AppState, target: &Target, params: &Params, wants_table: bool) -> Response {
    match start(state, target, params, wants_table) {
        Ok(stream) => {
            let body = futures::stream::unfold(stream, |mut s| async move {
                s.next_line().await.map(|l| (Ok::<_, Infallible>(l), s))
            });
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                Body::from_stream(body),
            )
                .into_response()
        }
        Err(e) => e.into_response(),
    }
}

fn start(
    state: &AppState,
    target: &Target,
    params: &Params,
    wants_table: bool,
) -> Result<Stream, ApiError> {
    let get = |k: &str| params.get(k).map(String::as_str);
    let selectors = Selectors::parse(get("labelSelector"), get("fieldSelector"))?;
    let send_initial = get("sendInitialEvents") == Some("true");
    let from = match get("resourceVersion").unwrap_or("") {
        _ if send_initial => None,
        "" | "0" => None,
        rv => Some(
            rv.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?,
        ),
    };
    let timeout = get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    let bookmarks = (get("allowWatchBookmarks") == Some("true")).then_some(state.bookmark_interval);
    let table = wants_table.then(|| Include::parse(get("includeObject")));
    let (watch, last_words) =
        match state
            .store
            .watch_kind(target.kind, target.ns.as_deref(), selectors.clone(), from)
        {
            Ok(w) => (w, None),
            // Expired: a watch that sends one ERROR event and ends. It needs a Watch to exist, so
            // take an empty one from now.
            Err(e) if e.code() == 410 => {
                let w = state.store.watch_kind(
                    target.kind,
                    target.ns.as_deref(),
                    selectors,
                    Some(u64::MAX),
                )?;
                (w, Some(e.to_status()))
            }
            Err(e) => return Err(e),
        };
    Ok(Stream {
        watch,
        kind: target.kind,
        deadline: Instant::now() + timeout,
        bookmarks,
        initial_end_pending: send_initial,
        table,
        shutdown: state.shutdown.clone(),
        state: state.clone(),
        last_words,
    })
}
