//! All controllers behind one entry point: feed it watch events, take its work, apply the
//! changes, report back. The manager never touches the cluster itself.

use std::collections::BTreeMap;

use volcano_api::bus::Command;
use volcano_api::event::Event;
use volcano_api::keys;

use crate::change::Change;
use crate::command::{self, Consumption, Route};
use crate::cronjob::CronJobController;
use crate::hypernode::{HyperNodeController, HyperNodeKey, LabelDiscovery};
use crate::job::JobController;
use crate::job::controller::Refusal;
use crate::job::request::JobKey;
use crate::job::sync::JobEnv;
use crate::job_plugins::{PluginContext, SshKeySource};
use crate::jobflow::{FlowKey, JobFlowController};
use crate::podgroup::{PodGroupController, PodGroupKey};
use crate::queue::QueueController;
use crate::time::Instant;
use crate::view::ClusterView;
use crate::workqueue::{RetryPolicy, WorkQueue};
use volcano_api::{NamespacedName, WatchEvent};

/// Settings of the controllers.
pub struct ManagerOptions {
    /// Retry backoff and budget of every work queue.
    pub retry: RetryPolicy,
    /// Pods with one of these scheduler names are ours (default `volcano`).
    pub scheduler_names: Vec<String>,
    /// Where the `ssh` plugin gets its keys.
    pub ssh_keys: Box<dyn SshKeySource>,
}

/// Which controller a turn belongs to, and for which object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum WorkKey {
    /// Events decided while watching (no write to report back on).
    Events,
    /// Consuming a Command.
    Command(NamespacedName),
    /// A Job.
    Job(JobKey),
    /// A pod that needs a PodGroup, or a ReplicaSet or StatefulSet whose pods may.
    PodGroup(PodGroupKey),
    /// A queue.
    Queue(String),
    /// A CronJob.
    CronJob(NamespacedName),
    /// A JobFlow or a JobTemplate.
    Flow(FlowKey),
    /// HyperNode discovery or node counts.
    HyperNode(HyperNodeKey),
}

/// One turn: changes to apply, then report with [`ControllerManager::finish`].
#[derive(Debug)]
pub struct Work {
    /// Whose turn it is.
    pub key: WorkKey,
    /// What to change.
    pub changes: Vec<Change>,
}

/// Work-queue sizes, for metrics and the load test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Entries in the job controller's queue.
    pub jobs: usize,
    /// Most entries the job controller's queue has held.
    pub jobs_peak: usize,
    /// Entries in the queue controller's queue.
    pub queues: usize,
    /// Most entries the queue controller's queue has held.
    pub queues_peak: usize,
    /// Entries in the PodGroup controller's queue.
    pub pod_groups: usize,
    /// Commands waiting to be consumed.
    pub commands: usize,
    /// Entries in the CronJob controller's queue.
    pub cron_jobs: usize,
    /// Entries in the JobFlow and JobTemplate controllers' queue.
    pub flows: usize,
    /// Entries in the HyperNode controller's queue.
    pub hyper_nodes: usize,
}

/// The job, queue and PodGroup controllers and Command consumption.
pub struct ControllerManager {
    jobs: JobController,
    queues: QueueController,
    pod_groups: PodGroupController,
    commands: WorkQueue<NamespacedName>,
    consuming: BTreeMap<NamespacedName, Consumption>,
    events: Vec<Event>,
    ssh_keys: Box<dyn SshKeySource>,
    retry: RetryPolicy,
    cron_jobs: CronJobController,
    flows: JobFlowController,
    /// Off unless [`ControllerManager::run_hyper_node_controller`] turns it on.
    hyper_nodes: Option<HyperNodeController>,
}

impl ControllerManager {
    /// Controllers with nothing queued; call [`ControllerManager::relist`] with the cluster.
    pub fn new(opts: ManagerOptions) -> Self {
        let names = if opts.scheduler_names.is_empty() {
            vec![keys::DEFAULT_SCHEDULER_NAME.to_string()]
        } else {
            opts.scheduler_names
        };
        ControllerManager {
            jobs: JobController::new(opts.retry),
            queues: QueueController::new(opts.retry),
            pod_groups: PodGroupController::new(opts.retry, names),
            commands: WorkQueue::new(opts.retry),
            consuming: BTreeMap::new(),
            events: Vec::new(),
            ssh_keys: opts.ssh_keys,
            retry: opts.retry,
            cron_jobs: CronJobController::new(opts.retry),
            flows: JobFlowController::new(opts.retry),
            hyper_nodes: None,
        }
    }

    /// A crash and restart (or a failover to another replica): everything held in memory is
    /// lost, work queues, retry counts, Commands being consumed and events not yet written,
    /// and the controllers start over from a fresh list of `view`, as a new process would.
    pub fn restart(&mut self, view: &ClusterView<'_>) {
        // Every field but the options is process memory; a field added to the manager must
        // be reset here too.
        let names = self.pod_groups.scheduler_names().to_vec();
        let bare_pod_groups = self.pod_groups.bare_pod_groups();
        self.jobs = JobController::new(self.retry);
        self.queues = QueueController::new(self.retry);
        self.pod_groups = PodGroupController::new(self.retry, names);
        self.pod_groups.set_bare_pod_groups(bare_pod_groups);
        self.commands = WorkQueue::new(self.retry);
        self.consuming.clear();
        self.events.clear();
        self.cron_jobs = CronJobController::new(self.retry);
        self.flows = JobFlowController::new(self.retry);
        if let Some(h) = &mut self.hyper_nodes {
            *h = HyperNodeController::new(self.retry, h.discovery().cloned());
        }
        self.relist(view);
    }

    /// Whether a bare pod of ours gets a PodGroup object (on unless turned off; see
    /// [`PodGroupController::set_bare_pod_groups`]). Kept across [`ControllerManager::restart`].
    pub fn set_bare_pod_groups(&mut self, on: bool) {
        self.pod_groups.set_bare_pod_groups(on);
    }

    /// Runs the HyperNode controller (node counts, and label discovery when `discovery` is
    /// given), or gives it a new configuration. Call [`ControllerManager::relist`] after the
    /// first call, as for the other controllers.
    pub fn run_hyper_node_controller(&mut self, discovery: Option<LabelDiscovery>) {
        match &mut self.hyper_nodes {
            Some(h) => h.set_discovery(discovery),
            None => self.hyper_nodes = Some(HyperNodeController::new(self.retry, discovery)),
        }
    }

    /// Treats every object as newly seen, as an informer's initial list does (at startup, and
    /// after a restart or a failover).
    pub fn relist(&mut self, view: &ClusterView<'_>) {
        let objs = view.objects();
        for q in &objs.queues {
            self.queues.on_queue(None, Some(q));
        }
        for j in &objs.jobs {
            self.jobs.on_job(None, Some(j));
        }
        for p in &objs.pods {
            // Pods of jobs are reconciled through their job's own sync; only lone pods
            // need a look of their own.
            self.pod_groups.on_pod(p);
        }
        for rs in &objs.replica_sets {
            self.pod_groups.on_replica_set(rs);
        }
        for sts in &objs.stateful_sets {
            self.pod_groups.on_stateful_set(sts);
        }
        for c in &objs.commands {
            self.on_command(c);
        }
        for cj in &objs.cron_jobs {
            self.cron_jobs.on_cron_job(Some(cj));
        }
        for f in &objs.job_flows {
            self.flows.on_job_flow(None, Some(f));
        }
        for t in &objs.job_templates {
            self.flows.on_job_template(Some(t), view);
        }
        if let Some(h) = &mut self.hyper_nodes {
            h.relist();
        }
    }

    /// Feeds one watch event to the controllers that care (nodes and HyperNodes only to the
    /// HyperNode controller, when it runs). Priority classes,
    /// namespaces, storage objects, Deployments (their annotations reach pods through their
    /// ReplicaSets) and deleted workloads are not followed, nor a Command changed or deleted: only
    /// its appearance asks for work.
    pub fn observe(&mut self, event: &WatchEvent, view: &ClusterView<'_>) {
        match event {
            WatchEvent::Job(old, new) => {
                self.jobs.on_job(old.as_deref(), new.as_deref());
                self.cron_jobs.on_job(old.as_deref(), new.as_deref());
                self.flows.on_job(old.as_deref(), new.as_deref());
            }
            WatchEvent::Pod(old, new) => {
                self.jobs.on_pod(old.as_deref(), new.as_deref(), view);
                if let Some(p) = new {
                    self.pod_groups.on_pod(p);
                }
            }
            WatchEvent::PodGroup(old, new) => {
                let (old, new) = (old.as_deref(), new.as_deref());
                self.queues.on_pod_group(old, new);
                if let Some(e) = self.jobs.on_pod_group(old, new, view) {
                    self.events.push(e);
                }
            }
            WatchEvent::Queue(old, new) => self.queues.on_queue(old.as_deref(), new.as_deref()),
            WatchEvent::Command(None, Some(c)) => self.on_command(c),
            WatchEvent::ReplicaSet(_, Some(rs)) => self.pod_groups.on_replica_set(rs),
            WatchEvent::StatefulSet(_, Some(sts)) => self.pod_groups.on_stateful_set(sts),
            WatchEvent::CronJob(_, new) => self.cron_jobs.on_cron_job(new.as_deref()),
            WatchEvent::JobFlow(old, new) => self.flows.on_job_flow(old.as_deref(), new.as_deref()),
            WatchEvent::JobTemplate(_, new) => self.flows.on_job_template(new.as_deref(), view),
            WatchEvent::Node(old, new) => {
                if let Some(h) = &mut self.hyper_nodes {
                    h.on_node(old.as_deref(), new.as_deref());
                }
            }
            WatchEvent::HyperNode(old, new) => {
                if let Some(h) = &mut self.hyper_nodes {
                    h.on_hyper_node(old.as_deref(), new.as_deref());
                }
            }
            WatchEvent::Command(..)
            | WatchEvent::PriorityClass(..)
            | WatchEvent::Namespace(..)
            | WatchEvent::PersistentVolume(..)
            | WatchEvent::PersistentVolumeClaim(..)
            | WatchEvent::StorageClass(..)
            | WatchEvent::CSINode(..)
            | WatchEvent::ReplicaSet(_, None)
            | WatchEvent::StatefulSet(_, None)
            | WatchEvent::Deployment(..) => {}
        }
    }

    fn on_command(&mut self, c: &Command) {
        self.commands.add(NamespacedName::new(
            c.metadata.namespace.clone().unwrap_or_default(),
            c.metadata.name.clone().unwrap_or_default(),
        ));
    }

    /// The next turn that is due at `now`, if any: events first, then Commands, jobs, lone
    /// pods and queues.
    pub fn next(&mut self, view: &ClusterView<'_>, now: Instant) -> Option<Work> {
        if !self.events.is_empty() {
            return Some(Work {
                key: WorkKey::Events,
                changes: self.events.drain(..).map(Change::Event).collect(),
            });
        }
        while let Some(key) = self.commands.pop(now) {
            let found = view.commands().iter().find(|c| {
                c.metadata.namespace.as_deref() == Some(key.namespace.as_str())
                    && c.metadata.name.as_deref() == Some(key.name.as_str())
            });
            match found {
                Some(cmd) => {
                    let consumption = command::consume(cmd);
                    let changes = consumption.changes.clone();
                    self.consuming.insert(key.clone(), consumption);
                    return Some(Work {
                        key: WorkKey::Command(key),
                        changes,
                    });
                }
                None => self.commands.done(&key),
            }
        }
        let plugins = PluginContext {
            ssh_keys: self.ssh_keys.as_ref(),
        };
        let env = JobEnv {
            view,
            now,
            plugins: &plugins,
        };
        // A job that cannot be synced is retried later; the loop goes on to the next one.
        while let Some(turn) = self.jobs.next(&env) {
            match turn {
                Ok(w) => {
                    return Some(Work {
                        key: WorkKey::Job(w.key),
                        changes: w.changes,
                    });
                }
                Err((key, e)) => {
                    tracing::warn!(error = %e, "job sync failed; it will be retried");
                    if let Some(event) = self.jobs.finish(&key, false, now) {
                        self.events.push(event);
                    }
                }
            }
        }
        if !self.events.is_empty() {
            return Some(Work {
                key: WorkKey::Events,
                changes: self.events.drain(..).map(Change::Event).collect(),
            });
        }
        if let Some(w) = self.cron_jobs.next(view, now) {
            return Some(Work {
                key: WorkKey::CronJob(w.key),
                changes: w.changes,
            });
        }
        if let Some(w) = self.flows.next(view, now) {
            return Some(Work {
                key: WorkKey::Flow(w.key),
                changes: w.changes,
            });
        }
        if let Some(w) = self.hyper_nodes.as_mut().and_then(|h| h.next(view, now)) {
            return Some(Work {
                key: WorkKey::HyperNode(w.key),
                changes: w.changes,
            });
        }
        if let Some(w) = self.pod_groups.next(view, now) {
            return Some(Work {
                key: WorkKey::PodGroup(w.key),
                changes: w.changes,
            });
        }
        self.queues.next(view, now).map(|w| Work {
            key: WorkKey::Queue(w.name),
            changes: w.changes,
        })
    }

    /// Reports whether a turn's changes were applied. Failed turns are retried with backoff;
    /// a Command whose delete failed is not carried out (someone else consumed it, or it
    /// will be seen again).
    pub fn finish(&mut self, key: &WorkKey, ok: bool, now: Instant) {
        match key {
            WorkKey::Events => {}
            WorkKey::Command(k) => {
                self.commands.done(k);
                let consumption = self.consuming.remove(k);
                if let (true, Some(Consumption { route: Some(r), .. })) = (ok, consumption) {
                    match r {
                        Route::Job(job, action) => self.jobs.on_command(job, action),
                        Route::Queue(q, action) => self.queues.act(&q, action),
                    }
                }
            }
            WorkKey::Job(k) => {
                if let Some(e) = self.jobs.finish(k, ok, now) {
                    self.events.push(e);
                }
            }
            WorkKey::PodGroup(k) => self.pod_groups.finish(k, ok, now),
            WorkKey::Queue(q) => self.queues.finish(q, ok, now),
            WorkKey::CronJob(k) => self.cron_jobs.finish(k, ok, now),
            WorkKey::Flow(k) => self.flows.finish(k, ok, now),
            WorkKey::HyperNode(k) => {
                if let Some(h) = &mut self.hyper_nodes {
                    h.finish(*k, ok, now);
                }
            }
        }
    }

    /// Reports a turn whose write was refused for a lasting reason (see
    /// [`JobController::refused`]): a job's turn is held back, with a Warning event on the
    /// Job at once; any other turn is retried as a failed one.
    pub fn refused(&mut self, key: &WorkKey, refusal: &Refusal, now: Instant) {
        match key {
            WorkKey::Job(k) => {
                if let Some(e) = self.jobs.refused(k, refusal, now) {
                    self.events.push(e);
                }
            }
            other => self.finish(other, false, now),
        }
    }

    /// When the earliest delayed turn (a policy timeout, a retry) is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        [
            self.jobs.next_due(),
            self.queues.next_due(),
            self.pod_groups.next_due(),
            self.commands.next_ready_at(),
            self.cron_jobs.next_due(),
            self.flows.next_due(),
            self.hyper_nodes
                .as_ref()
                .and_then(HyperNodeController::next_due),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Work-queue sizes.
    pub fn stats(&self) -> QueueStats {
        QueueStats {
            jobs: self.jobs.queue_len(),
            jobs_peak: self.jobs.peak_queue_len(),
            queues: self.queues.queue_len(),
            queues_peak: self.queues.peak_queue_len(),
            pod_groups: self.pod_groups.queue_len(),
            commands: self.commands.len(),
            cron_jobs: self.cron_jobs.queue_len(),
            flows: self.flows.queue_len(),
            hyper_nodes: self
                .hyper_nodes
                .as_ref()
                .map_or(0, HyperNodeController::queue_len),
        }
    }
}
