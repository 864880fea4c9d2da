//! What a session tells people and other components about work it left waiting: the
//! `PodScheduled=False` condition and `FailedScheduling` event on each waiting pod (what
//! cluster-autoscaler and `kubectl describe pod` read), and the `NotEnqueued` condition and
//! event of a PodGroup its queue would not admit. Every one is decided against what the
//! objects already carry, never against a process's memory, so a restarted scheduler or a
//! new leader repeats nothing.

use volcano_api::pod_group_of_pod::names_pod_group;
use volcano_api::scheduling::PodGroupCondition;
use volcano_api::{ObjectKind, ObjectRef, keys};

use super::close::Decisions;
use super::conditions::{Event, EventType, NOT_ENQUEUED, UNSCHEDULABLE};
use super::session::Session;
use crate::model::{JobId, TaskId, TaskStatus};

pub use super::conditions::{
    FAILED_SCHEDULING, POD_SCHEDULED, POD_UNSCHEDULABLE, PodUnschedulable,
};

/// A message without its digits. Conditions and events are rewritten only when this part
/// changes: a message whose figures merely move from one session to the next ("largest free
/// 3" then "largest free 2", "allocated cpu 7" then "cpu 8") would otherwise patch every
/// waiting pod, or every refused PodGroup, once per session.
pub fn reason_part(message: &str) -> String {
    volcano_api::event::figures_aside(message)
}

/// Whether a persisted condition already says what `reason`/`message` say, figures aside.
fn says_already(status: &str, reason: &str, message: &str, want: &str, want_msg: &str) -> bool {
    status == "False" && reason == want && reason_part(message) == reason_part(want_msg)
}

impl Session {
    /// The `PodScheduled=False` condition and `FailedScheduling` event of every pod left
    /// waiting whose PodGroup has a why-pending entry, or that is in no PodGroup because the
    /// queue it names does not exist, where the pod does not already carry that condition
    /// (figures aside, see [`reason_part`]). A pod bound or placed in this session gets
    /// nothing, and neither does a pod Kubernetes holds back with scheduling gates (the API
    /// server gives it its own condition).
    pub(crate) fn pod_signals(&self, d: &mut Decisions) {
        let s = &self.snap;
        for j in s.job_ids() {
            let job = s.job(j);
            let Some(message) = d.unschedulable.get(&job.key).map(|u| u.message.clone()) else {
                continue;
            };
            for &t in &job.tasks {
                self.tell_pod(t, &message, d);
            }
        }
        // A pod that names no PodGroup and a queue that does not exist: its PodGroup (a bare
        // pod's shadow, or the object made from its annotations) is left out of the snapshot,
        // as Volcano leaves out a PodGroup of a missing queue, and without this the pod would
        // wait without a word.
        for (i, task) in s.tasks.iter().enumerate() {
            if task.job.is_some() || names_pod_group(&task.pod) {
                continue;
            }
            let queue =
                (task.pod.metadata.annotations.as_ref()).and_then(|a| a.get(keys::POD_QUEUE_NAME));
            if let Some(q) = queue.filter(|q| !s.queue_index.contains_key(q.as_str())) {
                let message = format!(
                    "queue {q:?}, named by the pod's {} annotation, does not exist",
                    keys::POD_QUEUE_NAME
                );
                self.tell_pod(TaskId(i as u32), &message, d);
            }
        }
    }

    /// The `PodScheduled=False` condition and `FailedScheduling` event saying `message`, for
    /// task `t` if it waits and does not carry that condition already.
    fn tell_pod(&self, t: TaskId, message: &str, d: &mut Decisions) {
        let task = self.snap.task(t);
        let waiting = matches!(task.status, TaskStatus::Pending | TaskStatus::Pipelined)
            && task.bound_node_name.is_none()
            && !task.scheduling_gated;
        if !waiting {
            return;
        }
        let carried = task.pod_scheduled.as_deref().is_some_and(|c| {
            says_already(
                &c.status,
                c.reason.as_deref().unwrap_or_default(),
                c.message.as_deref().unwrap_or_default(),
                POD_UNSCHEDULABLE,
                message,
            )
        });
        if carried {
            return;
        }
        d.pod_conditions.push(PodUnschedulable {
            key: task.key.clone(),
            reason: POD_UNSCHEDULABLE.to_string(),
            message: message.to_string(),
        });
        d.events.push(Event {
            object: ObjectRef::new(ObjectKind::Pod, task.key.clone()),
            type_: EventType::Warning,
            reason: FAILED_SCHEDULING.to_string(),
            message: message.to_string(),
        });
    }

    /// Brings the `Unschedulable` condition of reason `NotEnqueued` in `conditions` up to
    /// date: set when enqueue refused a PodGroup that has no pods yet (the gang writes
    /// nothing for it, and a Volcano Job's pods only come once it is admitted), kept as it
    /// is while it says the same figures aside, dropped once the PodGroup is admitted.
    pub(crate) fn not_enqueued_condition(&self, j: JobId, conditions: &mut Vec<PodGroupCondition>) {
        let job = self.snap.job(j);
        let refused = job
            .job_fit_error
            .as_ref()
            .filter(|(r, _)| r == NOT_ENQUEUED && job.tasks.is_empty())
            .map(|(_, m)| m);
        let is_ours = |c: &PodGroupCondition| c.type_ == UNSCHEDULABLE && c.reason == NOT_ENQUEUED;
        let Some(message) = refused else {
            conditions.retain(|c| !is_ours(c));
            return;
        };
        let held = conditions.iter().any(|c| {
            is_ours(c) && c.status == "True" && reason_part(&c.message) == reason_part(message)
        });
        if held {
            return;
        }
        conditions.retain(|c| c.type_ != UNSCHEDULABLE);
        conditions.push(PodGroupCondition {
            type_: UNSCHEDULABLE.to_string(),
            status: "True".to_string(),
            transition_id: self.uid.clone(),
            last_transition_time: self.now.clone(),
            reason: NOT_ENQUEUED.to_string(),
            message: message.clone(),
        });
    }

    /// The `NotEnqueued` event of a PodGroup enqueue refused, when the condition written in
    /// this session (`written`) says so and the newest persisted condition (`persisted`) did
    /// not already, figures aside.
    pub(crate) fn not_enqueued_event(
        &self,
        j: JobId,
        written: Option<&PodGroupCondition>,
        persisted: Option<&PodGroupCondition>,
    ) -> Option<Event> {
        let job = self.snap.job(j);
        let (reason, message) = job.job_fit_error.as_ref()?;
        let c = written?;
        if reason != NOT_ENQUEUED {
            return None;
        }
        let repeat = persisted.is_some_and(|o| {
            o.type_ == UNSCHEDULABLE && reason_part(&o.message) == reason_part(&c.message)
        });
        (!repeat).then(|| Event {
            object: ObjectRef::new(ObjectKind::PodGroup, job.key.clone()),
            type_: EventType::Warning,
            reason: NOT_ENQUEUED.to_string(),
            message: message.clone(),
        })
    }
}
