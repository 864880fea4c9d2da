//! Closing a session: PodGroup phases and conditions, queue `allocated`, events on transitions
//! only, and a reason a person can act on for every PodGroup left unscheduled.

use std::collections::{BTreeMap, BTreeSet};

use volcano_api::resources::format_amount;
use volcano_api::scheduling::{PodGroupCondition, PodGroupStatus, ResourceList};
use volcano_api::{NamespacedName, ObjectKind, ObjectRef};

use super::conditions::{FAILED_SCHEDULING, NETWORK_TOPOLOGY, NOT_ENQUEUED, PodUnschedulable};
use super::observer::{SessionObserver, Unobserved};
use super::pending::job_detail;
use super::report::QueueReport;
use super::session::Session;
use crate::model::{JobId, PgPhase, Snapshot, TaskStatus};
use crate::resource::Resource;
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;

pub use super::conditions::{
    EVICT, Event, EventType, NOT_ENOUGH_RESOURCES, SCHEDULED, UNSCHEDULABLE,
};
pub use super::pending::{gang_unschedulable, largest_node, satisfied_by_releasing};

/// Why a PodGroup is not fully scheduled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unschedulable {
    /// Machine-readable reason.
    pub reason: String,
    /// What to do about it, in words.
    pub message: String,
}

/// A PodGroup's status after the session.
#[derive(Debug, Clone, PartialEq)]
pub struct PodGroupUpdate {
    /// The PodGroup.
    pub key: NamespacedName,
    /// The new status.
    pub status: PodGroupStatus,
    /// Whether it differs from what the snapshot found (ignoring condition times and IDs).
    pub changed: bool,
}

/// A queue's `status.allocated` after the session.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueAllocated {
    /// Queue name.
    pub name: String,
    /// Queue state, as the snapshot found it.
    pub state: String,
    /// Σ requests of the queue's tasks in an allocated status (and of its children's).
    pub allocated: ResourceList,
    /// Whether it differs from what the snapshot found.
    pub changed: bool,
}

/// How a session bound one claim, for a pod it bound: written before the pod's binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeBinding {
    /// The pod whose placement decided it.
    pub pod: NamespacedName,
    /// The node the pod was bound to.
    pub node: String,
    /// The PersistentVolume chosen for the claim; `None` when the claim is to be provisioned
    /// for `node` (its `volume.kubernetes.io/selected-node` annotation).
    pub volume: Option<String>,
}

/// Everything a session decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decisions {
    /// `(pod, node)` to bind, in decision order.
    pub binds: Vec<(NamespacedName, String)>,
    /// `(pod, volcano.sh/vgpu-ids-new)`: the GPU devices each pod bound here holds, to be
    /// written on the pod before it is bound.
    pub gpu_devices: Vec<(NamespacedName, String)>,
    /// Claim → how it is bound, for the claims still to bind of pods bound in the session.
    pub volume_bindings: BTreeMap<NamespacedName, VolumeBinding>,
    /// Pods to evict.
    pub evictions: Vec<NamespacedName>,
    /// Pod evicted → why: the preemptor or the reclaiming queue.
    pub eviction_reasons: BTreeMap<NamespacedName, String>,
    /// `(pod, node)` left pipelined.
    pub pipelined: Vec<(NamespacedName, String)>,
    /// `(pod, node)`: pods whose evictions made room on the node, to be written as
    /// `status.nominatedNodeName`.
    pub nominated: Vec<(NamespacedName, String)>,
    /// Every PodGroup's status.
    pub pod_groups: Vec<PodGroupUpdate>,
    /// Every queue's allocated resources.
    pub queues: Vec<QueueAllocated>,
    /// Events, only for transitions.
    pub events: Vec<Event>,
    /// Waiting pods whose `PodScheduled=False` condition is to be written (only where the pod
    /// does not carry it already); each has its `FailedScheduling` event in `events`.
    pub pod_conditions: Vec<PodUnschedulable>,
    /// PodGroup → why it is not fully scheduled.
    pub unschedulable: BTreeMap<NamespacedName, Unschedulable>,
    /// Nodes whose pods need more than they have; they took no new pods.
    pub out_of_sync_nodes: Vec<String>,
    /// Every queue as monitoring sees it (reporting only).
    pub queue_reports: Vec<QueueReport>,
    /// The action of every committed statement that evicted (reporting only).
    pub eviction_transactions: Vec<String>,
    /// `(PodGroup, share)` of every job, where `drf` weighs jobs (reporting only).
    pub job_shares: Vec<(NamespacedName, f64)>,
}

impl Decisions {
    /// Whether the session changed anything a later session would see.
    pub fn changed_anything(&self) -> bool {
        !self.binds.is_empty()
            || !self.evictions.is_empty()
            || self.pod_groups.iter().any(|p| p.changed)
            || self.queues.iter().any(|q| q.changed)
    }

    /// The events to record once the writes are done. An event about a PodGroup whose status
    /// was not written is dropped: the next session reads the old status and decides the same
    /// transition again, so recording it now would report it twice. An `Evict` event about a
    /// pod whose eviction did not happen is dropped too, and so is a `FailedScheduling` event
    /// about a pod whose condition was not written (the next session decides it again).
    pub fn events_after_writes<'a>(
        &'a self,
        unwritten: &'a Unwritten,
    ) -> impl Iterator<Item = &'a Event> + 'a {
        self.events.iter().filter(|e| {
            let not_done = match (e.object.kind, e.reason.as_str()) {
                (ObjectKind::PodGroup, _) => &unwritten.pod_groups,
                (ObjectKind::Pod, EVICT) => &unwritten.evictions,
                (ObjectKind::Pod, FAILED_SCHEDULING) => &unwritten.pod_conditions,
                _ => return true,
            };
            !not_done.contains(&e.object.key)
        })
    }
}

/// What of a session's decisions the API server did not take: the PodGroup status writes,
/// evictions and pod condition writes that failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unwritten {
    /// PodGroups whose status write failed.
    pub pod_groups: BTreeSet<NamespacedName>,
    /// Pods whose eviction failed.
    pub evictions: BTreeSet<NamespacedName>,
    /// Pods whose `PodScheduled` condition write failed.
    pub pod_conditions: BTreeSet<NamespacedName>,
}

/// The newest condition with status True, as persisted.
pub fn newest_true_condition(conds: &[PodGroupCondition]) -> Option<&PodGroupCondition> {
    // Same rule as the job controller's, which reads it from the persisted status.
    let mut newest: Option<&PodGroupCondition> = None;
    for c in conds.iter().filter(|c| c.status == "True") {
        let t = |c: &PodGroupCondition| c.last_transition_time.as_ref().map(|t| t.0);
        if newest.is_none_or(|n| t(c) >= t(n)) {
            newest = Some(c);
        }
    }
    newest
}

/// Whether two statuses are the same but for their conditions' times and session IDs. Every
/// field is named, so a field added to the status is not silently left out.
fn same_status(a: &PodGroupStatus, b: &PodGroupStatus) -> bool {
    let PodGroupStatus {
        phase,
        conditions,
        running,
        succeeded,
        failed,
    } = a;
    *phase == b.phase
        && *running == b.running
        && *succeeded == b.succeeded
        && *failed == b.failed
        && conditions.len() == b.conditions.len()
        && conditions
            .iter()
            .zip(&b.conditions)
            .all(|(x, y)| same_condition(x, y))
}

fn same_condition(a: &PodGroupCondition, b: &PodGroupCondition) -> bool {
    let PodGroupCondition {
        type_,
        status,
        transition_id: _,
        last_transition_time: _,
        reason,
        message,
    } = a;
    *type_ == b.type_ && *status == b.status && *reason == b.reason && *message == b.message
}

fn resource_list(s: &Snapshot, r: &Resource) -> ResourceList {
    r.nonzero_dims()
        .map(|d| {
            (
                s.dims.name(d).to_string(),
                Quantity(format_amount(s.dims.name(d), r.get(d))),
            )
        })
        .collect()
}

impl Session {
    /// Closes the session: lets plugins write their last word, then collects every decision.
    pub fn close(self) -> Decisions {
        self.close_observed(&mut Unobserved)
    }

    /// [`Session::close`], running each plugin's last word inside `observer.plugin_close`,
    /// so the caller can time it.
    pub fn close_observed(mut self, observer: &mut dyn SessionObserver) -> Decisions {
        for slot in self.tiers.iter_mut().flatten() {
            let name = slot.plugin.name();
            observer.plugin_close(name, &mut || {
                slot.plugin.on_session_close(&mut self.snap, &self.uid);
            });
        }
        let s = &self.snap;
        let mut d = Decisions {
            binds: self
                .binds
                .iter()
                .map(|(t, n)| (s.task(*t).key.clone(), s.node(*n).name.clone()))
                .collect(),
            gpu_devices: self
                .binds
                .iter()
                .filter_map(|(t, n)| {
                    let task = s.task(*t);
                    let req = task.gpu.as_deref()?;
                    let gpus = s.node(*n).gpus.as_deref()?;
                    (!task.gpu_devices.is_empty())
                        .then(|| (task.key.clone(), gpus.assignment(&task.gpu_devices, req)))
                })
                .collect(),
            evictions: self
                .evictions
                .iter()
                .map(|(t, _)| s.task(*t).key.clone())
                .collect(),
            eviction_reasons: self
                .evictions
                .iter()
                .map(|(t, reason)| (s.task(*t).key.clone(), reason.clone()))
                .collect(),
            nominated: self
                .nominations
                .iter()
                .map(|(t, n)| (s.task(*t).key.clone(), s.node(*n).name.clone()))
                .collect(),
            eviction_transactions: self.eviction_transactions.clone(),
            out_of_sync_nodes: s
                .nodes
                .iter()
                .filter(|n| n.out_of_sync)
                .map(|n| n.name.clone())
                .collect(),
            ..Default::default()
        };
        if !s.cluster.assumed_bindings.is_empty() {
            let bound: BTreeSet<_> = self.binds.iter().map(|(t, _)| *t).collect();
            for b in &s.cluster.assumed_bindings {
                if bound.contains(&b.task) {
                    d.volume_bindings
                        .entry(b.claim.clone())
                        .or_insert_with(|| VolumeBinding {
                            pod: s.task(b.task).key.clone(),
                            node: b.node.clone(),
                            volume: b.volume.clone(),
                        });
                }
            }
        }
        for t in &s.tasks {
            if t.status == TaskStatus::Pipelined
                && let Some(n) = t.node
            {
                d.pipelined.push((t.key.clone(), s.node(n).name.clone()));
            }
        }
        // Volcano's cache records a Warning `Evict` event on each victim pod.
        for (t, reason) in &self.evictions {
            d.events.push(Event {
                object: ObjectRef::new(ObjectKind::Pod, s.task(*t).key.clone()),
                type_: EventType::Warning,
                reason: EVICT.to_string(),
                message: reason.clone(),
            });
        }
        let largest = largest_node(s);
        for j in s.job_ids() {
            self.close_job(j, &mut d, &largest);
        }
        self.pod_signals(&mut d);
        self.close_queues(&mut d);
        d
    }

    fn close_job(&self, j: JobId, d: &mut Decisions, largest: &Resource) {
        let s = &self.snap;
        let job = s.job(j);
        let mut status = PodGroupStatus {
            conditions: job.conditions.clone(),
            ..Default::default()
        };
        self.not_enqueued_condition(j, &mut status.conditions);
        let unschedulable_now = job
            .conditions
            .iter()
            .any(|c| c.type_ == UNSCHEDULABLE && c.status == "True" && c.transition_id == self.uid);
        let scheduled = job
            .tasks
            .iter()
            .filter(|&&t| {
                let task = s.task(t);
                task.status.is_scheduled()
                    || (task.status == TaskStatus::Releasing && task.bound_node_name.is_some())
            })
            .count() as i64;
        let finished = job.count(TaskStatus::Succeeded) + job.count(TaskStatus::Failed);
        let phase = if job.count(TaskStatus::Running) > 0 && unschedulable_now {
            PgPhase::Unknown
        } else if scheduled >= i64::from(job.min_available) {
            if scheduled == i64::from(finished) {
                PgPhase::Completed
            } else {
                PgPhase::Running
            }
        } else if job.phase == PgPhase::Inqueue {
            PgPhase::Inqueue
        } else {
            PgPhase::Pending
        };
        status.phase = phase.as_str().to_string();
        status.running = job.count(TaskStatus::Running) as i32;
        status.succeeded = job.count(TaskStatus::Succeeded) as i32;
        status.failed = job.count(TaskStatus::Failed) as i32;
        let changed = !same_status(&status, &job.old_status);

        let old_newest = newest_true_condition(&job.old_status.conditions);
        let new_unsched = status.conditions.iter().find(|c| {
            c.type_ == UNSCHEDULABLE && c.status == "True" && c.transition_id == self.uid
        });
        // A shadow PodGroup has no object to tell, nor a persisted condition to decide a
        // repeat from: its pod's condition and events tell it.
        if !job.shadow {
            self.pod_group_events(j, new_unsched, old_newest, d);
        }
        if let Some(u) = self.unschedulable_entry(j, new_unsched, largest) {
            d.unschedulable.insert(job.key.clone(), u);
        }
        if !job.shadow {
            d.pod_groups.push(PodGroupUpdate {
                key: job.key.clone(),
                status,
                changed,
            });
        }
    }

    /// The events of PodGroup `j`: decided against the persisted newest condition
    /// (`old_newest`), so a restart re-emits nothing. `new_unsched` is the `Unschedulable`
    /// condition this session set, if any.
    fn pod_group_events(
        &self,
        j: JobId,
        new_unsched: Option<&PodGroupCondition>,
        old_newest: Option<&PodGroupCondition>,
        d: &mut Decisions,
    ) {
        let job = self.snap.job(j);
        let object = || ObjectRef::new(ObjectKind::PodGroup, job.key.clone());
        d.events
            .extend(self.not_enqueued_event(j, new_unsched, old_newest));
        if let Some(c) = new_unsched {
            let repeat =
                old_newest.is_some_and(|o| o.type_ == UNSCHEDULABLE && o.message == c.message);
            // A refusal by enqueue is told by the NotEnqueued event alone.
            if !repeat && c.reason != NOT_ENQUEUED {
                d.events.push(Event {
                    object: object(),
                    type_: EventType::Warning,
                    reason: UNSCHEDULABLE.to_string(),
                    message: c.message.clone(),
                });
            }
        } else if job.min_available > 1
            && job
                .conditions
                .iter()
                .any(|c| c.type_ == SCHEDULED && c.status == "True")
            && old_newest.is_none_or(|o| o.type_ != SCHEDULED)
        {
            // A gang of one (a bare pod's, a Deployment's) is told ready by its pod's own
            // `Scheduled` event: a second one on the PodGroup would double the events of a
            // stream of bare pods and tell nobody anything new.
            d.events.push(Event {
                object: object(),
                type_: EventType::Normal,
                reason: SCHEDULED.to_string(),
                message: "pod group is ready".to_string(),
            });
        }
    }

    fn unschedulable_entry(
        &self,
        j: JobId,
        condition: Option<&PodGroupCondition>,
        largest: &Resource,
    ) -> Option<Unschedulable> {
        let s = &self.snap;
        let job = s.job(j);
        if let Some(c) = condition {
            // The condition keeps Volcano's reason; a gang held by its network topology is
            // reported as such, so a reader can tell it from a plain lack of room.
            let topology = job
                .job_fit_error
                .as_ref()
                .is_some_and(|(r, _)| r == NETWORK_TOPOLOGY);
            return Some(Unschedulable {
                reason: if topology {
                    NETWORK_TOPOLOGY.to_string()
                } else {
                    c.reason.clone()
                },
                message: c.message.clone(),
            });
        }
        if !job.is_ready() {
            if satisfied_by_releasing(s, j) {
                return None;
            }
            let (reason, message) = gang_unschedulable(s, j, largest);
            return Some(Unschedulable { reason, message });
        }
        // The gang is satisfied; any task still waiting for a node is reported all the same.
        let left = job.count(TaskStatus::Pending) + job.count(TaskStatus::Pipelined);
        if left == 0 {
            return None;
        }
        let (reason, detail) = job_detail(s, j, largest);
        // Pending BestEffort tasks count towards the gang, so "ready" may not yet mean the
        // minimum is on nodes; say which case this is.
        let message = if i64::from(job.ready_task_num()) >= i64::from(job.min_available) {
            format!(
                "{left}/{} tasks unschedulable beyond the gang minimum of {}: {}",
                job.tasks.len(),
                job.min_available,
                detail
            )
        } else {
            format!("{left}/{} tasks unschedulable: {}", job.tasks.len(), detail)
        };
        Some(Unschedulable { reason, message })
    }

    fn close_queues(&self, d: &mut Decisions) {
        let allocated = self.queue_allocated();
        let s = &self.snap;
        for (i, q) in s.queues.iter().enumerate() {
            let a = &allocated[i];
            d.queues.push(QueueAllocated {
                name: q.name.clone(),
                state: q.state.as_str().to_string(),
                allocated: resource_list(s, a),
                changed: a.iter().any(|(dim, v)| v != q.old_allocated.get(dim)),
            });
        }
        d.queue_reports = self.queue_reports(&allocated);
        d.job_shares = self.job_shares();
    }

    /// Σ allocated of every queue's jobs and its descendants', by queue index.
    fn queue_allocated(&self) -> Vec<Resource> {
        let s = &self.snap;
        let mut allocated: Vec<Resource> = s.queues.iter().map(|_| s.dims.zero()).collect();
        for job in &s.jobs {
            // Walk up the hierarchy; the depth bound guards against a parent cycle in the input.
            let mut q = Some(job.queue);
            let mut depth = 0;
            while let Some(qid) = q {
                if depth > s.queues.len() {
                    break;
                }
                allocated[qid.idx()].add(&job.allocated);
                let parent = &s.queue(qid).parent;
                q = if parent.is_empty() || *parent == s.queue(qid).name {
                    None
                } else {
                    s.queue_index.get(parent).copied()
                };
                depth += 1;
            }
        }
        allocated
    }
}
