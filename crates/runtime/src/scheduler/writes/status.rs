//! Status writes (PodGroup status, queue `allocated`, a waiting pod's `PodScheduled`
//! condition, a nomination) on their own workers, off the scheduling loop: one write in flight
//! per object, and a newer value for an object whose write is still waiting replaces it, so
//! however often sessions run, an object is written at most once more than it changes and the
//! queue holds at most one entry per object (Volcano's status conflicts re-queued without
//! de-duplication grew until its controller was killed). A queue's `allocated` is written at
//! most once per [`QUEUE_STATUS_INTERVAL`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Error as KubeError};
use serde_json::json;
use tokio::sync::{Notify, mpsc};
use volcano_api::NamespacedName;
use volcano_api::event::Event;
use volcano_api::k8s_openapi::api::core::v1::{Pod, PodCondition};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use volcano_api::scheduling::{PodGroup, PodGroupStatus, Queue, ResourceList};
use volcano_scheduler::framework::{POD_SCHEDULED, PodUnschedulable};

use super::{Outcome, replace_status};
use crate::events::EventSink;

/// The shortest time from the start of one write of a queue's `allocated` to the start of the
/// next. Volcano writes it once per session (a second by default); with pods bound at hundreds
/// a second nearly every session changes it, and each patch of a custom resource costs the
/// API server about as much as a pod's create. A newer value waits, replacing older ones.
pub const QUEUE_STATUS_INTERVAL: Duration = Duration::from_secs(1);

/// The object a status write is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StatusKey {
    /// A PodGroup's status.
    PodGroup(NamespacedName),
    /// A queue's `status.allocated`.
    Queue(String),
    /// A pod's `PodScheduled` condition.
    PodScheduled(NamespacedName),
    /// A pod's `status.nominatedNodeName`.
    Nomination(NamespacedName),
}

impl StatusKey {
    /// The shortest time from the start of one write of this object to the start of its next:
    /// [`QUEUE_STATUS_INTERVAL`] for a queue, none for the others.
    fn min_interval(&self) -> Duration {
        match self {
            StatusKey::Queue(_) => QUEUE_STATUS_INTERVAL,
            _ => Duration::ZERO,
        }
    }
}

/// What to write, with what the mirror held before it was assumed (to put back should the
/// write fail, so the next session decides it again).
#[derive(Debug, Clone)]
pub enum StatusWrite {
    /// A PodGroup's whole status.
    PodGroup {
        /// The new status.
        status: PodGroupStatus,
        /// The status before.
        before: Option<PodGroupStatus>,
    },
    /// A queue's `allocated`; resources `before` held that the new one lacks are cleared.
    Queue {
        /// The new amounts.
        allocated: ResourceList,
        /// The amounts before.
        before: Option<ResourceList>,
    },
    /// A waiting pod's `PodScheduled=False` condition.
    PodScheduled {
        /// Why it waits.
        condition: PodUnschedulable,
        /// When the condition last changed status (kept while it stays False).
        since: Time,
        /// The pod's conditions before.
        before: Option<Vec<PodCondition>>,
    },
    /// A pod's nominated node.
    Nomination {
        /// The node.
        node: String,
        /// The nomination before.
        before: Option<String>,
    },
}

/// A queued write and the events to record once it is made.
#[derive(Debug)]
struct Entry {
    write: StatusWrite,
    /// Which dispatch this value came from, so the loop knows which assumption it settles.
    generation: u64,
    events: Vec<(Event, Option<String>)>,
}

#[derive(Debug, Default)]
struct Waiting {
    order: VecDeque<StatusKey>,
    entries: HashMap<StatusKey, Entry>,
    in_flight: HashSet<StatusKey>,
}

impl Waiting {
    /// The oldest entry whose object has no write in flight, taken and marked in flight.
    fn take_next(&mut self) -> Option<(StatusKey, Entry)> {
        let at = self
            .order
            .iter()
            .position(|k| !self.in_flight.contains(k))?;
        let key = self.order.remove(at)?;
        let entry = self.entries.remove(&key)?;
        self.in_flight.insert(key.clone());
        Some((key, entry))
    }
}

/// The status writers' queue (see the module documentation).
#[derive(Clone)]
pub struct StatusQueue {
    waiting: Arc<Mutex<Waiting>>,
    wake: Arc<Notify>,
}

impl StatusQueue {
    /// Starts `workers` writers through `client`; each write's outcome goes to `outcomes`.
    pub fn start(
        client: Client,
        workers: usize,
        events: EventSink,
        outcomes: mpsc::UnboundedSender<Outcome>,
    ) -> StatusQueue {
        let queue = StatusQueue {
            waiting: Arc::default(),
            wake: Arc::new(Notify::new()),
        };
        for _ in 0..workers.max(1) {
            let q = queue.clone();
            let client = client.clone();
            let events = events.clone();
            let outcomes = outcomes.clone();
            tokio::spawn(async move { q.work(client, events, outcomes).await });
        }
        queue
    }

    /// Queues a write; one still waiting for the same object is replaced (keeping the value
    /// from before both, and both writes' events).
    pub fn push(
        &self,
        key: StatusKey,
        write: StatusWrite,
        generation: u64,
        events: Vec<(Event, Option<String>)>,
    ) {
        let Ok(mut w) = self.waiting.lock() else {
            return;
        };
        match w.entries.get_mut(&key) {
            Some(entry) => {
                let before = take_before(&mut entry.write);
                entry.write = with_before(write, before);
                entry.generation = generation;
                entry.events.extend(events);
            }
            None => {
                w.order.push_back(key.clone());
                w.entries.insert(
                    key,
                    Entry {
                        write,
                        generation,
                        events,
                    },
                );
            }
        }
        drop(w);
        self.wake.notify_one();
    }

    /// Writes waiting or in flight.
    pub fn len(&self) -> usize {
        self.waiting
            .lock()
            .map(|w| w.entries.len() + w.in_flight.len())
            .unwrap_or(0)
    }

    /// Whether nothing waits or is in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Lets `key`'s next write go.
    fn release(&self, key: &StatusKey) {
        if let Ok(mut w) = self.waiting.lock() {
            w.in_flight.remove(key);
        }
        // Another worker may be waiting for this object's next write.
        self.wake.notify_one();
    }

    async fn work(
        self,
        client: Client,
        events: EventSink,
        outcomes: mpsc::UnboundedSender<Outcome>,
    ) {
        loop {
            let next = self.waiting.lock().ok().and_then(|mut w| w.take_next());
            let Some((key, entry)) = next else {
                self.wake.notified().await;
                continue;
            };
            // Tokio's clock, which the hold below sleeps on.
            let started = tokio::time::Instant::now();
            let result = write(&client, &key, &entry.write).await;
            if result.is_ok() {
                for (e, uid) in entry.events {
                    events.send(e, uid);
                }
            }
            let hold = key.min_interval().saturating_sub(started.elapsed());
            if hold.is_zero() {
                self.release(&key);
            } else {
                // The queue's next write waits out the interval; this worker goes on.
                let q = self.clone();
                let held = key.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(hold).await;
                    q.release(&held);
                });
            }
            let gone = matches!(&result, Err(KubeError::Api(s)) if s.code == 404);
            let (written_at, error) = match result {
                Ok(v) => (v, None),
                Err(e) => (None, Some(e.to_string())),
            };
            let outcome = Outcome::Status {
                key,
                write: entry.write,
                generation: entry.generation,
                written_at,
                error,
                gone,
            };
            if outcomes.send(outcome).is_err() {
                return;
            }
        }
    }
}

/// The value from before, taken out of a write being replaced.
fn take_before(w: &mut StatusWrite) -> Before {
    match w {
        StatusWrite::PodGroup { before, .. } => Before::PodGroup(before.take()),
        StatusWrite::Queue { before, .. } => Before::Queue(before.take()),
        StatusWrite::PodScheduled { before, .. } => Before::Conditions(before.take()),
        StatusWrite::Nomination { before, .. } => Before::Nomination(before.take()),
    }
}

enum Before {
    PodGroup(Option<PodGroupStatus>),
    Queue(Option<ResourceList>),
    Conditions(Option<Vec<PodCondition>>),
    Nomination(Option<String>),
}

fn with_before(mut w: StatusWrite, b: Before) -> StatusWrite {
    match (&mut w, b) {
        (StatusWrite::PodGroup { before, .. }, Before::PodGroup(b)) => *before = b,
        (StatusWrite::Queue { before, .. }, Before::Queue(b)) => *before = b,
        (StatusWrite::PodScheduled { before, .. }, Before::Conditions(b)) => *before = b,
        (StatusWrite::Nomination { before, .. }, Before::Nomination(b)) => *before = b,
        _ => {}
    }
    w
}

/// Makes one write; the resourceVersion the object was written at.
async fn write(
    client: &Client,
    key: &StatusKey,
    w: &StatusWrite,
) -> Result<Option<String>, KubeError> {
    let params = PatchParams::default();
    match (key, w) {
        (StatusKey::PodGroup(k), StatusWrite::PodGroup { status, .. }) => {
            let api: Api<PodGroup> = Api::namespaced(client.clone(), &k.namespace);
            // The scheduler is the only writer of PodGroup status: the whole status is
            // replaced, so a field that became empty is cleared too. Volcano's PodGroup CRD
            // has no status subresource: the status is patched on the object itself.
            let patch = replace_status(status).map_err(KubeError::SerdeError)?;
            api.patch(&k.name, &params, &Patch::Json::<()>(patch))
                .await
                .map(|o| o.metadata.resource_version)
        }
        (StatusKey::Queue(name), StatusWrite::Queue { allocated, before }) => {
            // A merge patch of `allocated` alone: the controllers own the rest of the status,
            // so the two writers never conflict. Resources that went away are set to null.
            let mut amounts: serde_json::Map<String, serde_json::Value> = allocated
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            for k in before.iter().flat_map(|b| b.keys()) {
                amounts.entry(k.clone()).or_insert(serde_json::Value::Null);
            }
            let patch = json!({"status": {"allocated": amounts}});
            let api: Api<Queue> = Api::all(client.clone());
            api.patch_status(name, &params, &Patch::Merge(&patch))
                .await
                .map(|o| o.metadata.resource_version)
        }
        (
            StatusKey::PodScheduled(k),
            StatusWrite::PodScheduled {
                condition, since, ..
            },
        ) => {
            // A strategic merge patch of that one condition: the pod's others are kept.
            let patch = json!({"status": {"conditions": [{
                "type": POD_SCHEDULED,
                "status": "False",
                "reason": condition.reason,
                "message": condition.message,
                "lastProbeTime": null,
                "lastTransitionTime": since,
            }]}});
            let api: Api<Pod> = Api::namespaced(client.clone(), &k.namespace);
            api.patch_status(&k.name, &params, &Patch::Strategic(&patch))
                .await
                .map(|o| o.metadata.resource_version)
        }
        (StatusKey::Nomination(k), StatusWrite::Nomination { node, .. }) => {
            let patch = json!({"status": {"nominatedNodeName": node}});
            let api: Api<Pod> = Api::namespaced(client.clone(), &k.namespace);
            api.patch_status(&k.name, &params, &Patch::Merge(&patch))
                .await
                .map(|o| o.metadata.resource_version)
        }
        // A key is only ever queued with its own kind of write.
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn nomination(node: &str, before: Option<&str>) -> StatusWrite {
        StatusWrite::Nomination {
            node: node.to_string(),
            before: before.map(str::to_string),
        }
    }

    fn queue() -> StatusQueue {
        StatusQueue {
            waiting: Arc::default(),
            wake: Arc::new(Notify::new()),
        }
    }

    #[test]
    fn a_newer_write_replaces_the_waiting_one_and_keeps_what_was_before_both() {
        let q = queue();
        let key = StatusKey::Nomination(NamespacedName::new("ns", "p"));
        q.push(key.clone(), nomination("n1", Some("n0")), 1, Vec::new());
        q.push(key.clone(), nomination("n2", Some("n1")), 2, Vec::new());
        assert_eq!(q.len(), 1);
        let mut w = q.waiting.lock().unwrap();
        let (k, e) = w.take_next().unwrap();
        assert_eq!(k, key);
        assert_eq!(e.generation, 2);
        match e.write {
            StatusWrite::Nomination { node, before } => {
                assert_eq!(node, "n2");
                assert_eq!(before.as_deref(), Some("n0"));
            }
            other => panic!("{other:?}"),
        }
    }

    /// A client whose API server answers every request with `{}` and notes when it came.
    fn recording_client() -> (Client, Arc<Mutex<Vec<tokio::time::Instant>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let noted = seen.clone();
        let service = tower::service_fn(move |_: http::Request<kube::client::Body>| {
            noted.lock().unwrap().push(tokio::time::Instant::now());
            async {
                Ok::<_, std::convert::Infallible>(http::Response::new(kube::client::Body::from(
                    b"{}".to_vec(),
                )))
            }
        });
        (Client::new(service, "default"), seen)
    }

    #[tokio::test(start_paused = true)]
    async fn a_queue_is_written_at_most_once_per_interval_and_its_last_value_is_written() {
        let (client, seen) = recording_client();
        let (tx, mut outcomes) = mpsc::unbounded_channel();
        let events = EventSink::start(client.clone(), "volcano", "test");
        let q = StatusQueue::start(client, 4, events, tx);
        let allocated = |cpu: &str| StatusWrite::Queue {
            allocated: [("cpu".to_string(), Quantity(cpu.to_string()))].into(),
            before: None,
        };
        let key = StatusKey::Queue("default".into());
        // Sessions every 100 ms, each changing the queue's allocation, for 2.5 s.
        for i in 0..25u64 {
            q.push(key.clone(), allocated(&i.to_string()), i, Vec::new());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(QUEUE_STATUS_INTERVAL * 2).await;
        let at = seen.lock().unwrap().clone();
        // At 0, 1 and 2 s, and at 3 s the value of 2.4 s.
        assert_eq!(
            at.len(),
            4,
            "one write a second, the last value included: {at:?}"
        );
        for pair in at.windows(2) {
            assert!(pair[1] - pair[0] >= QUEUE_STATUS_INTERVAL, "{at:?}");
        }
        let mut last = None;
        while let Ok(Outcome::Status { generation, .. }) = outcomes.try_recv() {
            last = Some(generation);
        }
        assert_eq!(last, Some(24), "the newest value is the one written last");
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn other_objects_are_not_held_back() {
        let (client, seen) = recording_client();
        let (tx, _outcomes) = mpsc::unbounded_channel();
        let events = EventSink::start(client.clone(), "volcano", "test");
        let q = StatusQueue::start(client, 4, events, tx);
        let key = StatusKey::Nomination(NamespacedName::new("ns", "p"));
        for i in 0..5u64 {
            q.push(
                key.clone(),
                nomination(&format!("n{i}"), None),
                i,
                Vec::new(),
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(seen.lock().unwrap().len(), 5);
    }

    #[test]
    fn an_object_has_one_write_in_flight_and_its_next_waits_behind_it() {
        let q = queue();
        let a = StatusKey::Nomination(NamespacedName::new("ns", "a"));
        let b = StatusKey::Nomination(NamespacedName::new("ns", "b"));
        q.push(a.clone(), nomination("n1", None), 1, Vec::new());
        let mut w = q.waiting.lock().unwrap();
        assert_eq!(w.take_next().unwrap().0, a);
        drop(w);
        q.push(a.clone(), nomination("n2", None), 2, Vec::new());
        q.push(b.clone(), nomination("n1", None), 3, Vec::new());
        let mut w = q.waiting.lock().unwrap();
        // `a` is in flight: `b` goes first, and `a`'s next write waits.
        assert_eq!(w.take_next().unwrap().0, b);
        assert!(w.take_next().is_none());
        w.in_flight.remove(&a);
        assert_eq!(w.take_next().unwrap().0, a);
    }
}
