//! What the job controller is asked to do: a request names the job, what happened (a bus event)
//! and, for Commands and delayed policies, the action to take.

use volcano_api::bus::{BusAction, BusEvent};

/// `(namespace, name)` of a Job.
pub type JobKey = volcano_api::NamespacedName;

/// One request to the job controller. Requests are values: two requests with the same fields
/// are the same request, so a burst of identical watch events queues one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Request {
    /// What happened.
    pub event: BusEvent,
    /// The action to take regardless of policies (Commands, delayed policy actions).
    pub action: Option<BusAction>,
    /// UID of the job the event was about, when known (an event of a deleted job of the same
    /// name must not trigger the new job's policies).
    pub job_uid: String,
    /// Task of the pod concerned, if any.
    pub task: String,
    /// Pod concerned, if any.
    pub pod: String,
    /// UID of the pod concerned, if any.
    pub pod_uid: String,
    /// Exit code of the pod's first container when it failed.
    pub exit_code: i32,
    /// Job version the pod was created for; events of older generations only sync.
    pub job_version: i32,
}

impl Request {
    /// A request to reconcile the job, with no event a policy could match.
    pub fn sync() -> Self {
        Request::event(BusEvent::OutOfSync)
    }

    /// A request carrying only an event.
    pub fn event(event: BusEvent) -> Self {
        Request {
            event,
            action: None,
            job_uid: String::new(),
            task: String::new(),
            pod: String::new(),
            pod_uid: String::new(),
            exit_code: 0,
            job_version: 0,
        }
    }

    /// Whether the event comes from the controller's own bookkeeping rather than the workload.
    pub fn is_internal(&self) -> bool {
        matches!(
            self.event,
            BusEvent::OutOfSync | BusEvent::CommandIssued | BusEvent::PodRunning
        )
    }
}
