//! The rules of Volcano's Job admission webhooks (`pkg/webhooks/admission/jobs/{mutate,validate}`),
//! as a pure library: no IO, no clock. The caller decides when a job is "submitted" and what to
//! do with a rejection; this module only says whether and why.
//!
//! Use on create: [`default_job`] (the mutating webhook), then [`validate_job`] and
//! [`check_queue`] (the validating webhook). Use on update: [`validate_job_update`].
//!
//! Reasons are Volcano's own texts (those of its webhook, which current Volcano partly moved
//! into the CRD schema and a ValidatingAdmissionPolicy with the same wording), so a Volcano
//! user recognises them. Unlike Volcano, which stops at some first errors, every violation
//! found is reported, each with the field it is about.

use volcano_api::scheduling::{Queue, queue_state};

mod hyper_node;
mod mutate;
mod names;
mod pod;
pub mod pod_resources;
mod podgroup;
mod policies;
mod queue;
mod queue_delete;
mod request;
mod review;
mod update;
mod validate;

#[cfg(test)]
mod tests;

pub use hyper_node::validate_hyper_node;
pub use mutate::{DEFAULT_MAX_RETRY, DEFAULT_QUEUE, DEFAULT_SCHEDULER, default_job};
pub use pod::validate_pod;
pub use podgroup::validate_podgroup;
pub use queue::{default_queue, validate_queue};
pub use queue_delete::check_queue_deletion;
pub use request::{
    AdmissionSettings, AdmissionView, Endpoint, Operation, Patch, REPLICA_LABELS, Request,
    UNREVIEWED_NAMESPACES, Verdict, is_sent_to_pod_webhooks,
};
pub use review::{review, validate_new_job};
pub use update::validate_job_update;
pub use validate::validate_job;

/// One broken rule: the field it is about and Volcano's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {field}: {message}")]
pub struct Violation {
    /// Dotted path of the field, e.g. `spec.tasks[1].policies[0].exitCode`.
    pub field: String,
    /// The reason, in Volcano's words.
    pub message: String,
}

/// A rejected Job: the first violation found, and any others after it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.joined())]
pub struct AdmissionError {
    /// Dotted path of the field of the first violation.
    pub field: String,
    /// The reason of the first violation, in Volcano's words.
    pub message: String,
    /// The violations found after the first, in the order they were found.
    pub more: Vec<Violation>,
}

impl AdmissionError {
    /// An error with a single violation.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        AdmissionError {
            field: field.into(),
            message: message.into(),
            more: Vec::new(),
        }
    }

    /// Every violation as `(field, message)`, the first one first.
    pub fn violations(&self) -> impl Iterator<Item = (&str, &str)> {
        std::iter::once((self.field.as_str(), self.message.as_str())).chain(
            self.more
                .iter()
                .map(|v| (v.field.as_str(), v.message.as_str())),
        )
    }

    /// The reasons given for `field`, in order.
    pub fn messages_for(&self, field: &str) -> Vec<&str> {
        self.violations()
            .filter(|(f, _)| *f == field)
            .map(|(_, m)| m)
            .collect()
    }

    fn joined(&self) -> String {
        self.violations()
            .map(|(f, m)| format!("field {f}: {m}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Violations collected while walking a job, turned into a result at the end.
#[derive(Default)]
pub(crate) struct Violations(Vec<Violation>);

impl Violations {
    pub(crate) fn push(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(Violation {
            field: field.into(),
            message: message.into(),
        });
    }

    pub(crate) fn into_result(self) -> Result<(), AdmissionError> {
        let mut all = self.0.into_iter();
        match all.next() {
            None => Ok(()),
            Some(first) => Err(AdmissionError {
                field: first.field,
                message: first.message,
                more: all.collect(),
            }),
        }
    }
}

/// Volcano's rule that a job goes to an existing queue that is `Open` and is not `root`.
/// `queue` is what the caller found under `job_queue_name` (empty means `default`). A queue with
/// no state yet counts as Open, as the queue controller has simply not written it.
pub fn check_queue(job_queue_name: &str, queue: Option<&Queue>) -> Result<(), AdmissionError> {
    let name = if job_queue_name.is_empty() {
        DEFAULT_QUEUE
    } else {
        job_queue_name
    };
    let Some(queue) = queue else {
        // Volcano prints the lister's NotFound error, whose text is this.
        return Err(AdmissionError::new(
            "spec.queue",
            format!("unable to find job queue: queue.scheduling.volcano.sh \"{name}\" not found"),
        ));
    };
    let mut out = Violations::default();
    let state = queue
        .status
        .as_ref()
        .map(|s| s.state.as_str())
        .filter(|s| !s.is_empty())
        .unwrap_or(queue_state::OPEN);
    if state != queue_state::OPEN {
        out.push(
            "spec.queue",
            format!(
                "can only submit job to queue with state `Open`, queue `{name}` status is `{state}`"
            ),
        );
    }
    if name == "root" {
        out.push("spec.queue", "can not submit job to root queue");
    }
    out.into_result()
}

/// Volcano's rule that jobs go to leaf queues only: `children` is how many queues name
/// `queue_name` as their `parent`.
pub fn check_leaf_queue(queue_name: &str, children: usize) -> Result<(), AdmissionError> {
    if children == 0 {
        return Ok(());
    }
    Err(AdmissionError::new(
        "spec.queue",
        format!(
            "can only submit job to leaf queue, queue `{queue_name}` has {children} child queues"
        ),
    ))
}
