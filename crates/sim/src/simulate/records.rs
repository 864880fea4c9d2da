//! Each job's life: submitted, first pod running, final phase. A job is a Volcano Job, a
//! PodGroup of bare pods, or a bare pod of ours that names no group (the PodGroup controller
//! gives it one of its own).

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use volcano_api::batch::job_phase;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::keys;
use volcano_api::scheduling::phase as pg_phase;
use volcano_api::{NamespacedName, Objects};
use volcano_controllers::change::Change;
use volcano_controllers::job::state::DEFAULT_MAX_RETRY;
use volcano_controllers::time::Instant;
use volcano_controllers::view::{owning_job, pod_group_queue};

use super::kubelet::{is_terminal, node_of, phase};
use super::plan::{Plan, Submission, group_name};
use super::why::{JobTrail, PodFailure, WaitAccount, failure, pod_evicted, pod_failure};
use crate::metrics::{JobRecord, NetworkTopologyRecord};

type Key = NamespacedName;

fn key_of(meta: &volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Key {
    NamespacedName::new(
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

fn seconds(t: Instant) -> f64 {
    t.0.as_secs_f64()
}

/// What a record follows.
#[derive(Debug, Clone)]
enum Kind {
    /// A Volcano Job: its phase says when it is over.
    Job,
    /// Bare pods: over when every one has ended or is gone. The last one's submission time.
    Bare {
        members: Vec<Key>,
        last_submitted: Duration,
    },
}

#[derive(Debug, Clone)]
struct Rec {
    key: Key,
    record: JobRecord,
    kind: Kind,
    submitted: Duration,
    /// Time under each why-pending message of its PodGroup.
    wait: WaitAccount,
    /// The last pod failure before the job ended.
    last_failure: Option<PodFailure>,
    /// What the job controller wrote, for a Volcano Job.
    trail: Option<JobTrail>,
    /// The nodes its pods ran on.
    nodes: BTreeSet<String>,
}

/// The records of a run, kept current from what the kubelets, controllers and sessions do.
#[derive(Debug, Clone, Default)]
pub struct Records {
    recs: Vec<Rec>,
    jobs: HashMap<Key, usize>,
    groups: HashMap<Key, usize>,
    lone: HashMap<Key, usize>,
    members: HashMap<Key, usize>,
    /// PodGroup → the record it schedules (a Job's, a bare group's, a lone pod's).
    pod_groups: HashMap<Key, usize>,
    /// A Job's pods the controllers made and have not deleted → the Job's record, so a
    /// session's eviction (which deletes the pod unseen) can be told.
    job_pods: HashMap<Key, usize>,
    /// Bare records to look at again: a member ended or went away.
    to_check: BTreeSet<usize>,
    unfinished: usize,
}

impl Records {
    /// One record per job the plan will submit, in submission order (the plan's submissions
    /// are in time order and everything initial is submitted at zero).
    pub fn new(plan: &Plan, scheduler_names: &[String]) -> Self {
        let mut r = Records::default();
        let ours = |p: &Pod| {
            let name = p.spec.as_ref().and_then(|s| s.scheduler_name.as_deref());
            let name = name.unwrap_or("default-scheduler");
            if scheduler_names.is_empty() {
                name == keys::DEFAULT_SCHEDULER_NAME
            } else {
                scheduler_names.iter().any(|n| n == name)
            }
        };
        let initial = &plan.initial;
        let later = plan.submissions.iter();
        let all = initial
            .jobs
            .iter()
            .map(|j| (Duration::ZERO, Item::Job(j)))
            .chain(
                initial
                    .pod_groups
                    .iter()
                    .map(|g| (Duration::ZERO, Item::Group(g))),
            )
            .chain(initial.pods.iter().map(|p| (Duration::ZERO, Item::Pod(p))))
            .chain(later.filter_map(|(t, s)| {
                Some((
                    *t,
                    match s {
                        Submission::Job(j) => Item::Job(j),
                        Submission::PodGroup(g) => Item::Group(g),
                        Submission::Pod(p) => Item::Pod(p),
                        _ => return None,
                    },
                ))
            }));
        for (t, item) in all {
            match item {
                Item::Job(j) => {
                    let pods = j.spec.tasks.iter().map(|t| t.replicas.max(0)).sum::<i32>();
                    let queue = if j.spec.queue.is_empty() {
                        keys::DEFAULT_QUEUE.to_string()
                    } else {
                        j.spec.queue.clone()
                    };
                    let i = r.push(key_of(&j.metadata), queue, pods, t, Kind::Job);
                    r.recs[i].trail = Some(trail_of(j));
                    let min = j.spec.min_available.unwrap_or(pods);
                    r.recs[i].record.min_member = u32::try_from(min).unwrap_or(0);
                    r.recs[i].record.network_topology =
                        network_topology(j.spec.network_topology.as_ref());
                    r.jobs.insert(key_of(&j.metadata), i);
                }
                Item::Group(g) => {
                    let owned = g.metadata.owner_references.iter().flatten();
                    if owned.clone().any(|o| o.kind == "Job") {
                        r.group_created(g);
                        continue;
                    }
                    let bare = Kind::Bare {
                        members: Vec::new(),
                        last_submitted: t,
                    };
                    let i = r.push(
                        key_of(&g.metadata),
                        pod_group_queue(g).to_string(),
                        0,
                        t,
                        bare,
                    );
                    r.groups.insert(key_of(&g.metadata), i);
                    r.pod_groups.insert(key_of(&g.metadata), i);
                    r.recs[i].record.min_member = u32::try_from(g.spec.min_member).unwrap_or(0);
                    r.recs[i].record.network_topology =
                        network_topology(g.spec.network_topology.as_ref());
                }
                Item::Pod(p) => {
                    if owning_job(p).is_some() || !ours(p) {
                        continue;
                    }
                    let key = key_of(&p.metadata);
                    let i = match group_name(p) {
                        Some(g) => match r
                            .groups
                            .get(&NamespacedName::new(key.namespace.as_str(), g))
                        {
                            Some(&i) => i,
                            None => continue,
                        },
                        None => {
                            let queue = p
                                .metadata
                                .annotations
                                .as_ref()
                                .and_then(|a| a.get(keys::POD_QUEUE_NAME))
                                .cloned()
                                .unwrap_or_else(|| keys::DEFAULT_QUEUE.to_string());
                            let bare = Kind::Bare {
                                members: Vec::new(),
                                last_submitted: t,
                            };
                            let i = r.push(key.clone(), queue, 0, t, bare);
                            r.lone.insert(key.clone(), i);
                            i
                        }
                    };
                    r.members.insert(key.clone(), i);
                    let rec = &mut r.recs[i];
                    rec.record.pods += 1;
                    if let Kind::Bare {
                        members,
                        last_submitted,
                    } = &mut rec.kind
                    {
                        members.push(key);
                        *last_submitted = (*last_submitted).max(t);
                    }
                }
            }
        }
        r
    }

    fn push(&mut self, key: Key, queue: String, pods: i32, t: Duration, kind: Kind) -> usize {
        self.unfinished += 1;
        self.recs.push(Rec {
            record: JobRecord {
                name: format!("{}/{}", key.namespace, key.name),
                queue,
                pods: u32::try_from(pods).unwrap_or(0),
                submitted_s: t.as_secs_f64(),
                phase: job_phase::PENDING.to_string(),
                ..Default::default()
            },
            kind,
            submitted: t,
            key,
            wait: WaitAccount::default(),
            last_failure: None,
            trail: None,
            nodes: BTreeSet::new(),
        });
        self.recs.len() - 1
    }

    /// How many records.
    pub fn count(&self) -> usize {
        self.recs.len()
    }

    /// The queue of record `i`.
    pub fn queue(&self, i: usize) -> &str {
        &self.recs[i].record.queue
    }

    /// How many have not finished.
    pub fn unfinished(&self) -> usize {
        self.unfinished
    }

    /// The record a pod counts for.
    pub fn record_of(&self, pod: &Pod) -> Option<usize> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        if let Some(job) = owning_job(pod) {
            return self.jobs.get(&NamespacedName::new(ns, job)).copied();
        }
        if let Some(&i) = self.lone.get(&key_of(&pod.metadata)) {
            return Some(i);
        }
        group_name(pod).and_then(|g| self.groups.get(&NamespacedName::new(ns, g)).copied())
    }

    /// A pod changed (`new` none: it is gone): a first run starts its job's clock; an end or
    /// a disappearance may finish a job of bare pods.
    pub fn pod_changed(&mut self, old: Option<&Pod>, new: Option<&Pod>, now: Instant) {
        let Some(i) = new.or(old).and_then(|p| self.record_of(p)) else {
            return;
        };
        let rec = &mut self.recs[i];
        if let Some(p) = new
            && phase(p) == "Failed"
            && old.is_none_or(|o| phase(o) != "Failed")
            && rec.record.finished_s.is_none()
        {
            rec.last_failure = Some(pod_failure(p));
        }
        match new {
            Some(p) if phase(p) == "Running" => {
                if rec.record.started_s.is_none() {
                    rec.record.started_s = Some(seconds(now));
                }
                if let Some(node) = node_of(p) {
                    rec.nodes.insert(node.to_string());
                }
            }
            Some(p) if !is_terminal(p) => {}
            _ => {
                if matches!(rec.kind, Kind::Bare { .. }) {
                    self.to_check.insert(i);
                }
            }
        }
    }

    /// A pod went away without a watch event this side saw (a session evicted it).
    pub fn pod_gone(&mut self, pod: &NamespacedName) {
        if let Some(&i) = self.members.get(pod) {
            self.to_check.insert(i);
        }
    }

    /// A session evicted `pod`, saying `why`.
    pub fn pod_evicted(&mut self, pod: &NamespacedName, why: &str) {
        let i = self.job_pods.get(pod).or_else(|| self.members.get(pod));
        if let Some(&i) = i
            && let Some(rec) = self.recs.get_mut(i)
            && rec.record.finished_s.is_none()
        {
            rec.last_failure = Some(pod_evicted(&pod.to_string(), why));
        }
    }

    /// A PodGroup appeared (planned or made by a controller): the record it schedules, found
    /// through its owner (a Job, a lone pod) or, for a group of bare pods, its own name.
    fn group_created(&mut self, g: &volcano_api::scheduling::PodGroup) {
        let key = key_of(&g.metadata);
        let owner = |kind: &str| {
            g.metadata
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.kind == kind)
                .map(|o| NamespacedName::new(key.namespace.as_str(), o.name.as_str()))
        };
        let i = owner("Job")
            .and_then(|j| self.jobs.get(&j))
            .or_else(|| owner("Pod").and_then(|p| self.lone.get(&p)))
            .or_else(|| self.groups.get(&key))
            .copied();
        if let Some(i) = i {
            self.pod_groups.insert(key, i);
        }
    }

    /// After a session: each PodGroup not yet running waits under the why-pending message
    /// the session wrote for it (none: it waits for no reason the scheduler gave).
    pub fn session_reasons(&mut self, d: &volcano_scheduler::framework::Decisions, now: Instant) {
        for u in &d.pod_groups {
            let Some(&i) = self.pod_groups.get(&u.key) else {
                continue;
            };
            let rec = &mut self.recs[i];
            if rec.record.finished_s.is_some() {
                continue;
            }
            let waiting = matches!(
                u.status.phase.as_str(),
                pg_phase::PENDING | pg_phase::INQUEUE
            );
            let why = waiting.then(|| d.unschedulable.get(&u.key)).flatten();
            rec.wait.observe(why.map(|x| x.message.as_str()), now);
            rec.wait.observe_reason(why.map(|x| x.reason.as_str()), now);
        }
    }

    /// A change the controllers made: a Job's creation, its phase, or its deletion.
    pub fn controller_change(&mut self, c: &Change, now: Instant) {
        match c {
            Change::UpdateJobStatus {
                namespace,
                name,
                status,
            } => {
                let phase = &status.state.phase;
                if let Some(&i) = self
                    .jobs
                    .get(&NamespacedName::new(namespace.as_str(), name.as_str()))
                    && !phase.is_empty()
                {
                    let rec = &mut self.recs[i];
                    if let Some(t) = rec.trail.as_mut()
                        && rec.record.finished_s.is_none()
                    {
                        // Running again after a restart: the failure that restarted it is
                        // history, and whatever ends this run is told instead.
                        if phase == job_phase::RUNNING
                            && t.phases.last().is_some_and(|p| p != job_phase::RUNNING)
                            && t.phases.iter().any(|p| p == job_phase::RESTARTING)
                        {
                            rec.last_failure = None;
                        }
                        t.phase(phase);
                        t.retries = status.retry_count;
                        t.state_reason.clone_from(&status.state.reason);
                        t.state_message.clone_from(&status.state.message);
                    }
                    let over = job_phase::is_finished(phase) || phase == job_phase::ABORTED;
                    self.set_phase(i, phase, over.then_some(now));
                }
            }
            // A CronJob's run: submitted when its controller creates it.
            Change::CreateJob(j) => {
                let key = key_of(&j.metadata);
                if !self.jobs.contains_key(&key) {
                    let pods = j.spec.tasks.iter().map(|t| t.replicas.max(0)).sum::<i32>();
                    let queue = if j.spec.queue.is_empty() {
                        keys::DEFAULT_QUEUE.to_string()
                    } else {
                        j.spec.queue.clone()
                    };
                    let i = self.push(key.clone(), queue, pods, now.0, Kind::Job);
                    self.recs[i].trail = Some(trail_of(j));
                    self.jobs.insert(key, i);
                }
            }
            Change::CreatePodGroup(g) => self.group_created(g),
            Change::CreatePod(p) if owning_job(p).is_some() => {
                if let Some(i) = self.record_of(p) {
                    self.job_pods.insert(key_of(&p.metadata), i);
                }
            }
            Change::DeletePod { namespace, name } => {
                self.job_pods
                    .remove(&NamespacedName::new(namespace.as_str(), name.as_str()));
            }
            Change::DeleteJob { namespace, name } => {
                if let Some(&i) = self
                    .jobs
                    .get(&NamespacedName::new(namespace.as_str(), name.as_str()))
                {
                    let phase = self.recs[i].record.phase.clone();
                    self.set_phase(i, &phase, Some(now));
                }
            }
            _ => {}
        }
    }

    fn set_phase(&mut self, i: usize, phase: &str, finished: Option<Instant>) {
        let rec = &mut self.recs[i];
        rec.record.phase = phase.to_string();
        if let Some(t) = finished
            && rec.record.finished_s.is_none()
        {
            rec.wait.close(t);
            rec.record.finished_s = Some(seconds(t));
            self.unfinished = self.unfinished.saturating_sub(1);
        }
    }

    /// Finishes the bare jobs whose pods have all ended or gone, once all were submitted.
    pub fn check_bare(&mut self, objects: &Objects, now: Instant) {
        for i in std::mem::take(&mut self.to_check) {
            if let Some(phase) = self.bare_outcome(i, objects, now) {
                self.set_phase(i, phase, Some(now));
            }
        }
    }

    /// A bare job's final phase, if it is over: Completed when every pod succeeded, else
    /// Failed (a pod failed, was lost or was evicted).
    fn bare_outcome(&self, i: usize, objects: &Objects, now: Instant) -> Option<&'static str> {
        let rec = &self.recs[i];
        let Kind::Bare {
            members,
            last_submitted,
        } = &rec.kind
        else {
            return None;
        };
        if rec.record.finished_s.is_some() || now.0 < *last_submitted {
            return None;
        }
        let mut all_succeeded = true;
        for m in members {
            let pod = objects.pods.iter().find(|p| {
                p.metadata.namespace.as_deref() == Some(m.namespace.as_str())
                    && p.metadata.name.as_deref() == Some(m.name.as_str())
            });
            match pod {
                Some(p) if !is_terminal(p) => return None,
                Some(p) if phase(p) == "Succeeded" => {}
                _ => all_succeeded = false,
            }
        }
        Some(if all_succeeded {
            pg_phase::COMPLETED
        } else {
            job_phase::FAILED
        })
    }

    /// Indexes of the records submitted by `t` and not finished.
    pub fn open_at(&self, t: Instant) -> impl Iterator<Item = usize> + '_ {
        self.recs
            .iter()
            .enumerate()
            .filter(move |(_, r)| r.submitted <= t.0 && r.record.finished_s.is_none())
            .map(|(i, _)| i)
    }

    /// The records, with final phases read from the objects for jobs still going, and the
    /// why-pending accounts closed at `end`.
    pub fn finish(self, objects: &Objects, running: &[u32], end: Instant) -> Vec<JobRecord> {
        let mut out = Vec::with_capacity(self.recs.len());
        for (i, rec) in self.recs.into_iter().enumerate() {
            let mut r = rec.record;
            if r.finished_s.is_none() {
                match rec.kind {
                    Kind::Job => {
                        let key = &rec.key;
                        let found = objects.jobs.iter().find(|j| {
                            j.metadata.namespace.as_deref() == Some(key.namespace.as_str())
                                && j.metadata.name.as_deref() == Some(key.name.as_str())
                        });
                        if let Some(p) = found
                            .and_then(|j| j.status.as_ref())
                            .map(|s| s.state.phase.clone())
                            .filter(|p| !p.is_empty())
                        {
                            r.phase = p;
                        }
                    }
                    Kind::Bare { .. } => {
                        let running = running.get(i).copied().unwrap_or(0) > 0;
                        r.phase = if running {
                            pg_phase::RUNNING
                        } else {
                            pg_phase::PENDING
                        }
                        .to_string();
                    }
                }
            }
            r.wait_s = r.started_s.map(|s| s - r.submitted_s);
            r.completion_s = r.finished_s.map(|f| f - r.submitted_s);
            if let Some(t) = r.network_topology.as_mut() {
                t.network_topology_wait_s = rec.wait.network_topology_wait(end).as_secs_f64();
            }
            r.nodes = rec.nodes.into_iter().collect();
            r.waited = rec.wait.records(end);
            let failed = r.finished_s.is_some() && r.phase != job_phase::COMPLETED;
            if failed {
                let (pod, trail) = (rec.last_failure.as_ref(), rec.trail.as_ref());
                r.failure = Some(failure(&r.phase, pod, trail));
            }
            out.push(r);
        }
        out
    }
}

enum Item<'a> {
    Job(&'a volcano_api::batch::Job),
    Group(&'a volcano_api::scheduling::PodGroup),
    Pod(&'a Pod),
}

/// The record of a Job's or PodGroup's `networkTopology`, when it has one (`hard` when the
/// mode is left empty, as Volcano defaults it).
fn network_topology(
    t: Option<&volcano_api::scheduling::NetworkTopologySpec>,
) -> Option<NetworkTopologyRecord> {
    t.map(|t| NetworkTopologyRecord {
        mode: if t.mode.is_empty() {
            "hard".to_string()
        } else {
            t.mode.clone()
        },
        highest_tier_allowed: t.highest_tier_allowed,
        network_topology_wait_s: 0.0,
    })
}

/// A new Job's trail: no phase yet, its `maxRetry` as Volcano's webhook defaults it.
fn trail_of(j: &volcano_api::batch::Job) -> JobTrail {
    JobTrail {
        max_retry: j.spec.max_retry.unwrap_or(DEFAULT_MAX_RETRY),
        ..Default::default()
    }
}
