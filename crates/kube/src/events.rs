//! Events through `events.k8s.io/v1`. The components decide events only on transitions;
//! repeats of one event from this process are aggregated into its series (kube-rs's
//! recorder), never created anew. Publishing runs on its own task behind a bounded queue, so a
//! slow API server never holds up a session, and memory stays bounded whatever the rate.

use kube::Client;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder, Reporter};
use tokio::sync::mpsc;
use volcano_api::event::{Event, EventType};
use volcano_api::k8s_openapi::api::core::v1::ObjectReference;

/// Events waiting to be written; past this, new ones are dropped with a warning.
pub const EVENT_QUEUE: usize = 1024;

/// The API version of a kind the components report on.
fn api_version(kind: &str) -> &'static str {
    match kind {
        "Job" => "batch.volcano.sh/v1alpha1",
        "PodGroup" | "Queue" => "scheduling.volcano.sh/v1beta1",
        "Command" => "bus.volcano.sh/v1alpha1",
        _ => "v1",
    }
}

/// The parts of an event's `Kind/namespace/name` (or `Kind/name` for cluster-scoped kinds).
pub fn parse_object(object: &str) -> Option<(&str, Option<&str>, &str)> {
    let mut parts = object.splitn(3, '/');
    let kind = parts.next()?;
    match (parts.next(), parts.next()) {
        (Some(ns), Some(name)) => Some((kind, Some(ns), name)),
        (Some(name), None) => Some((kind, None, name)),
        _ => None,
    }
}

/// The identity of what an event's `Kind/namespace/name` (or `Kind/name`) names.
// Goes when events carry typed identities.
pub fn object_ref(object: &str) -> Option<volcano_api::ObjectRef> {
    let (kind, namespace, name) = parse_object(object)?;
    let key = match namespace {
        Some(ns) => volcano_api::NamespacedName::new(ns, name),
        None => volcano_api::NamespacedName::cluster(name),
    };
    Some(volcano_api::ObjectRef::new(
        volcano_api::ObjectKind::from_name(kind)?,
        key,
    ))
}

/// The object an event's `Kind/namespace/name` (or `Kind/name`) names.
pub fn reference(object: &str, uid: Option<String>) -> Option<ObjectReference> {
    let (kind, namespace, name) = parse_object(object)?;
    Some(ObjectReference {
        api_version: Some(api_version(kind).to_string()),
        kind: Some(kind.to_string()),
        namespace: namespace.map(str::to_string),
        name: Some(name.to_string()),
        uid,
        ..Default::default()
    })
}

/// Where components send their events.
#[derive(Clone)]
pub struct EventSink {
    tx: mpsc::Sender<(Event, Option<String>)>,
}

impl EventSink {
    /// Starts the publishing task for `controller` (the reporting component).
    pub fn start(client: Client, controller: &str, instance: &str) -> EventSink {
        let (tx, mut rx) = mpsc::channel::<(Event, Option<String>)>(EVENT_QUEUE);
        let recorder = Recorder::new(
            client,
            Reporter {
                controller: controller.to_string(),
                instance: Some(instance.to_string()),
            },
        );
        let action = if controller.contains("scheduler") {
            "Scheduling"
        } else {
            "Reconciling"
        };
        tokio::spawn(async move {
            while let Some((e, uid)) = rx.recv().await {
                let Some(r) = reference(&e.object, uid) else {
                    continue;
                };
                let ev = KubeEvent {
                    type_: match e.type_ {
                        EventType::Normal => KubeEventType::Normal,
                        EventType::Warning => KubeEventType::Warning,
                    },
                    reason: e.reason.clone(),
                    note: Some(truncate(&e.message, 1024)),
                    action: action.to_string(),
                    secondary: None,
                };
                if let Err(err) = recorder.publish(&ev, &r).await {
                    tracing::warn!(object = %e.object, reason = %e.reason, error = %err, "could not write event");
                }
            }
        });
        EventSink { tx }
    }

    /// Queues an event about the object with `uid` (if known).
    pub fn send(&self, e: Event, uid: Option<String>) {
        if let Err(mpsc::error::TrySendError::Full((e, _))) = self.tx.try_send((e, uid)) {
            tracing::warn!(object = %e.object, reason = %e.reason, "event queue full; event dropped");
        }
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

    #[test]
    fn references_name_namespaced_and_cluster_objects() {
        let r = reference("PodGroup/team/pg-1", Some("u".into())).unwrap();
        assert_eq!(r.namespace.as_deref(), Some("team"));
        assert_eq!(r.name.as_deref(), Some("pg-1"));
        assert_eq!(
            r.api_version.as_deref(),
            Some("scheduling.volcano.sh/v1beta1")
        );
        let q = reference("Queue/research", None).unwrap();
        assert_eq!(q.namespace, None);
        assert_eq!(q.name.as_deref(), Some("research"));
        assert!(reference("nonsense", None).is_none());
    }

    #[test]
    fn long_notes_are_cut_at_a_character_boundary() {
        let s = "é".repeat(600);
        let t = truncate(&s, 1024);
        assert!(t.len() <= 1024);
        assert!(s.starts_with(&t));
    }
}
