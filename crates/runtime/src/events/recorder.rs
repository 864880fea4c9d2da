//! Writes events through `events.k8s.io/v1` as kube-scheduler's recorder writes them: a new
//! event is created in protobuf ([`crate::protobuf`]), and a repeat of one (same object, reason,
//! type and note, figures aside) within [`SERIES_TTL`] patches its `series` (count, last seen)
//! instead of making another object.
//!
//! client-go's `events.k8s.io` recorder (kube-scheduler's) keys a series without the note, so a
//! pod whose reason for waiting changed ("not enough pods" while its Job's pods were being made,
//! then "Insufficient cpu") would show the first reason counted twice in `kubectl describe`.
//! Volcano's components record through client-go's `core/v1` recorder, whose repeats are the
//! same message; here too a new reason is a new event, and only new figures ("largest free
//! 1500m" then "1000m") are taken into the running series.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Error as KubeError};
use volcano_api::event::figures_aside;
use volcano_api::k8s_openapi::api::core::v1::ObjectReference;
use volcano_api::k8s_openapi::api::events::v1::Event as KubeEvent;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use volcano_api::k8s_openapi::jiff::Timestamp;

use crate::protobuf::{Message, ProtobufWriter, envelope};

/// How long a written event takes repeats into its series, as kube-rs's and client-go's
/// recorders do.
pub const SERIES_TTL: Duration = Duration::from_secs(6 * 60);

/// Series remembered at most; past this (after forgetting those past their time), a new event
/// starts no series, so memory stays bounded whatever the rate.
const MAX_SERIES: usize = 16 * 1024;

/// Who reports: the component, its instance, and the action its events are about.
#[derive(Debug, Clone)]
pub struct Reporter {
    /// `reportingController`.
    pub controller: String,
    /// `reportingInstance`.
    pub instance: String,
    /// `action`.
    pub action: String,
}

/// One event to write.
#[derive(Debug, Clone)]
pub struct Note<'a> {
    /// `Normal` or `Warning`.
    pub type_: &'a str,
    /// Why, in one word.
    pub reason: &'a str,
    /// What happened, for a person.
    pub note: &'a str,
    /// The object it is about.
    pub regarding: &'a ObjectReference,
    /// Occurrences this write stands for (repeats taken in while it waited).
    pub count: u64,
    /// Whether it combines similar events about several objects: always a new event.
    pub combined: bool,
    /// [`gist`] of the whole message, before the note was cut to length (unread when
    /// `combined`).
    pub gist: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SeriesKey {
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    reason: String,
    type_: String,
    /// A hash of the note without its digits (a hash, so a series costs no copy of its note).
    gist: u64,
}

/// What makes two messages the same: a hash of what they say, figures aside
/// ([`figures_aside`], the rule conditions are rewritten by).
pub fn gist(message: &str) -> u64 {
    let mut h = DefaultHasher::new();
    figures_aside(message).hash(&mut h);
    h.finish()
}

impl SeriesKey {
    /// The series `e` belongs to.
    fn of(e: &Note<'_>) -> SeriesKey {
        SeriesKey {
            kind: e.regarding.kind.clone(),
            namespace: e.regarding.namespace.clone(),
            name: e.regarding.name.clone(),
            uid: e.regarding.uid.clone(),
            reason: e.reason.to_string(),
            type_: e.type_.to_string(),
            gist: e.gist,
        }
    }
}

#[derive(Debug)]
struct Written {
    namespace: String,
    name: String,
    count: i32,
    last: Instant,
}

#[derive(Debug, Default)]
struct Series {
    written: HashMap<SeriesKey, Written>,
    pruned: Option<Instant>,
}

impl Series {
    /// Forgets series past their time, at most every few seconds (not on every event) unless
    /// the map is full.
    fn prune(&mut self, now: Instant) {
        let recently = self
            .pruned
            .is_some_and(|p| now.duration_since(p) < Duration::from_secs(10));
        if recently && self.written.len() < MAX_SERIES {
            return;
        }
        self.pruned = Some(now);
        self.written
            .retain(|_, w| now.duration_since(w.last) < SERIES_TTL);
    }

    /// The event of `key`'s series and its count, if one is running.
    fn running(&mut self, key: &SeriesKey, now: Instant) -> Option<(String, String, i32)> {
        self.prune(now);
        let w = self.written.get(key)?;
        Some((w.namespace.clone(), w.name.clone(), w.count))
    }

    /// Records `key`'s series at `count` (starting it if there is room).
    fn record(&mut self, key: SeriesKey, written: Written) {
        self.prune(written.last);
        if self.written.len() < MAX_SERIES || self.written.contains_key(&key) {
            self.written.insert(key, written);
        }
    }
}

/// `n` occurrences as a series count.
fn occurrences(n: u64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Writes events for one reporter.
pub struct Recorder {
    client: Client,
    reporter: Reporter,
    writer: ProtobufWriter,
    series: Mutex<Series>,
}

impl Recorder {
    /// A recorder writing through `client` as `reporter`.
    pub fn new(client: Client, reporter: Reporter) -> Recorder {
        Recorder {
            client,
            reporter,
            writer: ProtobufWriter::default(),
            series: Mutex::default(),
        }
    }

    /// Writes `e`: a new event, or the next of its series. The caller writes one key at a time
    /// (the backlog holds a repeat back while its event is being written).
    pub async fn publish(&self, e: &Note<'_>) -> Result<(), KubeError> {
        let key = SeriesKey::of(e);
        let now = Instant::now();
        let running = if e.combined {
            None
        } else {
            self.series
                .lock()
                .ok()
                .and_then(|mut s| s.running(&key, now))
        };
        if let Some((namespace, name, count)) = running {
            let count = count.saturating_add(occurrences(e.count));
            let patched = self.patch_series(&namespace, &name, count).await;
            let kept = patched.is_ok();
            if let Ok(mut s) = self.series.lock() {
                if kept {
                    let last = now;
                    s.record(
                        key.clone(),
                        Written {
                            namespace,
                            name,
                            count,
                            last,
                        },
                    );
                } else {
                    // Gone (404: expired or deleted) or refused: the next repeat starts anew.
                    s.written.remove(&key);
                }
            }
            match patched {
                Err(KubeError::Api(s)) if s.code == 404 => {}
                other => return other,
            }
        }
        let event = self.new_event(e);
        let namespace = event.metadata.namespace.clone().unwrap_or_default();
        let name = event.metadata.name.clone().unwrap_or_default();
        let path = format!("/apis/events.k8s.io/v1/namespaces/{namespace}/events");
        let json = || serde_json::to_vec(&event).map_err(KubeError::SerdeError);
        self.writer
            .post(&self.client, &path, || protobuf_body(&event), json)
            .await?;
        if !e.combined
            && let Ok(mut s) = self.series.lock()
        {
            let count = occurrences(e.count.max(1));
            s.record(
                key,
                Written {
                    namespace,
                    name,
                    count,
                    last: now,
                },
            );
        }
        Ok(())
    }

    async fn patch_series(&self, namespace: &str, name: &str, count: i32) -> Result<(), KubeError> {
        let api: Api<KubeEvent> = Api::namespaced(self.client.clone(), namespace);
        let patch = serde_json::json!({
            "series": {"count": count, "lastObservedTime": MicroTime(Timestamp::now())}
        });
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ())
    }

    fn new_event(&self, e: &Note<'_>) -> KubeEvent {
        let now = Timestamp::now();
        let r = e.regarding;
        let named = r.name.as_deref().unwrap_or(&self.reporter.controller);
        KubeEvent {
            metadata: ObjectMeta {
                // Cluster objects' events live in `default`, as kube-rs and client-go put them.
                namespace: Some(r.namespace.clone().unwrap_or_else(|| "default".into())),
                name: Some(format!("{named}.{:x}", now.as_nanosecond())),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(self.reporter.instance.clone()),
            action: Some(self.reporter.action.clone()),
            reason: Some(e.reason.to_string()),
            regarding: Some(r.clone()),
            note: Some(e.note.to_string()),
            type_: Some(e.type_.to_string()),
            ..KubeEvent::default()
        }
    }
}

/// `event` as `events.k8s.io/v1` `Event` in protobuf (field numbers of
/// `k8s.io/api/events/v1/generated.proto`).
fn protobuf_body(event: &KubeEvent) -> Vec<u8> {
    let s = |v: &Option<String>| v.clone().unwrap_or_default();
    let meta = Message::new()
        .string(1, &s(&event.metadata.name))
        .string(3, &s(&event.metadata.namespace));
    let mut e = Message::new().message(1, &meta);
    if let Some(MicroTime(t)) = &event.event_time {
        let time = Message::new()
            .int(1, t.as_second())
            .int(2, i64::from(t.subsec_nanosecond()));
        e = e.message(2, &time);
    }
    e = e
        .string(4, &s(&event.reporting_controller))
        .string(5, &s(&event.reporting_instance))
        .string(6, &s(&event.action))
        .string(7, &s(&event.reason));
    if let Some(r) = &event.regarding {
        // ObjectReference: kind = 1, namespace = 2, name = 3, uid = 4, apiVersion = 5.
        let regarding = Message::new()
            .string(1, &s(&r.kind))
            .string(2, &s(&r.namespace))
            .string(3, &s(&r.name))
            .string(4, &s(&r.uid))
            .string(5, &s(&r.api_version));
        e = e.message(8, &regarding);
    }
    e = e.string(10, &s(&event.note)).string(11, &s(&event.type_));
    envelope("events.k8s.io/v1", "Event", &e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::read::{bytes, fields, has, int, text};

    #[test]
    fn an_event_is_laid_out_as_kubernetes_reads_it() {
        let regarding = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some("team".into()),
            name: Some("trainer-0".into()),
            uid: Some("u-1".into()),
            ..ObjectReference::default()
        };
        let t = Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
        let event = KubeEvent {
            metadata: ObjectMeta {
                name: Some("trainer-0.1a".into()),
                namespace: Some("team".into()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(t)),
            reporting_controller: Some("volcano".into()),
            reporting_instance: Some("volcano-0".into()),
            action: Some("Scheduling".into()),
            reason: Some("Scheduled".into()),
            regarding: Some(regarding),
            note: Some("Successfully assigned team/trainer-0 to n1".into()),
            type_: Some("Normal".into()),
            ..KubeEvent::default()
        };
        let body = protobuf_body(&event);
        let unknown = fields(&body[4..]);
        let type_meta = fields(&bytes(&unknown, 1));
        assert_eq!(text(&type_meta, 1), "events.k8s.io/v1");
        assert_eq!(text(&type_meta, 2), "Event");
        let e = fields(&bytes(&unknown, 2));
        let meta = fields(&bytes(&e, 1));
        assert_eq!(text(&meta, 1), "trainer-0.1a");
        assert_eq!(text(&meta, 3), "team");
        let time = fields(&bytes(&e, 2));
        assert_eq!(int(&time, 1), 1_800_000_000);
        assert!(!has(&e, 3), "no series on a new event");
        assert_eq!(text(&e, 4), "volcano");
        assert_eq!(text(&e, 5), "volcano-0");
        assert_eq!(text(&e, 6), "Scheduling");
        assert_eq!(text(&e, 7), "Scheduled");
        let r = fields(&bytes(&e, 8));
        assert_eq!(
            [1, 2, 3, 4, 5].map(|n| text(&r, n)),
            ["Pod", "team", "trainer-0", "u-1", "v1"]
        );
        assert_eq!(text(&e, 10), "Successfully assigned team/trainer-0 to n1");
        assert_eq!(text(&e, 11), "Normal");
    }

    #[test]
    fn a_new_reason_starts_a_new_event_and_new_figures_do_not() {
        let pod = ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some("ns".into()),
            name: Some("worker-0".into()),
            ..ObjectReference::default()
        };
        let key = |note: &str| {
            SeriesKey::of(&Note {
                type_: "Warning",
                reason: "FailedScheduling",
                note,
                regarding: &pod,
                count: 1,
                combined: false,
                gist: gist(note),
            })
        };
        let fit =
            |free| format!("0/2 nodes are available: 2 Insufficient cpu (largest free {free}m)");
        assert_eq!(key(&fit(1500)), key(&fit(500)));
        assert_ne!(
            key("not enough pods of task \"worker\" for gang-scheduling: valid 1, min 3"),
            key(&fit(1500))
        );
    }

    #[test]
    fn series_past_their_time_are_forgotten() {
        let mut s = Series::default();
        let start = Instant::now();
        let key = |name: &str| SeriesKey {
            kind: Some("Pod".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: None,
            reason: "Scheduled".into(),
            type_: "Normal".into(),
            gist: 0,
        };
        let written = |last| Written {
            namespace: "ns".into(),
            name: "e".into(),
            count: 1,
            last,
        };
        s.written.insert(key("old"), written(start));
        s.written.insert(key("new"), written(start + SERIES_TTL));
        s.prune(start + SERIES_TTL + Duration::from_secs(1));
        assert!(!s.written.contains_key(&key("old")));
        assert!(s.written.contains_key(&key("new")));
    }

    #[test]
    fn a_full_map_starts_no_new_series_but_keeps_counting_its_own() {
        let mut s = Series::default();
        let now = Instant::now();
        let key = |i: usize| SeriesKey {
            kind: Some("Pod".into()),
            namespace: Some("ns".into()),
            name: Some(format!("p{i}")),
            uid: None,
            reason: "Scheduled".into(),
            type_: "Normal".into(),
            gist: 0,
        };
        let written = |count| Written {
            namespace: "ns".into(),
            name: "e".into(),
            count,
            last: now,
        };
        for i in 0..MAX_SERIES {
            s.record(key(i), written(1));
        }
        s.record(key(MAX_SERIES), written(1));
        assert_eq!(s.written.len(), MAX_SERIES);
        assert!(s.running(&key(MAX_SERIES), now).is_none());
        s.record(key(0), written(5));
        assert_eq!(s.running(&key(0), now).map(|r| r.2), Some(5));
    }
}
