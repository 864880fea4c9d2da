//! The job controller's bookkeeping: watch events become requests, requests wait in a work
//! queue keyed by job, and each turn carries out one request for one job.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use volcano_api::batch::Job;
use volcano_api::bus::{BusAction, BusEvent};
use volcano_api::event::Event;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use volcano_api::keys;
use volcano_api::scheduling::{PodGroup, PodGroupCondition, phase as pg_phase};
use volcano_api::{ObjectKind, ObjectRef};

use super::policy::decide;
use super::request::{JobKey, Request};
use super::state::plan_for;
use super::sync::{self, JobEnv, SyncError, is_out_of_sync, pod_phase};
use crate::change::Change;
use crate::time::Instant;
use crate::view::{ClusterView, owning_job, pod_annotation as annotation};
use crate::workqueue::{Retry, RetryPolicy, WorkQueue};

mod refusal;

pub use refusal::{REFUSED_FIRST_RETRY, REFUSED_RETRY, Refusal};

/// A policy action waiting for its timeout.
#[derive(Debug, Clone)]
struct Delayed {
    due: Instant,
    request: Request,
}

/// The job controller.
pub struct JobController {
    queue: WorkQueue<JobKey>,
    requests: BTreeMap<JobKey, VecDeque<Request>>,
    delayed: BTreeMap<JobKey, Vec<Delayed>>,
    in_flight: BTreeMap<JobKey, InFlight>,
    // Jobs whose retries ran out and whose TerminateJob is queued: if that fails too, the
    // job is dropped rather than terminated again, forever.
    terminating: BTreeSet<JobKey>,
    // The PodGroup condition each `PodGroupPending` warning reported, by PodGroup uid: a
    // watch event delivered twice must not warn twice. Dropped with the PodGroup.
    warned: HashMap<String, (String, Option<Time>)>,
    // Lasting refusals in a row, and the last one told, by job: the next wait grows with
    // them, and the same refusal is told once, not at every attempt. Cleared when a turn of
    // the job goes through, or the job goes.
    refusals: BTreeMap<JobKey, (u32, Refusal)>,
}

/// The request a turn is carrying out, and the action it decided on (none for a TTL delete).
#[derive(Debug)]
struct InFlight {
    request: Request,
    action: Option<BusAction>,
}

/// One turn of the job controller: the changes for one job, to apply before
/// [`JobController::finish`].
#[derive(Debug)]
pub struct JobWork {
    /// The job.
    pub key: JobKey,
    /// What to change.
    pub changes: Vec<Change>,
}

fn key_of(namespace: Option<&String>, name: &str) -> JobKey {
    JobKey::new(namespace.cloned().unwrap_or_default(), name)
}

impl JobController {
    /// A controller with nothing queued.
    pub fn new(retry: RetryPolicy) -> Self {
        JobController {
            queue: WorkQueue::new(retry),
            requests: BTreeMap::new(),
            delayed: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            terminating: BTreeSet::new(),
            warned: HashMap::new(),
            refusals: BTreeMap::new(),
        }
    }

    /// Queues `req` for the job, once: an identical request already waiting is not repeated.
    pub fn enqueue(&mut self, key: JobKey, req: Request) {
        let pending = self.requests.entry(key.clone()).or_default();
        if !pending.contains(&req) {
            pending.push_back(req);
        }
        self.queue.add(key);
    }

    /// Entries in the work queue (one per job at most).
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// The longest the work queue has been.
    pub fn peak_queue_len(&self) -> usize {
        self.queue.peak_len()
    }

    /// Requests waiting, over all jobs.
    pub fn pending_requests(&self) -> usize {
        self.requests.values().map(VecDeque::len).sum()
    }

    /// When the next delayed request or retry is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        self.queue.next_ready_at()
    }

    /// A Job was added, changed or deleted.
    pub fn on_job(&mut self, old: Option<&Job>, new: Option<&Job>) {
        match (old, new) {
            (_, None) => {
                if let Some(old) = old {
                    let key = key_of(
                        old.metadata.namespace.as_ref(),
                        old.metadata.name.as_deref().unwrap_or_default(),
                    );
                    self.requests.remove(&key);
                    self.delayed.remove(&key);
                    self.terminating.remove(&key);
                    self.refusals.remove(&key);
                }
            }
            (Some(old), Some(new)) => {
                let phase = |j: &Job| j.status.as_ref().map(|s| s.state.phase.clone());
                if old.spec != new.spec || phase(old) != phase(new) {
                    self.enqueue_job(new, Request::sync());
                }
            }
            (None, Some(new)) => self.enqueue_job(new, Request::sync()),
        }
    }

    fn enqueue_job(&mut self, job: &Job, req: Request) {
        let key = key_of(
            job.metadata.namespace.as_ref(),
            job.metadata.name.as_deref().unwrap_or_default(),
        );
        self.enqueue(key, req);
    }

    /// A pod was added, changed or deleted; only pods a Job controls matter.
    pub fn on_pod(&mut self, old: Option<&Pod>, new: Option<&Pod>, view: &ClusterView<'_>) {
        let Some(pod) = new.or(old) else {
            return;
        };
        let Some(job_name) = owning_job(pod) else {
            return;
        };
        let (Some(task), Some(version)) = (
            annotation(pod, keys::TASK_SPEC),
            annotation(pod, keys::JOB_VERSION).and_then(|v| v.parse::<i32>().ok()),
        ) else {
            return;
        };
        let job_uid = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.kind == "Job")
            .map(|o| o.uid.clone())
            .unwrap_or_default();
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let key = JobKey::new(namespace.clone(), job_name);
        let mut exit_code = 0;
        let event = match (old, new) {
            (None, Some(_)) => BusEvent::PodPending,
            (Some(_), None) => BusEvent::PodEvicted,
            (Some(old), Some(new)) => {
                let before = pod_phase(old);
                match pod_phase(new) {
                    "Failed" if before != "Failed" => {
                        exit_code = first_exit_code(new);
                        BusEvent::PodFailed
                    }
                    "Succeeded" if before != "Succeeded" && task_completed(view, &key, task) => {
                        BusEvent::TaskCompleted
                    }
                    "Running" if before != "Running" => BusEvent::PodRunning,
                    "Pending" if before != "Pending" => BusEvent::PodPending,
                    "Running" | "Pending" if task_failed(view, &key, task) => BusEvent::TaskFailed,
                    _ => BusEvent::OutOfSync,
                }
            }
            (None, None) => return,
        };
        let event = if is_out_of_sync(pod) {
            BusEvent::OutOfSync
        } else {
            event
        };
        let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
        let phase_now = new.map(pod_phase);
        self.cancel_delayed_for_pod(&key, &pod_uid, event, phase_now);
        self.enqueue(
            key,
            Request {
                event,
                action: None,
                job_uid,
                task: task.to_string(),
                pod: pod.metadata.name.clone().unwrap_or_default(),
                pod_uid,
                exit_code,
                job_version: version,
            },
        );
    }

    /// A pod moving on makes a delayed action about its earlier state moot: a pod that left
    /// Pending (or is gone) cancels its PodPending timeout, a pod that runs again cancels its
    /// failure's. A pod still Pending keeps its timeout whatever else changed on it (the
    /// scheduler's `PodScheduled` condition, an annotation), as in Volcano, where only
    /// PodRunning, PodFailed and PodEvicted clean a pod's delayed actions.
    fn cancel_delayed_for_pod(
        &mut self,
        key: &JobKey,
        pod_uid: &str,
        event: BusEvent,
        phase_now: Option<&str>,
    ) {
        let Some(list) = self.delayed.get_mut(key) else {
            return;
        };
        list.retain(|d| {
            if d.request.pod_uid != pod_uid || pod_uid.is_empty() {
                return true;
            }
            let moot = match d.request.event {
                BusEvent::PodPending => phase_now != Some("Pending"),
                BusEvent::PodFailed | BusEvent::PodEvicted => event == BusEvent::PodRunning,
                _ => false,
            };
            !moot
        });
    }

    /// A PodGroup changed: a phase change is news for its job, and a PodGroup that has just
    /// become unschedulable earns its job a warning.
    pub fn on_pod_group(
        &mut self,
        old: Option<&PodGroup>,
        new: Option<&PodGroup>,
        view: &ClusterView<'_>,
    ) -> Option<Event> {
        let (Some(old), Some(new)) = (old, new) else {
            if let Some(uid) = old.and_then(|pg| pg.metadata.uid.as_ref()) {
                self.warned.remove(uid);
            }
            return None;
        };
        let job_name = new
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.kind == "Job")
            .map(|o| o.name.clone())?;
        let key = key_of(new.metadata.namespace.as_ref(), &job_name);
        let phase = |pg: &PodGroup| {
            pg.status
                .as_ref()
                .map(|s| s.phase.clone())
                .unwrap_or_default()
        };
        if phase(old) != phase(new) {
            let event = if phase(new) == pg_phase::UNKNOWN {
                BusEvent::Unknown
            } else {
                BusEvent::OutOfSync
            };
            self.enqueue(key.clone(), Request::event(event));
        }
        let job = view.job(&key.namespace, &key.name)?;
        self.warn_once(job, old, new, view)
    }

    /// The job's warning for a PodGroup transition, unless it is stale or already given.
    /// Watch events come twice (a relist, a reconnect) and in another order than the writes
    /// (separate streams): a transition is reported only while the PodGroup, as the cache
    /// holds it now, still has the newest condition the event says, and once per condition.
    fn warn_once(
        &mut self,
        job: &Job,
        old: &PodGroup,
        new: &PodGroup,
        view: &ClusterView<'_>,
    ) -> Option<Event> {
        let newest = |pg: &PodGroup| -> Option<PodGroupCondition> {
            pg.status.as_ref()?.newest_true_condition().cloned()
        };
        let reported = newest(new)?;
        let ns = new.metadata.namespace.as_deref().unwrap_or_default();
        let name = new.metadata.name.as_deref().unwrap_or_default();
        let current = view.pod_group(ns, name).and_then(newest);
        if current.is_none_or(|c| c.type_ != reported.type_) {
            return None;
        }
        let event = sync::pod_group_event(job, old, new)?;
        let uid = new.metadata.uid.clone().unwrap_or_default();
        let id = (reported.type_, reported.last_transition_time);
        if self.warned.get(&uid) == Some(&id) {
            return None;
        }
        self.warned.insert(uid, id);
        Some(event)
    }

    /// A Command for a job: carry out its action.
    pub fn on_command(&mut self, key: JobKey, action: BusAction) {
        let mut req = Request::event(BusEvent::CommandIssued);
        req.action = Some(action);
        self.enqueue(key, req);
    }

    /// Takes the next job that is due and carries out one of its requests. Returns `None` when
    /// nothing is due.
    pub fn next(&mut self, env: &JobEnv<'_, '_>) -> Option<Result<JobWork, (JobKey, SyncError)>> {
        loop {
            let key = self.queue.pop(env.now)?;
            self.promote_due(&key, env.now);
            let req = self
                .requests
                .get_mut(&key)
                .and_then(VecDeque::pop_front)
                .unwrap_or_else(Request::sync);
            let Some(job) = env.view.job(&key.namespace, &key.name) else {
                // The job is gone; what was queued for it is moot.
                self.requests.remove(&key);
                self.refusals.remove(&key);
                self.delayed.remove(&key);
                self.terminating.remove(&key);
                self.queue.forget(&key);
                self.queue.done(&key);
                continue;
            };
            if let Some(work) = self.collect_if_expired(&key, job, env.now) {
                self.in_flight.insert(
                    key.clone(),
                    InFlight {
                        request: req,
                        action: None,
                    },
                );
                return Some(Ok(work));
            }
            let decision = decide(job, &req);
            if let (Some(delay), None) = (decision.delay, req.action) {
                let mut later = req.clone();
                later.action = Some(decision.action);
                let due = env.now.after(delay);
                self.delayed.entry(key.clone()).or_default().push(Delayed {
                    due,
                    request: later,
                });
                self.queue.done(&key);
                self.requeue_if_pending(&key);
                self.queue.add_after(key, due);
                continue;
            }
            if !matches!(decision.action, BusAction::SyncJob) {
                // A real action supersedes the job's other timeouts, waiting or already due.
                self.delayed.remove(&key);
                if let Some(pending) = self.requests.get_mut(&key) {
                    pending.retain(|r| r.action.is_none() || r.event == BusEvent::CommandIssued);
                }
            }
            let phase = job
                .status
                .as_ref()
                .map(|s| s.state.phase.as_str())
                .unwrap_or_default();
            let plan = plan_for(phase, decision.action);
            self.in_flight.insert(
                key.clone(),
                InFlight {
                    request: req.clone(),
                    action: Some(decision.action),
                },
            );
            return Some(match sync::execute(job, plan, &req, env) {
                Ok(changes) => Ok(JobWork { key, changes }),
                Err(e) => Err((key, e)),
            });
        }
    }

    /// A finished job with `ttlSecondsAfterFinished` is deleted once that long has passed
    /// since it finished; until then its key waits for the moment.
    fn collect_if_expired(&mut self, key: &JobKey, job: &Job, now: Instant) -> Option<JobWork> {
        let ttl = u64::try_from(job.spec.ttl_seconds_after_finished?).ok()?;
        let status = job.status.as_ref()?;
        if !volcano_api::batch::job_phase::is_finished(&status.state.phase) {
            return None;
        }
        let finished = Instant::from_time(status.state.last_transition_time.as_ref()?);
        let due = finished.after(std::time::Duration::from_secs(ttl));
        if now < due {
            self.queue.add_after(key.clone(), due);
            return None;
        }
        Some(JobWork {
            key: key.clone(),
            changes: vec![Change::DeleteJob {
                namespace: key.namespace.clone(),
                name: key.name.clone(),
            }],
        })
    }

    fn promote_due(&mut self, key: &JobKey, now: Instant) {
        let Some(list) = self.delayed.get_mut(key) else {
            return;
        };
        let (due, waiting): (Vec<Delayed>, Vec<Delayed>) =
            list.drain(..).partition(|d| d.due <= now);
        *list = waiting;
        let next = list.iter().map(|d| d.due).min();
        if list.is_empty() {
            self.delayed.remove(key);
        }
        let pending = self.requests.entry(key.clone()).or_default();
        for d in due.into_iter().rev() {
            pending.push_front(d.request);
        }
        if let Some(at) = next {
            self.queue.add_after(key.clone(), at);
        }
    }

    fn requeue_if_pending(&mut self, key: &JobKey) {
        if self.requests.get(key).is_some_and(|r| !r.is_empty()) {
            self.queue.add(key.clone());
        } else {
            self.requests.remove(key);
        }
    }

    /// Reports how the changes of a turn went. A failed turn is retried with backoff, its
    /// request first. When the retry budget is spent the job is terminated and its resources
    /// released, as Volcano does, with a warning event; a TerminateJob that itself runs out of
    /// retries drops the job from the queue until its next watch event.
    pub fn finish(&mut self, key: &JobKey, ok: bool, now: Instant) -> Option<Event> {
        let turn = self.in_flight.remove(key);
        if ok {
            self.refusals.remove(key);
            if turn.as_ref().and_then(|t| t.action) == Some(BusAction::TerminateJob) {
                self.terminating.remove(key);
            }
            self.queue.forget(key);
            self.queue.done(key);
            self.requeue_if_pending(key);
            return None;
        }
        let action = turn.as_ref().and_then(|t| t.action);
        if let Some(turn) = turn {
            let pending = self.requests.entry(key.clone()).or_default();
            if !pending.contains(&turn.request) {
                pending.push_front(turn.request);
            }
        }
        let retry = self.queue.retry(key.clone(), now);
        self.queue.done(key);
        let Retry::GaveUp { attempts } = retry else {
            return None;
        };
        self.requests.remove(key);
        self.delayed.remove(key);
        let action = action.map_or_else(|| "Sync".to_string(), |a| format!("{a:?}"));
        let message = if self.terminating.remove(key) {
            format!(
                "could not terminate the job after {attempts} attempts; it is dropped from the \
                 work queue until it next changes"
            )
        } else {
            self.terminating.insert(key.clone());
            let mut terminate = Request::event(BusEvent::CommandIssued);
            terminate.action = Some(BusAction::TerminateJob);
            self.enqueue(key.clone(), terminate);
            format!(
                "Job failed on action {action} for retry limit reached ({attempts} attempts); \
                 terminating it and releasing its resources"
            )
        };
        // Volcano records this as a Normal event; it is a failure, so it is a Warning here,
        // where `kubectl get events --field-selector type=Warning` finds it.
        Some(Event {
            object: ObjectRef::new(ObjectKind::Job, key.clone()),
            type_: volcano_api::event::EventType::Warning,
            reason: "ExecuteAction".to_string(),
            message,
        })
    }
}

fn first_exit_code(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref())
        .map_or(0, |t| t.exit_code)
}

/// Whether every replica of the task has succeeded.
fn task_completed(view: &ClusterView<'_>, key: &JobKey, task: &str) -> bool {
    let Some(spec) = view
        .job(&key.namespace, &key.name)
        .and_then(|j| j.spec.tasks.iter().find(|t| t.name == task))
    else {
        return false;
    };
    let succeeded = view
        .pods_of_job(&key.namespace, &key.name)
        .into_iter()
        .filter(|p| annotation(p, keys::TASK_SPEC) == Some(task) && pod_phase(p) == "Succeeded")
        .count();
    spec.replicas > 0 && succeeded >= usize::try_from(spec.replicas).unwrap_or(usize::MAX)
}

/// Whether the task's live pods have restarted `maxRetry` times between them (default 3,
/// `-1` for never).
fn task_failed(view: &ClusterView<'_>, key: &JobKey, task: &str) -> bool {
    let Some(spec) = view
        .job(&key.namespace, &key.name)
        .and_then(|j| j.spec.tasks.iter().find(|t| t.name == task))
    else {
        return false;
    };
    let max_retry = match spec.max_retry {
        Some(-1) => return false,
        None | Some(0) => 3,
        Some(n) => n,
    };
    if spec.replicas == 0 {
        return false;
    }
    let restarts: i32 = view
        .pods_of_job(&key.namespace, &key.name)
        .into_iter()
        .filter(|p| annotation(p, keys::TASK_SPEC) == Some(task))
        .filter(|p| matches!(pod_phase(p), "Running" | "Pending"))
        .filter_map(|p| p.status.as_ref())
        .flat_map(|s| {
            s.init_container_statuses
                .iter()
                .flatten()
                .chain(s.container_statuses.iter().flatten())
        })
        .map(|c| c.restart_count)
        .sum();
    restarts >= max_retry
}
