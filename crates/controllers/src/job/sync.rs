//! Carrying out a plan for one job: syncing its PodGroup and pods, or killing pods, then
//! counting them and moving the phase. Returns the changes; writes nothing itself.

use std::collections::{BTreeMap, BTreeSet};

use volcano_api::batch::{Job, JobCondition, JobStatus, TaskState, job_phase};
use volcano_api::event::{Event, EventType};
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::keys;
use volcano_api::scheduling::{PodGroup, phase as pg_phase};
use volcano_api::{ObjectKind, ObjectRef};

use super::build;
use super::request::Request;
use super::state::{Plan, Retain, Work, apply_rule};
use crate::change::{Change, Owned};
use crate::job_plugins::{self, JobPlugin, PluginContext, PluginError};
use crate::time::Instant;
use crate::view::{ClusterView, pod_annotation as annotation};

/// Why a job could not be reconciled this time; it is retried with backoff.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncError {
    /// The job's queue does not exist (yet).
    #[error("Job {job}: queue {queue} does not exist")]
    QueueMissing {
        /// `ns/name` of the job.
        job: String,
        /// The queue named.
        queue: String,
    },
    /// A controller plugin failed.
    #[error("Job {job}: {source}")]
    Plugin {
        /// `ns/name` of the job.
        job: String,
        /// The plugin's error.
        source: PluginError,
    },
}

/// What the job controller reads besides the job.
pub struct JobEnv<'a, 'v> {
    /// The cluster.
    pub view: &'a ClusterView<'v>,
    /// The present time.
    pub now: Instant,
    /// What plugins need.
    pub plugins: &'a PluginContext<'a>,
}

impl JobEnv<'_, '_> {
    fn priority_of(&self, class: &str) -> Option<i32> {
        if class.is_empty() {
            return None;
        }
        self.view
            .objects()
            .priority_classes
            .iter()
            .find(|pc| pc.metadata.name.as_deref() == Some(class))
            .map(|pc| pc.value)
    }
}

fn job_id(job: &Job) -> String {
    format!(
        "{}/{}",
        job.metadata.namespace.as_deref().unwrap_or_default(),
        job.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Carries out `plan` for `job`, prompted by `req`.
pub fn execute(
    job: &Job,
    plan: Plan,
    req: &Request,
    env: &JobEnv<'_, '_>,
) -> Result<Vec<Change>, SyncError> {
    if job.metadata.deletion_timestamp.is_some() {
        return Ok(Vec::new());
    }
    match plan.work {
        Work::Sync => sync(job, plan, env),
        Work::KillJob(retain) => kill(job, plan, Some(retain), None, env),
        Work::KillTarget => kill(job, plan, None, Some(req), env),
    }
}

/// The job's PodGroup: `<job>-<uid>`, or the legacy `<job>`.
pub fn find_pod_group<'v>(job: &Job, view: &ClusterView<'v>) -> Option<&'v PodGroup> {
    let ns = job.metadata.namespace.as_deref().unwrap_or_default();
    let name = job.metadata.name.as_deref().unwrap_or_default();
    view.pod_group(ns, &build::pod_group_name(job))
        .or_else(|| view.pod_group(ns, name))
}

fn plugins_of<'a>(
    job: &Job,
    env: &JobEnv<'a, '_>,
) -> Result<Vec<Box<dyn JobPlugin + 'a>>, SyncError> {
    job_plugins::plugins_of(job, env.plugins).map_err(|source| SyncError::Plugin {
        job: job_id(job),
        source,
    })
}

fn sync(job: &Job, plan: Plan, env: &JobEnv<'_, '_>) -> Result<Vec<Change>, SyncError> {
    if job.status.as_ref().is_none_or(|s| s.state.phase.is_empty())
        && let Err(e) = crate::admission::validate_job(job)
    {
        return Ok(refuse(job, &e, env.now));
    }
    let view = env.view;
    let ns = job.metadata.namespace.as_deref().unwrap_or_default();
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let queue = build::job_queue(job);
    if view.queue(queue).is_none() {
        return Err(SyncError::QueueMissing {
            job: job_id(job),
            queue: queue.to_string(),
        });
    }
    let old = job.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let mut changes = Vec::new();
    let plugins = plugins_of(job, env)?;
    let plugin_err = |source| SyncError::Plugin {
        job: job_id(job),
        source,
    };
    let initiated = !(old.state.phase.is_empty() || old.state.phase == job_phase::PENDING);
    if !initiated {
        if status.state.phase.is_empty() {
            status.state.phase = job_phase::PENDING.to_string();
            status.min_available = job.spec.min_available.unwrap_or(0);
        }
        for p in &plugins {
            changes.extend(
                p.on_job_add(job, &mut status.controlled_resources)
                    .map_err(plugin_err)?,
            );
        }
        changes.extend(volume_claims(job));
    } else {
        for p in &plugins {
            changes.extend(p.on_job_update(job).map_err(plugin_err)?);
        }
    }
    let pg = find_pod_group(job, view);
    changes.extend(create_or_update_pod_group(job, pg, env));

    let admitted = pg.is_some_and(|pg| {
        let phase = pg.status.as_ref().map_or("", |s| s.phase.as_str());
        !(phase.is_empty() || phase == pg_phase::PENDING)
    });
    if admitted {
        let counts = reconcile_pods(job, &plugins, env, &mut changes)?;
        counts.write_to(&mut status);
        status.min_available = job.spec.min_available.unwrap_or(0);
    }
    apply_rule(plan.rule, &job.spec, &mut status);
    changes.extend(status_change(ns, name, &old, status, env.now));
    Ok(changes)
}

/// A new Job that Volcano's admission webhook would have refused (on a cluster that runs
/// none): nothing of it is created, and it fails at once with the reason in its status and one
/// warning. The phase is persisted, so a restarted controller neither checks nor reports it
/// again.
fn refuse(job: &Job, e: &crate::admission::AdmissionError, now: Instant) -> Vec<Change> {
    let ns = job.metadata.namespace.as_deref().unwrap_or_default();
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let old = job.status.clone().unwrap_or_default();
    let mut status = old.clone();
    status.state.phase = job_phase::FAILED.to_string();
    status.state.reason = "InvalidJob".to_string();
    status.state.message = e.to_string();
    let mut changes: Vec<Change> = status_change(ns, name, &old, status, now)
        .into_iter()
        .collect();
    changes.push(Change::Event(Event {
        object: ObjectRef::of(ObjectKind::Job, &job.metadata),
        type_: EventType::Warning,
        reason: "InvalidJob".to_string(),
        message: format!("the job is not valid and will not run: {e}"),
    }));
    changes
}

/// Pods by phase, overall and per task.
#[derive(Default)]
struct Counts {
    pending: i32,
    running: i32,
    succeeded: i32,
    failed: i32,
    unknown: i32,
    terminating: i32,
    tasks: BTreeMap<String, TaskState>,
}

impl Counts {
    fn add(&mut self, pod: &Pod) {
        if pod.metadata.deletion_timestamp.is_some() {
            self.terminating += 1;
            return;
        }
        let phase = pod_phase(pod);
        match phase {
            "Pending" => self.pending += 1,
            "Running" => self.running += 1,
            "Succeeded" => self.succeeded += 1,
            "Failed" => self.failed += 1,
            _ => self.unknown += 1,
        }
        if let Some(task) = annotation(pod, keys::TASK_SPEC) {
            let phase = match phase {
                "Pending" | "Running" | "Succeeded" | "Failed" => phase,
                _ => "Unknown",
            };
            *self
                .tasks
                .entry(task.to_string())
                .or_default()
                .phase
                .entry(phase.to_string())
                .or_default() += 1;
        }
    }

    fn write_to(self, status: &mut JobStatus) {
        status.pending = self.pending;
        status.running = self.running;
        status.succeeded = self.succeeded;
        status.failed = self.failed;
        status.unknown = self.unknown;
        status.terminating = self.terminating;
        status.task_status_count = self.tasks;
    }
}

/// A pod's phase; a pod the API server has not given one yet is Pending.
pub fn pod_phase(pod: &Pod) -> &str {
    match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
        None | Some("") => "Pending",
        Some(p) => p,
    }
}

/// Whether the job controller marked the pod for deletion.
pub fn is_out_of_sync(pod: &Pod) -> bool {
    annotation(pod, keys::CONTROLLER_OUT_OF_SYNC).is_some_and(|v| v == "true")
}

/// Creates the pods the job lacks (tasks whose dependencies are ready), deletes surplus and
/// marked pods, and counts the rest.
fn reconcile_pods(
    job: &Job,
    plugins: &[Box<dyn JobPlugin + '_>],
    env: &JobEnv<'_, '_>,
    changes: &mut Vec<Change>,
) -> Result<Counts, SyncError> {
    let ns = job.metadata.namespace.as_deref().unwrap_or_default();
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let existing: BTreeMap<&str, &Pod> = env
        .view
        .pods_of_job(ns, name)
        .into_iter()
        .map(|p| (p.metadata.name.as_deref().unwrap_or_default(), p))
        .collect();
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    let mut counts = Counts::default();
    for task in &job.spec.tasks {
        let ready = depends_on_ready(job, task, &existing);
        for index in 0..task.replicas.max(0) {
            let pod_name = build::pod_name(name, &task.name, index);
            match existing.get(pod_name.as_str()) {
                Some(pod) => {
                    if pod.metadata.deletion_timestamp.is_none() && is_out_of_sync(pod) {
                        changes.push(delete_pod(ns, &pod_name));
                    }
                    counts.add(pod);
                }
                None if ready => {
                    let mut pod = build::pod(job, task, index);
                    for p in plugins {
                        p.on_pod_create(job, &mut pod)
                            .map_err(|source| SyncError::Plugin {
                                job: job_id(job),
                                source,
                            })?;
                    }
                    counts.pending += 1;
                    *counts
                        .tasks
                        .entry(task.name.clone())
                        .or_default()
                        .phase
                        .entry("Pending".to_string())
                        .or_default() += 1;
                    changes.push(Change::CreatePod(Box::new(pod)));
                }
                None => {}
            }
            wanted.insert(pod_name);
        }
    }
    for (pod_name, pod) in &existing {
        if !wanted.contains(*pod_name) && pod.metadata.deletion_timestamp.is_none() {
            changes.push(delete_pod(ns, pod_name));
            counts.terminating += 1;
        }
    }
    Ok(counts)
}

/// Whether the tasks `task` depends on are ready: each (or, with `iteration: any`, one of
/// them) has at least its `minAvailable` pods running with every container ready, or
/// succeeded.
fn depends_on_ready(
    job: &Job,
    task: &volcano_api::batch::TaskSpec,
    pods: &BTreeMap<&str, &Pod>,
) -> bool {
    let Some(deps) = &task.depends_on else {
        return true;
    };
    let job_name = job.metadata.name.as_deref().unwrap_or_default();
    let task_ready = |dep: &str| {
        let Some(dep_task) = job.spec.tasks.iter().find(|t| t.name == dep) else {
            return true;
        };
        let Some(min) = dep_task.min_available else {
            return true;
        };
        let ready = (0..dep_task.replicas.max(0))
            .filter_map(|i| pods.get(build::pod_name(job_name, dep, i).as_str()))
            .filter(|p| match pod_phase(p) {
                "Succeeded" => true,
                "Running" => p
                    .status
                    .as_ref()
                    .and_then(|s| s.container_statuses.as_ref())
                    .is_none_or(|cs| cs.iter().all(|c| c.ready)),
                _ => false,
            })
            .count();
        ready >= usize::try_from(min).unwrap_or(0)
    };
    if deps.name.len() > 1 && deps.iteration == "any" {
        deps.name.iter().any(|d| task_ready(d))
    } else {
        deps.name.iter().all(|d| task_ready(d))
    }
}

fn delete_pod(namespace: &str, name: &str) -> Change {
    Change::DeletePod {
        namespace: namespace.to_string(),
        name: name.to_string(),
    }
}

/// Creates the job's PodGroup, or updates its spec where the job's gang changed.
fn create_or_update_pod_group(
    job: &Job,
    existing: Option<&PodGroup>,
    env: &JobEnv<'_, '_>,
) -> Option<Change> {
    let priority_of = |c: &str| env.priority_of(c);
    let Some(pg) = existing else {
        return Some(Change::CreatePodGroup(Box::new(build::pod_group(
            job,
            &priority_of,
        ))));
    };
    let wanted = build::pod_group_spec(job, &priority_of);
    let mut spec = pg.spec.clone();
    let mut changed = false;
    if spec.priority_class_name != wanted.priority_class_name {
        spec.priority_class_name = wanted.priority_class_name;
        changed = true;
    }
    if spec.min_member != wanted.min_member || spec.min_resources != wanted.min_resources {
        spec.min_member = wanted.min_member;
        spec.min_resources = wanted.min_resources;
        changed = true;
    }
    if spec.network_topology != wanted.network_topology
        || spec.sub_group_policy != wanted.sub_group_policy
    {
        spec.network_topology = wanted.network_topology;
        spec.sub_group_policy = wanted.sub_group_policy;
        changed = true;
    }
    for (task, min) in wanted.min_task_member {
        if spec.min_task_member.get(&task) != Some(&min) {
            spec.min_task_member.insert(task, min);
            changed = true;
        }
    }
    changed.then(|| Change::UpdatePodGroupSpec {
        namespace: pg.metadata.namespace.clone().unwrap_or_default(),
        name: pg.metadata.name.clone().unwrap_or_default(),
        spec: Box::new(spec),
    })
}

/// Claims to create for volumes that name none.
fn volume_claims(job: &Job) -> Vec<Change> {
    let name = job.metadata.name.as_deref().unwrap_or_default();
    job.spec
        .volumes
        .iter()
        .enumerate()
        .filter(|(_, v)| v.volume_claim_name.is_empty())
        .filter_map(|(i, v)| {
            let spec = serde_json::from_value(v.volume_claim.clone()?).ok()?;
            let claim = volcano_api::k8s_openapi::api::core::v1::PersistentVolumeClaim {
                metadata: volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    name: Some(build::claim_name(name, i, "")),
                    namespace: job.metadata.namespace.clone(),
                    owner_references: Some(vec![build::controller_ref(job)]),
                    ..Default::default()
                },
                spec: Some(spec),
                status: None,
            };
            Some(Change::Create(Box::new(Owned::PersistentVolumeClaim(
                claim,
            ))))
        })
        .collect()
}

/// The status write, if the status changed. A phase change stamps the transition time and
/// records the phase's condition (one per phase, newest last).
fn status_change(
    namespace: &str,
    name: &str,
    old: &JobStatus,
    mut status: JobStatus,
    now: Instant,
) -> Option<Change> {
    if status == *old {
        return None;
    }
    if status.state.phase != old.state.phase {
        let t = now.to_time();
        status.state.last_transition_time = Some(t.clone());
        status.conditions.retain(|c| c.status != status.state.phase);
        status.conditions.push(JobCondition {
            status: status.state.phase.clone(),
            last_transition_time: Some(t),
        });
    }
    Some(Change::UpdateJobStatus {
        namespace: namespace.to_string(),
        name: name.to_string(),
        status: Box::new(status),
    })
}

/// Kills the job's pods (all but `retain`), or the pods `target` names; counts the rest.
fn kill(
    job: &Job,
    plan: Plan,
    retain: Option<Retain>,
    target: Option<&Request>,
    env: &JobEnv<'_, '_>,
) -> Result<Vec<Change>, SyncError> {
    let ns = job.metadata.namespace.as_deref().unwrap_or_default();
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let old = job.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let mut changes = Vec::new();
    let pods = env.view.pods_of_job(ns, name);
    let max_retry = job
        .spec
        .max_retry
        .unwrap_or(super::state::DEFAULT_MAX_RETRY);
    // On the last retry finished pods are kept whatever the policy, so their logs survive.
    let retain = retain.map(|r| {
        if status.retry_count >= max_retry - 1 {
            Retain::Finished
        } else {
            r
        }
    });
    if retain.is_some() {
        status.version += 1;
    }
    let mut counts = Counts::default();
    for pod in pods {
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        let doomed = match (retain, target) {
            (Some(Retain::Nothing), _) => true,
            (Some(Retain::Finished), _) => !matches!(pod_phase(pod), "Succeeded" | "Failed"),
            (None, Some(req)) => {
                annotation(pod, keys::TASK_SPEC) == Some(req.task.as_str())
                    && (req.pod.is_empty() || req.pod == pod_name)
            }
            (None, None) => false,
        };
        if doomed && pod.metadata.deletion_timestamp.is_none() {
            changes.push(Change::PatchPodAnnotations {
                namespace: ns.to_string(),
                name: pod_name.to_string(),
                annotations: BTreeMap::from([(
                    keys::CONTROLLER_OUT_OF_SYNC.to_string(),
                    Some("true".to_string()),
                )]),
            });
            changes.push(delete_pod(ns, pod_name));
            counts.terminating += 1;
        } else {
            counts.add(pod);
        }
    }
    counts.write_to(&mut status);
    apply_rule(plan.rule, &job.spec, &mut status);
    for p in plugins_of(job, env)? {
        changes.extend(
            p.on_job_delete(job, &mut status.controlled_resources)
                .map_err(|source| SyncError::Plugin {
                    job: job_id(job),
                    source,
                })?,
        );
    }
    changes.extend(status_change(ns, name, &old, status, env.now));
    if retain.is_some()
        && let Some(pg) = find_pod_group(job, env.view)
    {
        changes.push(Change::DeletePodGroup {
            namespace: ns.to_string(),
            name: pg.metadata.name.clone().unwrap_or_default(),
        });
    }
    Ok(changes)
}

/// The warning a job's PodGroup deserves when it has just become unschedulable. It is decided
/// from the newest True condition of the PodGroup as persisted before and after the change:
/// only a change of that condition's type to something other than `Scheduled` is news. A
/// controller that restarts sees each PodGroup for the first time with nothing before it, and
/// says nothing.
pub fn pod_group_event(job: &Job, old: &PodGroup, new: &PodGroup) -> Option<Event> {
    let newest = |pg: &PodGroup| {
        pg.status
            .as_ref()
            .and_then(|s| s.newest_true_condition())
            .cloned()
    };
    let now = newest(new)?;
    if now.type_ == "Scheduled" {
        return None;
    }
    if newest(old).is_some_and(|before| before.type_ == now.type_) {
        return None;
    }
    let ns = job.metadata.namespace.as_deref().unwrap_or_default();
    let name = job.metadata.name.as_deref().unwrap_or_default();
    Some(Event {
        object: ObjectRef::of(ObjectKind::Job, &job.metadata),
        type_: EventType::Warning,
        reason: "PodGroupPending".to_string(),
        message: format!(
            "PodGroup {ns}:{name} {}, reason: {}",
            now.type_.to_lowercase(),
            now.message
        ),
    })
}
