//! The words a session writes conditions and events in, shared by the framework (which
//! closes the session) and the plugins and actions (which decide what is written): PodGroup
//! condition types and reasons, the pod condition the scheduler owns, event reasons.

/// Condition type of a gang that could not be scheduled.
pub const UNSCHEDULABLE: &str = "Unschedulable";
/// Condition type of a gang that is ready.
pub const SCHEDULED: &str = "Scheduled";
/// Event reason on an evicted pod.
pub const EVICT: &str = "Evict";
/// Condition reason when resources are short.
pub const NOT_ENOUGH_RESOURCES: &str = "NotEnoughResources";
/// Reason recorded for a job that enqueue did not admit.
pub const NOT_ENQUEUED: &str = "NotEnqueued";
/// Reason of a gang no network domain of its allowed tier can hold (the PodGroup's condition
/// keeps Volcano's `NotEnoughResources`; the report says which it is).
pub const NETWORK_TOPOLOGY: &str = "NetworkTopology";

/// Pod condition type the scheduler owns.
pub const POD_SCHEDULED: &str = "PodScheduled";
/// Reason of a waiting pod's `PodScheduled=False` condition (what autoscalers look for).
pub const POD_UNSCHEDULABLE: &str = "Unschedulable";
/// Reason of the Warning event recorded on a waiting pod, as kube-scheduler and Volcano name it.
pub const FAILED_SCHEDULING: &str = "FailedScheduling";

use volcano_api::NamespacedName;
pub use volcano_api::event::{Event, EventType};

/// A waiting pod's `PodScheduled=False` condition to write (and its event to record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodUnschedulable {
    /// The pod.
    pub key: NamespacedName,
    /// Condition reason.
    pub reason: String,
    /// Why the pod waits: its PodGroup's why-pending message.
    pub message: String,
}
