//! Events through `events.k8s.io/v1`. The components decide events only on transitions;
//! repeats of one event from this process are aggregated into its series (kube-rs's
//! recorder), never created anew. Publishing runs on its own task behind a bounded queue, so a
//! slow API server never holds up a session, and memory stays bounded whatever the rate.

use kube::Client;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder, Reporter};
use tokio::sync::mpsc;
use volcano_api::event::{Event, EventType};
use volcano_api::k8s_openapi::api::core::v1::ObjectReference;
use volcano_api::{ObjectKind, ObjectRef};

/// Events waiting to be written; past this, new ones are dropped with a warning.
pub const EVENT_QUEUE: usize = 1024;

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
                let r = reference(&e.object, uid);
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
                    tracing::warn!(object = %e.object_path(), reason = %e.reason, error = %err, "could not write event");
                }
            }
        });
        EventSink { tx }
    }

    /// Queues an event about the object with `uid` (if known).
    pub fn send(&self, e: Event, uid: Option<String>) {
        if let Err(mpsc::error::TrySendError::Full((e, _))) = self.tx.try_send((e, uid)) {
            tracing::warn!(object = %e.object_path(), reason = %e.reason, "event queue full; event dropped");
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

    #[test]
    fn long_notes_are_cut_at_a_character_boundary() {
        let s = "é".repeat(600);
        let t = truncate(&s, 1024);
        assert!(t.len() <= 1024);
        assert!(s.starts_with(&t));
    }
}
