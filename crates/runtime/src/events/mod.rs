//! Events through `events.k8s.io/v1`. The components decide events only on transitions;
//! repeats of one event from this process are aggregated into its series ([`recorder`]),
//! never created anew. Publishing runs on its own workers behind a backlog, so a slow API
//! server never holds up a session. The backlog never drops an event: an event repeated while
//! it waits (the same message, figures aside) is taken into the waiting one (its latest figures
//! kept), and once the backlog is full, new events are combined with the waiting ones of the
//! same kind, namespace and reason, as Kubernetes' own event aggregator combines similar
//! events. Memory stays bounded whatever the rate.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use kube::Client;
use tokio::sync::Notify;
use volcano_api::event::{Event, EventType};
use volcano_api::k8s_openapi::api::core::v1::ObjectReference;
use volcano_api::{ObjectKind, ObjectRef};

pub mod recorder;

use recorder::{Note, Recorder, Reporter};

/// Distinct events waiting to be written; past this, new ones are combined with similar
/// waiting ones.
pub const EVENT_QUEUE: usize = 1024;

/// Events written at once.
const PUBLISHERS: usize = 4;

/// What makes two waiting events one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Same {
    /// The same event about the same object: reason, type and message, figures aside (see
    /// [`recorder`]).
    Event(ObjectRef, String, bool, u64),
    /// Similar events (kind, namespace, reason, type) combined once the backlog was full.
    Similar(ObjectKind, String, String, bool),
}

#[derive(Debug)]
struct Waiting {
    event: Event,
    uid: Option<String>,
    /// Events taken into this one.
    count: u64,
}

#[derive(Debug, Default)]
struct Backlog {
    order: VecDeque<Same>,
    waiting: HashMap<Same, Waiting>,
    /// Events being written: a repeat of one waits until it is written, so one event is never
    /// created twice and its series never counts backwards.
    writing: HashSet<Same>,
}

impl Backlog {
    /// Takes `e` in: into the same waiting event, else as a new one, else (full) into the
    /// similar ones' combined event.
    fn take(&mut self, e: Event, uid: Option<String>) {
        let warning = matches!(e.type_, EventType::Warning);
        let same = Same::Event(
            e.object.clone(),
            e.reason.clone(),
            warning,
            recorder::gist(&e.message),
        );
        let key = if self.waiting.contains_key(&same) || self.waiting.len() < EVENT_QUEUE {
            same
        } else {
            Same::Similar(
                e.object.kind,
                e.object.key.namespace.clone(),
                e.reason.clone(),
                warning,
            )
        };
        match self.waiting.get_mut(&key) {
            Some(w) => {
                w.count += 1;
                w.event = e;
                w.uid = uid;
            }
            None => {
                self.order.push_back(key.clone());
                self.waiting.insert(
                    key,
                    Waiting {
                        event: e,
                        uid,
                        count: 1,
                    },
                );
            }
        }
    }

    /// The oldest waiting event not being written already, with its key; the key counts as
    /// being written until [`Backlog::written`].
    fn next(&mut self) -> Option<(Same, Waiting)> {
        let at = self.order.iter().position(|k| !self.writing.contains(k))?;
        let key = self.order.remove(at)?;
        let w = self.waiting.remove(&key)?;
        self.writing.insert(key.clone());
        Some((key, w))
    }

    /// `key` is written; whether a repeat of it waits.
    fn written(&mut self, key: &Same) -> bool {
        self.writing.remove(key);
        self.waiting.contains_key(key)
    }
}

/// The API version of a kind the components report on.
fn api_version(kind: ObjectKind) -> &'static str {
    match kind {
        ObjectKind::Job | ObjectKind::CronJob => "batch.volcano.sh/v1alpha1",
        ObjectKind::PodGroup | ObjectKind::Queue => "scheduling.volcano.sh/v1beta1",
        ObjectKind::Command => "bus.volcano.sh/v1alpha1",
        ObjectKind::JobFlow | ObjectKind::JobTemplate => "flow.volcano.sh/v1alpha1",
        ObjectKind::HyperNode => "topology.volcano.sh/v1alpha1",
        ObjectKind::PriorityClass => "scheduling.k8s.io/v1",
        ObjectKind::StorageClass | ObjectKind::CSINode => "storage.k8s.io/v1",
        ObjectKind::ReplicaSet | ObjectKind::StatefulSet | ObjectKind::Deployment => "apps/v1",
        ObjectKind::Pod
        | ObjectKind::Node
        | ObjectKind::Namespace
        | ObjectKind::PersistentVolume
        | ObjectKind::PersistentVolumeClaim => "v1",
    }
}

/// The reference an event about `object` carries.
pub fn reference(object: &ObjectRef, uid: Option<String>) -> ObjectReference {
    let key = &object.key;
    ObjectReference {
        api_version: Some(api_version(object.kind).to_string()),
        kind: Some(object.kind.as_str().to_string()),
        namespace: (!key.namespace.is_empty()).then(|| key.namespace.clone()),
        name: Some(key.name.clone()),
        uid,
        ..Default::default()
    }
}

/// Where components send their events.
#[derive(Clone)]
pub struct EventSink {
    backlog: Arc<Mutex<Backlog>>,
    wake: Arc<Notify>,
}

impl EventSink {
    /// Starts the publishing workers for `controller` (the reporting component).
    pub fn start(client: Client, controller: &str, instance: &str) -> EventSink {
        let sink = EventSink {
            backlog: Arc::default(),
            wake: Arc::new(Notify::new()),
        };
        let action = if controller.contains("scheduler") {
            "Scheduling"
        } else {
            "Reconciling"
        };
        let recorder = Arc::new(Recorder::new(
            client,
            Reporter {
                controller: controller.to_string(),
                instance: instance.to_string(),
                action: action.to_string(),
            },
        ));
        for _ in 0..PUBLISHERS {
            let sink = sink.clone();
            let recorder = Arc::clone(&recorder);
            tokio::spawn(async move { sink.publish(&recorder).await });
        }
        sink
    }

    async fn publish(self, recorder: &Recorder) {
        loop {
            let next = self.backlog.lock().ok().and_then(|mut b| b.next());
            let Some((key, w)) = next else {
                self.wake.notified().await;
                continue;
            };
            self.write(recorder, &key, w).await;
            let repeat_waits = self.backlog.lock().is_ok_and(|mut b| b.written(&key));
            if repeat_waits {
                self.wake.notify_one();
            }
        }
    }

    async fn write(&self, recorder: &Recorder, key: &Same, w: Waiting) {
        // The gist the backlog keyed the event by; combined events start no series.
        let (combined, gist) = match key {
            Same::Event(.., gist) => (false, *gist),
            Same::Similar(..) => (true, 0),
        };
        let e = w.event;
        let r = reference(&e.object, w.uid);
        let note = if combined && w.count > 1 {
            format!("(combined from {} similar events): {}", w.count, e.message)
        } else {
            e.message.clone()
        };
        let note = truncate(&note, 1024);
        let ev = Note {
            type_: match e.type_ {
                EventType::Normal => "Normal",
                EventType::Warning => "Warning",
            },
            reason: &e.reason,
            note: &note,
            regarding: &r,
            count: w.count,
            combined,
            gist,
        };
        if let Err(err) = recorder.publish(&ev).await {
            tracing::warn!(object = %e.object_path(), reason = %e.reason, error = %err, "could not write event");
        }
    }

    /// Queues an event about the object with `uid` (if known).
    pub fn send(&self, e: Event, uid: Option<String>) {
        if let Ok(mut b) = self.backlog.lock() {
            b.take(e, uid);
        }
        self.wake.notify_one();
    }
}

/// At most `max` bytes of `s`, cut at a character boundary (the API server refuses longer notes).
fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use volcano_api::NamespacedName;

    #[test]
    fn references_name_namespaced_and_cluster_objects() {
        let pg = ObjectRef::new(ObjectKind::PodGroup, NamespacedName::new("team", "pg-1"));
        let r = reference(&pg, Some("u".into()));
        assert_eq!(r.namespace.as_deref(), Some("team"));
        assert_eq!(r.name.as_deref(), Some("pg-1"));
        assert_eq!(
            r.api_version.as_deref(),
            Some("scheduling.volcano.sh/v1beta1")
        );
        let queue = ObjectRef::new(ObjectKind::Queue, NamespacedName::cluster("research"));
        let q = reference(&queue, None);
        assert_eq!(q.namespace, None);
        assert_eq!(q.name.as_deref(), Some("research"));
    }

    fn event(pod: &str, reason: &str, message: &str) -> Event {
        Event {
            message: message.to_string(),
            object: ObjectRef::new(ObjectKind::Pod, NamespacedName::new("ns", pod)),
            type_: EventType::Normal,
            reason: reason.to_string(),
        }
    }

    #[test]
    fn a_full_backlog_combines_similar_events_and_drops_none() {
        let mut b = Backlog::default();
        let n = EVENT_QUEUE + 500;
        for i in 0..n {
            b.take(
                event(&format!("p{i}"), "Scheduled", &format!("to n{i}")),
                None,
            );
        }
        // A repeat of a waiting event is taken into it.
        b.take(event("p0", "Scheduled", "to n7"), None);
        let mut seen = 0;
        let mut combined = Vec::new();
        while let Some((key, w)) = b.next() {
            b.written(&key);
            let similar = matches!(key, Same::Similar(..));
            seen += w.count;
            if similar {
                combined.push(w);
            } else if w.event.object.key.name == "p0" {
                assert_eq!(w.event.message, "to n7");
                assert_eq!(w.count, 2);
            }
        }
        assert_eq!(seen, n as u64 + 1, "every event is written or combined");
        assert_eq!(combined.len(), 1);
        assert_eq!(combined[0].count, 500);
        assert_eq!(combined[0].event.message, format!("to n{}", n - 1));
    }

    #[test]
    fn a_repeat_of_an_event_being_written_waits_for_it() {
        let mut b = Backlog::default();
        b.take(event("p0", "FailedScheduling", "largest free 2"), None);
        let (key, _) = b.next().expect("the first is handed out");
        b.take(event("p0", "FailedScheduling", "largest free 1"), None);
        b.take(event("p1", "FailedScheduling", "other"), None);
        // Not the repeat of p0 while p0 is being written: p1, waiting behind it, goes first.
        let (other, w) = b.next().expect("p1 is handed out");
        assert_eq!(w.event.object.key.name, "p1");
        assert!(b.next().is_none(), "p0's repeat waits");
        assert!(!b.written(&other));
        assert!(b.written(&key), "p0's repeat waits to be written");
        let (_, w) = b.next().expect("then p0's repeat");
        assert_eq!(w.event.message, "largest free 1");
    }

    #[test]
    fn a_new_message_is_not_taken_into_a_waiting_event() {
        let mut b = Backlog::default();
        b.take(event("p0", "FailedScheduling", "not enough pods"), None);
        b.take(event("p0", "FailedScheduling", "Insufficient cpu"), None);
        let told: Vec<_> = std::iter::from_fn(|| {
            let (key, w) = b.next()?;
            b.written(&key);
            Some((w.event.message, w.count))
        })
        .collect();
        assert_eq!(
            told,
            [
                ("not enough pods".to_string(), 1),
                ("Insufficient cpu".to_string(), 1)
            ]
        );
    }

    #[test]
    fn long_notes_are_cut_at_a_character_boundary() {
        let s = "é".repeat(600);
        let t = truncate(&s, 1024);
        assert!(t.len() <= 1024);
        assert!(s.starts_with(&t));
    }
}
