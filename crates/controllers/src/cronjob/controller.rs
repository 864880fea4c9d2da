//! The CronJob controller's queue: which CronJobs to reconcile and when, driven by watch
//! events and by each CronJob's next start time.

use std::collections::BTreeMap;

use volcano_api::batch::Job;
use volcano_api::event::Event;
use volcano_api::{NamespacedName, ObjectKind, ObjectRef};

use super::sync::sync_cron_job;
use crate::change::Change;
use crate::time::Instant;
use crate::view::ClusterView;
use crate::workqueue::{RetryPolicy, WorkQueue};

/// One turn of the CronJob controller: the changes for one CronJob.
#[derive(Debug)]
pub struct CronJobWork {
    /// The CronJob.
    pub key: NamespacedName,
    /// What to change.
    pub changes: Vec<Change>,
}

/// The CronJob controller.
pub struct CronJobController {
    queue: WorkQueue<NamespacedName>,
    /// The next start time of each CronJob whose turn is out, applied once the turn is done.
    wake: BTreeMap<NamespacedName, Instant>,
}

impl CronJobController {
    /// A controller with nothing queued.
    pub fn new(retry: RetryPolicy) -> Self {
        CronJobController {
            queue: WorkQueue::new(retry),
            wake: BTreeMap::new(),
        }
    }

    /// Entries in the work queue.
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// When the next start time or retry is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        self.queue.next_ready_at()
    }

    /// A CronJob was added or changed (a suspension lifted, a new schedule): look at it now.
    pub fn on_cron_job(&mut self, new: Option<&volcano_api::cronjob::CronJob>) {
        if let Some(cj) = new {
            self.queue.add(NamespacedName::of(&cj.metadata));
        }
    }

    /// A Job changed: its CronJob, if one controls it, looks at it (a run finished, a run was
    /// deleted).
    pub fn on_job(&mut self, old: Option<&Job>, new: Option<&Job>) {
        let Some(job) = new.or(old) else { return };
        let owner = job
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true) && o.kind == "CronJob");
        if let Some(o) = owner {
            let namespace = job.metadata.namespace.clone().unwrap_or_default();
            self.queue
                .add(NamespacedName::new(namespace, o.name.clone()));
        }
    }

    /// The next CronJob due at `now`, reconciled.
    pub fn next(&mut self, view: &ClusterView<'_>, now: Instant) -> Option<CronJobWork> {
        while let Some(key) = self.queue.pop(now) {
            let objects = view.objects();
            let Some(cj) = objects
                .cron_jobs
                .iter()
                .find(|c| NamespacedName::of(&c.metadata) == key)
            else {
                self.queue.done(&key);
                self.queue.forget(&key);
                continue;
            };
            let jobs: Vec<&Job> = objects
                .jobs
                .iter()
                .filter(|j| j.metadata.namespace.as_deref() == Some(key.namespace.as_str()))
                .collect();
            let sync = sync_cron_job(cj, &jobs, now);
            if let Some(at) = sync.requeue_at {
                self.wake.insert(key.clone(), at);
            }
            let mut changes = Vec::new();
            for d in sync.delete {
                changes.push(Change::DeleteJob {
                    namespace: key.namespace.clone(),
                    name: d,
                });
            }
            for j in sync.create {
                changes.push(Change::CreateJob(Box::new(j)));
            }
            if let Some(status) = sync.status {
                changes.push(Change::UpdateCronJobStatus {
                    namespace: key.namespace.clone(),
                    name: key.name.clone(),
                    status: Box::new(status),
                });
            }
            for e in sync.events {
                changes.push(Change::Event(Event {
                    object: ObjectRef::of(ObjectKind::CronJob, &cj.metadata),
                    type_: e.type_,
                    reason: e.reason.to_string(),
                    message: e.message,
                }));
            }
            if changes.is_empty() {
                self.finish(&key, true, now);
                continue;
            }
            return Some(CronJobWork { key, changes });
        }
        None
    }

    /// Reports whether a turn's changes were applied: a failed turn is retried with backoff,
    /// a done one waits for its next start time.
    pub fn finish(&mut self, key: &NamespacedName, ok: bool, now: Instant) {
        self.queue.done(key);
        let wake = self.wake.remove(key);
        if !ok {
            self.queue.retry(key.clone(), now);
            return;
        }
        self.queue.forget(key);
        if let Some(at) = wake {
            self.queue.add_after(key.clone(), at);
        }
    }
}
