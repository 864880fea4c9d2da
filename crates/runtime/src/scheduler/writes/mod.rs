//! A session's decisions, written to the API server off the scheduling loop, so no write ever
//! holds up a session or a watch event.
//!
//! Every decision is assumed in the mirror the moment it is dispatched (a bind's node, an
//! eviction's deletion, a status), so the next session, which may start while the writes are
//! still in flight, neither decides them again nor counts their resources twice. Binds and
//! evictions run as tasks under the bind concurrency ([`pods`]); status writes go through a
//! queue that keeps one write per object ([`status`]). Each write's outcome comes back to the
//! loop ([`Writer::settle`]): one that failed puts back what the mirror held before, unless a
//! newer watch event replaced it meanwhile, so the next session decides it again. A decision
//! that changes nothing on the object is not written at all.

mod assumed;
pub mod binding;
pub mod eviction;
mod pods;
mod status;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use kube::Client;
use serde_json::json;
use tokio::sync::mpsc;
use volcano_api::event::Event;
use volcano_api::k8s_openapi::api::core::v1::PersistentVolumeClaim;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use volcano_api::k8s_openapi::jiff::Timestamp;
use volcano_api::store::Stored;
use volcano_api::{NamespacedName, ObjectKind, ObjectRef};
use volcano_scheduler::cache::{bind_pod, nominate_pod, set_gpu_devices, set_pod_scheduled};
use volcano_scheduler::framework::close::{EVICT, QueueAllocated};
use volcano_scheduler::framework::{Decisions, EventType, FAILED_SCHEDULING, POD_SCHEDULED};

use crate::events::EventSink;
use crate::metrics::SchedulerMetrics;
use crate::mirror::ClusterMirror;
use assumed::{
    Assumed, AssumedStatus, assume_status, put_back, same_pod, status_version, undo_status, version,
};
use pods::{BindJob, PodWrites, claims_by_pod};
pub use status::{StatusKey, StatusQueue, StatusWrite};

/// What a write did, as it comes back to the loop.
#[derive(Debug)]
pub enum Outcome {
    /// A bind, with how long its calls took.
    Bound {
        /// The pod.
        key: NamespacedName,
        /// The uid of the pod decided on.
        uid: Option<String>,
        /// The node.
        node: String,
        /// Why it failed, if it did.
        error: Option<String>,
        /// How long it took.
        took: Duration,
    },
    /// An eviction.
    Evicted {
        /// The pod.
        key: NamespacedName,
        /// The uid of the pod decided on.
        uid: Option<String>,
        /// Why it failed, if it did (a pod already gone is not a failure).
        error: Option<String>,
        /// The pod was gone already.
        gone: bool,
    },
    /// A status write.
    Status {
        /// The object.
        key: StatusKey,
        /// What was written.
        write: StatusWrite,
        /// The dispatch it came from.
        generation: u64,
        /// The resourceVersion the object was written at, when it was.
        written_at: Option<String>,
        /// Why it failed, if it did.
        error: Option<String>,
        /// The object is gone (404).
        gone: bool,
    },
}

/// What the writes did since it was last asked.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Pods bound.
    pub bound: usize,
    /// Binds refused.
    pub bind_failures: usize,
    /// Pods evicted.
    pub evicted: usize,
    /// Status patches refused.
    pub status_failures: usize,
}

/// Where the writes go (see the module documentation).
pub struct Writer {
    client: Client,
    pods: PodWrites,
    statuses: StatusQueue,
    events: EventSink,
    metrics: SchedulerMetrics,
    /// Queues the API server answered 404 for, with the resourceVersion the mirror held
    /// then: not written again until the mirror shows that queue changed (recreated), so a
    /// deletion the watch has not delivered yet costs one refused write, not one a session.
    gone_queues: BTreeMap<String, Option<String>>,
    /// Pods whose bind is in flight, and the node.
    binding: HashMap<NamespacedName, (String, Assumed)>,
    /// Pods whose eviction is in flight.
    evicting: HashMap<NamespacedName, Assumed>,
    /// Status writes assumed and not yet seen in a watch event, the newest per object: the
    /// dispatch it came from, and once written, the resourceVersion it was written at.
    statuses_assumed: HashMap<StatusKey, AssumedStatus>,
    dispatches: u64,
    written: Written,
}

impl Writer {
    /// A writer through `client`, binding and evicting `concurrency` pods at a time, with as
    /// many status writers; the outcomes arrive on the receiver, for [`Writer::settle`].
    pub fn start(
        client: Client,
        concurrency: usize,
        events: EventSink,
        metrics: SchedulerMetrics,
    ) -> (Writer, mpsc::UnboundedReceiver<Outcome>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let writer = Writer {
            pods: PodWrites::new(client.clone(), concurrency, events.clone(), tx.clone()),
            statuses: StatusQueue::start(client.clone(), concurrency, events.clone(), tx),
            client,
            events,
            metrics,
            gone_queues: BTreeMap::new(),
            binding: HashMap::new(),
            evicting: HashMap::new(),
            statuses_assumed: HashMap::new(),
            dispatches: 0,
            written: Written::default(),
        };
        (writer, rx)
    }

    /// The API client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Writes dispatched and not settled yet.
    pub fn in_flight(&self) -> usize {
        self.binding.len() + self.evicting.len() + self.statuses.len()
    }

    /// What was written since the last call.
    pub fn take_written(&mut self) -> Written {
        std::mem::take(&mut self.written)
    }

    /// Assumes again the writes whose watch events have not arrived yet on objects a newer
    /// watch event replaced (the controller annotated a pod whose bind or condition is on its
    /// way; a watch event from before the write arrived after it), so no session decides them,
    /// or their events, twice. A write is forgotten once a watch event shows it, or shows
    /// another pod under the name (deleted and made again: the server refuses the write).
    pub fn reassert(&mut self, mirror: &mut ClusterMirror) {
        self.statuses_assumed.retain(|key, a| {
            let Some(at) = status_version(mirror, key) else {
                return false;
            };
            if a.written_at.is_some_and(|w| at >= w) {
                return false;
            }
            assume_status(mirror, key, &a.write);
            true
        });
        self.binding.retain(|key, (node, a)| {
            let Some(p) = mirror.pod(key).filter(|p| same_pod(p, &a.before)) else {
                return false;
            };
            let bound = p.spec.as_ref().is_some_and(|s| s.node_name.is_some());
            if version(p) == a.version {
                return true;
            }
            if bound {
                // The watch shows it bound: by this write, or by whoever won the race.
                return false;
            }
            *a = Assumed {
                before: p.clone(),
                version: version(p),
            };
            mirror.assume_pod(key, |p| bind_pod(p, node));
            true
        });
        self.evicting.retain(|key, a| {
            let Some(p) = mirror.pod(key).filter(|p| same_pod(p, &a.before)) else {
                return false;
            };
            if version(p) == a.version {
                return true;
            }
            if p.metadata.deletion_timestamp.is_some() {
                return false;
            }
            *a = Assumed {
                before: p.clone(),
                version: version(p),
            };
            mirror.assume_pod(key, |p| {
                p.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
            });
            true
        });
    }

    /// Assumes `d` in `mirror` and starts its writes.
    pub fn dispatch(&mut self, d: &Decisions, mirror: &mut ClusterMirror) {
        self.dispatches += 1;
        let mut later = LaterEvents::default();
        for e in &d.events {
            let uid = mirror.uid_of(&e.object);
            let held = match (e.object.kind, e.reason.as_str()) {
                (ObjectKind::PodGroup, _) => &mut later.pod_groups,
                (ObjectKind::Pod, EVICT) => &mut later.evictions,
                (ObjectKind::Pod, FAILED_SCHEDULING) => &mut later.pod_conditions,
                _ => {
                    self.events.send(e.clone(), uid);
                    continue;
                }
            };
            held.entry(e.object.key.clone())
                .or_default()
                .push((e.clone(), uid));
        }
        self.dispatch_binds(d, mirror);
        self.dispatch_evictions(d, mirror, &mut later.evictions);
        self.dispatch_nominations(d, mirror);
        self.dispatch_pod_groups(d, mirror, &mut later.pod_groups);
        self.dispatch_queues(d, mirror);
        self.dispatch_pod_conditions(d, mirror, &mut later.pod_conditions);
        // A PodGroup event whose status did not change, and a FailedScheduling event of a pod
        // whose condition is already written, wait for nothing. An Evict event of a pod not
        // evicted is dropped.
        for (e, uid) in later
            .pod_groups
            .into_values()
            .chain(later.pod_conditions.into_values())
            .flatten()
        {
            self.events.send(e, uid);
        }
    }

    fn dispatch_binds(&mut self, d: &Decisions, mirror: &mut ClusterMirror) {
        let mut claims = claims_by_pod(&d.volume_bindings, |c| {
            mirror
                .indexed()
                .get::<PersistentVolumeClaim>(c)
                .and_then(|c| c.metadata.uid.clone())
        });
        let devices: HashMap<&NamespacedName, &String> =
            d.gpu_devices.iter().map(|(k, ids)| (k, ids)).collect();
        for (key, node) in &d.binds {
            if self.binding.contains_key(key) {
                continue;
            }
            let Some(pod) = mirror.pod(key) else { continue };
            let assumed = Assumed {
                before: pod.clone(),
                version: version(pod),
            };
            let uid = pod.metadata.uid.clone();
            let ids = devices.get(key).map(|s| s.to_string());
            mirror.assume_pod(key, |p| {
                bind_pod(p, node);
                if let Some(ids) = &ids {
                    set_gpu_devices(p, ids);
                }
            });
            self.binding.insert(key.clone(), (node.clone(), assumed));
            self.pods.bind(BindJob {
                key: key.clone(),
                node: node.clone(),
                devices: ids,
                claims: claims.remove(key).unwrap_or_default(),
                scheduled: Event {
                    message: format!("Successfully assigned {key} to {node}"),
                    object: ObjectRef::new(ObjectKind::Pod, key.clone()),
                    type_: EventType::Normal,
                    reason: "Scheduled".to_string(),
                },
                uid,
            });
        }
    }

    fn dispatch_evictions(
        &mut self,
        d: &Decisions,
        mirror: &mut ClusterMirror,
        events: &mut HashMap<NamespacedName, Vec<(Event, Option<String>)>>,
    ) {
        for key in &d.evictions {
            if self.evicting.contains_key(key) {
                continue;
            }
            let Some(pod) = mirror.pod(key) else { continue };
            let assumed = Assumed {
                before: pod.clone(),
                version: version(pod),
            };
            let uid = pod.metadata.uid.clone();
            mirror.assume_pod(key, |p| {
                p.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
            });
            self.evicting.insert(key.clone(), assumed);
            self.pods
                .evict(key.clone(), uid, events.remove(key).unwrap_or_default());
        }
    }

    fn dispatch_nominations(&mut self, d: &Decisions, mirror: &mut ClusterMirror) {
        for (key, node) in &d.nominated {
            let Some(pod) = mirror.pod(key) else { continue };
            let before = pod
                .status
                .as_ref()
                .and_then(|s| s.nominated_node_name.clone());
            if before.as_ref() == Some(node) {
                continue;
            }
            mirror.assume_pod(key, |p| nominate_pod(p, node));
            self.push_status(
                StatusKey::Nomination(key.clone()),
                StatusWrite::Nomination {
                    node: node.clone(),
                    before,
                },
                Vec::new(),
            );
        }
    }

    fn dispatch_pod_groups(
        &mut self,
        d: &Decisions,
        mirror: &mut ClusterMirror,
        events: &mut HashMap<NamespacedName, Vec<(Event, Option<String>)>>,
    ) {
        for u in d.pod_groups.iter().filter(|u| u.changed) {
            let Some(pg) = mirror.pod_group(&u.key) else {
                // Gone: its transition's events go with it.
                events.remove(&u.key);
                continue;
            };
            let before = pg.status.clone();
            mirror.assume_pod_group(&u.key, |pg| pg.status = Some(u.status.clone()));
            self.push_status(
                StatusKey::PodGroup(u.key.clone()),
                StatusWrite::PodGroup {
                    status: u.status.clone(),
                    before,
                },
                events.remove(&u.key).unwrap_or_default(),
            );
        }
    }

    fn dispatch_queues(&mut self, d: &Decisions, mirror: &mut ClusterMirror) {
        // A queue the mirror no longer holds is gone (or is an implicit one the snapshot adds
        // while it is missing): there is nothing to patch.
        let versions: BTreeMap<String, Option<String>> = mirror
            .objects()
            .queues
            .iter()
            .filter_map(|x| {
                Some((
                    x.metadata.name.clone()?,
                    x.metadata.resource_version.clone(),
                ))
            })
            .collect();
        for q in queues_to_write(d, &versions, &mut self.gone_queues) {
            let key = NamespacedName::cluster(&q.name);
            let before = mirror
                .indexed()
                .get::<volcano_api::scheduling::Queue>(&key)
                .and_then(|x| x.status.as_ref())
                .and_then(|s| s.allocated.clone());
            mirror.assume_queue(&q.name, |x| {
                x.status.get_or_insert_with(Default::default).allocated = Some(q.allocated.clone());
            });
            self.push_status(
                StatusKey::Queue(q.name.clone()),
                StatusWrite::Queue {
                    allocated: q.allocated.clone(),
                    before,
                },
                Vec::new(),
            );
        }
    }

    /// Each waiting pod's `PodScheduled=False` condition. The transition time moves only
    /// when the status does, as Kubernetes keeps it.
    fn dispatch_pod_conditions(
        &mut self,
        d: &Decisions,
        mirror: &mut ClusterMirror,
        events: &mut HashMap<NamespacedName, Vec<(Event, Option<String>)>>,
    ) {
        for c in &d.pod_conditions {
            let Some(pod) = mirror.pod(&c.key) else {
                events.remove(&c.key);
                continue;
            };
            let conditions = pod.status.as_ref().and_then(|s| s.conditions.clone());
            let since = conditions
                .iter()
                .flatten()
                .find(|x| x.type_ == POD_SCHEDULED)
                .filter(|x| x.status == "False")
                .and_then(|x| x.last_transition_time.clone())
                .unwrap_or_else(|| Time(Timestamp::now()));
            mirror.assume_pod(&c.key, |p| set_pod_scheduled(p, c));
            self.push_status(
                StatusKey::PodScheduled(c.key.clone()),
                StatusWrite::PodScheduled {
                    condition: c.clone(),
                    since,
                    before: conditions,
                },
                events.remove(&c.key).unwrap_or_default(),
            );
        }
    }

    /// Queues a status write already assumed in the mirror, remembering it until it settles.
    fn push_status(
        &mut self,
        key: StatusKey,
        write: StatusWrite,
        events: Vec<(Event, Option<String>)>,
    ) {
        let generation = self.dispatches;
        self.statuses_assumed.insert(
            key.clone(),
            AssumedStatus {
                generation,
                write: write.clone(),
                written_at: None,
            },
        );
        self.statuses.push(key, write, generation, events);
    }

    /// Takes a write's outcome: counts it, and puts back what a failed one assumed (see the
    /// module documentation).
    pub fn settle(&mut self, o: Outcome, mirror: &mut ClusterMirror) {
        match o {
            Outcome::Bound {
                key,
                uid,
                node,
                error,
                took,
            } => {
                match error {
                    // Kept assumed until the watch shows the pod bound.
                    None => {
                        self.written.bound += 1;
                        let pod = mirror.pod(&key).filter(|p| p.metadata.uid == uid);
                        self.metrics.record_bound(took, pod);
                    }
                    Some(e) => {
                        let assumed = take_own(&mut self.binding, &key, &uid, |(_, a)| a);
                        self.written.bind_failures += 1;
                        self.metrics.bind_failures.inc();
                        tracing::warn!(pod = %key, node = %node, error = %e, "bind failed; the pod goes back to the queue");
                        if let Some((_, a)) = assumed {
                            put_back(mirror, &key, a);
                        }
                    }
                }
            }
            Outcome::Evicted {
                key,
                uid,
                error,
                gone,
            } => {
                match error {
                    // Kept assumed until the watch shows the pod deleted or going.
                    None if !gone => {
                        self.written.evicted += 1;
                        self.metrics.preemption_attempts.inc();
                    }
                    None => {}
                    Some(e) => {
                        let assumed = take_own(&mut self.evicting, &key, &uid, |a| a);
                        tracing::warn!(pod = %key, error = %e, "eviction failed");
                        if let Some(a) = assumed {
                            put_back(mirror, &key, a);
                        }
                    }
                }
            }
            Outcome::Status {
                key,
                write,
                generation,
                written_at,
                error,
                gone,
            } => {
                let newest = self
                    .statuses_assumed
                    .get(&key)
                    .is_some_and(|a| a.generation == generation);
                let Some(e) = error else {
                    // Kept assumed until a watch event at least this new arrives.
                    if newest && let Some(a) = self.statuses_assumed.get_mut(&key) {
                        a.written_at = written_at.as_deref().and_then(|v| v.parse().ok());
                        if a.written_at.is_none() {
                            self.statuses_assumed.remove(&key);
                        }
                    }
                    return;
                };
                if newest {
                    self.statuses_assumed.remove(&key);
                }
                if gone {
                    if let StatusKey::Queue(name) = &key {
                        let rv = mirror
                            .indexed()
                            .get::<volcano_api::scheduling::Queue>(&NamespacedName::cluster(name))
                            .and_then(|q| q.meta().resource_version.clone());
                        self.gone_queues.insert(name.clone(), rv);
                    }
                    return;
                }
                self.written.status_failures += 1;
                tracing::warn!(object = ?key, error = %e, "could not write status; the next session decides it again");
                undo_status(mirror, &key, write);
            }
        }
    }
}

/// Events that wait for a write, by the object they are about.
#[derive(Default)]
struct LaterEvents {
    pod_groups: HashMap<NamespacedName, Vec<(Event, Option<String>)>>,
    evictions: HashMap<NamespacedName, Vec<(Event, Option<String>)>>,
    pod_conditions: HashMap<NamespacedName, Vec<(Event, Option<String>)>>,
}

/// The queues whose `allocated` changed and may be written: held by the mirror (`versions`,
/// name → resourceVersion) and not refused with 404 at the version the mirror still holds.
/// `gone` forgets a queue once the mirror shows it changed or deleted.
fn queues_to_write<'a>(
    d: &'a Decisions,
    versions: &BTreeMap<String, Option<String>>,
    gone: &mut BTreeMap<String, Option<String>>,
) -> Vec<&'a QueueAllocated> {
    gone.retain(|name, rv| versions.get(name).is_some_and(|now| now == rv));
    d.queues
        .iter()
        .filter(|q| q.changed && versions.contains_key(&q.name) && !gone.contains_key(&q.name))
        .collect()
}

/// A JSON patch that sets the member at `path` whole (`add` replaces a member that exists,
/// and clears what the new value leaves out, which a merge patch would keep).
pub fn replace_member<S: serde::Serialize>(
    path: &str,
    value: &S,
) -> Result<json_patch::Patch, serde_json::Error> {
    serde_json::from_value(json!([{"op": "add", "path": path, "value": value}]))
}

/// [`replace_member`] of `/status`.
pub fn replace_status<S: serde::Serialize>(
    status: &S,
) -> Result<json_patch::Patch, serde_json::Error> {
    replace_member("/status", status)
}

/// Takes `key`'s write in flight out of `writes` if it is for the pod of `uid`: a failed write
/// for a pod since deleted and made again under its name must not undo what was assumed for
/// the new one, whose own write may be in flight.
fn take_own<V>(
    writes: &mut HashMap<NamespacedName, V>,
    key: &NamespacedName,
    uid: &Option<String>,
    assumed: impl Fn(&V) -> &Assumed,
) -> Option<V> {
    let own = writes
        .get(key)
        .is_some_and(|w| assumed(w).before.metadata.uid == *uid);
    if own { writes.remove(key) } else { None }
}

#[cfg(test)]
mod tests;
