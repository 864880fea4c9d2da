//! The JobFlow and JobTemplate controllers' queues: which flows and templates to reconcile,
//! driven by watch events on flows, templates and the Jobs made from them.

use std::collections::BTreeMap;

use volcano_api::batch::Job;
use volcano_api::event::{Event, EventType};
use volcano_api::flow::{JobFlow, JobTemplate, labels};
use volcano_api::spec_checks::check_job_flow;
use volcano_api::{NamespacedName, ObjectKind, ObjectRef};

use super::sync::{in_namespace, sync_job_flow};
use super::template::sync_job_template;
use crate::change::Change;
use crate::time::Instant;
use crate::view::ClusterView;
use crate::workqueue::{RetryPolicy, WorkQueue};

/// What a turn reconciles.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FlowKey {
    /// A JobFlow.
    JobFlow(NamespacedName),
    /// A JobTemplate.
    JobTemplate(NamespacedName),
}

/// One turn of the flow controllers: the changes for one flow or template.
#[derive(Debug)]
pub struct FlowWork {
    /// The flow or template.
    pub key: FlowKey,
    /// What to change.
    pub changes: Vec<Change>,
}

/// The JobFlow and JobTemplate controllers.
pub struct JobFlowController {
    queue: WorkQueue<FlowKey>,
    /// The last error reported on each flow, so a flow synced again for every change of its
    /// Jobs does not repeat the same Warning.
    reported: BTreeMap<NamespacedName, String>,
}

impl JobFlowController {
    /// Controllers with nothing queued.
    pub fn new(retry: RetryPolicy) -> Self {
        JobFlowController {
            queue: WorkQueue::new(retry),
            reported: BTreeMap::new(),
        }
    }

    /// Entries in the work queue.
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// When the next retry is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        self.queue.next_ready_at()
    }

    /// A JobFlow was added, changed or deleted (`new` is `None` with `old` the last seen).
    pub fn on_job_flow(&mut self, old: Option<&JobFlow>, new: Option<&JobFlow>) {
        match (old, new) {
            (_, Some(f)) => self
                .queue
                .add(FlowKey::JobFlow(NamespacedName::of(&f.metadata))),
            // A flow made again under the same name has its problems told afresh.
            (Some(f), None) => {
                self.reported.remove(&NamespacedName::of(&f.metadata));
            }
            (None, None) => {}
        }
    }

    /// A JobTemplate was added or changed: it is looked at, and so is every flow of its
    /// namespace, since a flow waiting for a template it names can now go on.
    pub fn on_job_template(&mut self, new: Option<&JobTemplate>, view: &ClusterView<'_>) {
        let Some(t) = new else { return };
        let key = NamespacedName::of(&t.metadata);
        for f in &view.objects().job_flows {
            if in_namespace(&f.metadata, &key.namespace) {
                self.queue
                    .add(FlowKey::JobFlow(NamespacedName::of(&f.metadata)));
            }
        }
        self.queue.add(FlowKey::JobTemplate(key));
    }

    /// A Job changed: the flow that controls it and the template it was made from look at it.
    pub fn on_job(&mut self, old: Option<&Job>, new: Option<&Job>) {
        let Some(job) = new.or(old) else { return };
        let namespace = NamespacedName::of(&job.metadata).namespace;
        let flow = job
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true) && o.kind == "JobFlow");
        if let Some(o) = flow {
            self.queue.add(FlowKey::JobFlow(NamespacedName::new(
                namespace.as_str(),
                o.name.as_str(),
            )));
        }
        let template = job
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::CREATED_BY_JOB_TEMPLATE))
            .and_then(|v| v.split_once('.'));
        if let Some((ns, name)) = template {
            self.queue
                .add(FlowKey::JobTemplate(NamespacedName::new(ns, name)));
        }
    }

    /// The next flow or template due at `now`, reconciled; those with nothing to change are
    /// finished on the spot.
    pub fn next(&mut self, view: &ClusterView<'_>, now: Instant) -> Option<FlowWork> {
        while let Some(key) = self.queue.pop(now) {
            let changes = match &key {
                FlowKey::JobFlow(k) => self.flow_changes(k, view, now),
                FlowKey::JobTemplate(k) => template_changes(k, view),
            };
            match changes {
                Some(changes) if !changes.is_empty() => return Some(FlowWork { key, changes }),
                _ => self.finish(&key, true, now),
            }
        }
        None
    }

    /// Reports whether a turn's changes were applied; a failed turn is retried with backoff.
    pub fn finish(&mut self, key: &FlowKey, ok: bool, now: Instant) {
        self.queue.done(key);
        if ok {
            self.queue.forget(key);
        } else {
            self.queue.retry(key.clone(), now);
        }
    }

    fn flow_changes(
        &mut self,
        key: &NamespacedName,
        view: &ClusterView<'_>,
        now: Instant,
    ) -> Option<Vec<Change>> {
        let objects = view.objects();
        let Some(flow) = objects
            .job_flows
            .iter()
            .find(|f| NamespacedName::of(&f.metadata) == *key)
        else {
            self.reported.remove(key);
            return None;
        };
        // A flow the webhook would refuse (written while it was down) makes no Job: which
        // Jobs its dependencies allow is not defined.
        if let Err(e) = check_job_flow(flow) {
            return Some(self.warn_once(key, flow, "InvalidJobFlow", e.volcano_message()));
        }
        let sync = sync_job_flow(flow, &objects.job_templates, &objects.jobs, now);
        let mut changes = Vec::new();
        for j in sync.delete_jobs {
            changes.push(Change::DeleteJob {
                namespace: j.namespace,
                name: j.name,
            });
        }
        for j in sync.create_jobs {
            changes.push(Change::CreateJob(Box::new(j)));
        }
        if let Some(status) = sync.status
            && flow.status.as_ref() != Some(&status)
        {
            changes.push(Change::UpdateJobFlowStatus {
                namespace: key.namespace.clone(),
                name: key.name.clone(),
                status: Box::new(status),
            });
        }
        match sync.error {
            Some(e) => {
                changes.extend(self.warn_once(key, flow, "MissingJobTemplate", e.to_string()))
            }
            None => {
                self.reported.remove(key);
            }
        }
        Some(changes)
    }

    /// A Warning event on the flow, unless the same message was the last one given.
    fn warn_once(
        &mut self,
        key: &NamespacedName,
        flow: &JobFlow,
        reason: &str,
        message: String,
    ) -> Vec<Change> {
        if self.reported.get(key) == Some(&message) {
            return Vec::new();
        }
        self.reported.insert(key.clone(), message.clone());
        vec![Change::Event(Event {
            object: ObjectRef::of(ObjectKind::JobFlow, &flow.metadata),
            type_: EventType::Warning,
            reason: reason.to_string(),
            message,
        })]
    }
}

/// A template's status write, when the Jobs made from it changed.
fn template_changes(key: &NamespacedName, view: &ClusterView<'_>) -> Option<Vec<Change>> {
    let objects = view.objects();
    let template = objects
        .job_templates
        .iter()
        .find(|t| NamespacedName::of(&t.metadata) == *key)?;
    let status = sync_job_template(template, &objects.jobs)?;
    Some(vec![Change::UpdateJobTemplateStatus {
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        status: Box::new(status),
    }])
}
