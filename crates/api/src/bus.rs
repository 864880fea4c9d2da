//! `bus.volcano.sh/v1alpha1`: the Command, an instruction to a controller about one object.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::schema::string_enum;

/// An action (`AbortJob`, `ResumeJob`, `OpenQueue`, ...) requested on a target object. Unlike
/// most CRDs it has no `spec`: its fields sit at the top level.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Command {
    /// Standard object metadata.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub metadata: ObjectMeta,
    /// The requested action.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub action: String,
    /// The object the action applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<OwnerReference>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable explanation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl kube::Resource for Command {
    type DynamicType = ();
    type Scope = kube::core::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Command".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "bus.volcano.sh".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1alpha1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "commands".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $wire:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The wire value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)*
                }
            }

            /// Parses the wire value.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($wire => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_enum! {
    /// What happened to a job, its pods or its PodGroup (`bus/v1alpha1` events).
    BusEvent {
        /// Matches every event.
        Any = "*",
        /// A pod failed.
        PodFailed = "PodFailed",
        /// A pod was deleted or evicted.
        PodEvicted = "PodEvicted",
        /// A pod is pending.
        PodPending = "PodPending",
        /// A pod started running.
        PodRunning = "PodRunning",
        /// The PodGroup went Unknown: part of the gang runs, the rest cannot be scheduled.
        Unknown = "Unknown",
        /// Every pod of a task succeeded.
        TaskCompleted = "TaskCompleted",
        /// A task's pods restarted `maxRetry` times.
        TaskFailed = "TaskFailed",
        /// The job's spec was updated.
        JobUpdated = "JobUpdated",
        /// Internal: the job and its pods need reconciling.
        OutOfSync = "OutOfSync",
        /// Internal: a Command was issued.
        CommandIssued = "CommandIssued",
    }
}

wire_enum! {
    /// What a controller does about an event (`bus/v1alpha1` actions).
    BusAction {
        /// Kill the pods (keeping finished ones) and stop; resumable.
        AbortJob = "AbortJob",
        /// Kill every pod and start the job again.
        RestartJob = "RestartJob",
        /// Kill the pods of one task.
        RestartTask = "RestartTask",
        /// Kill one pod.
        RestartPod = "RestartPod",
        /// Kill one partition of a task.
        RestartPartition = "RestartPartition",
        /// Kill the pods and end the job as Terminated.
        TerminateJob = "TerminateJob",
        /// Kill the remaining pods and end the job as Completed.
        CompleteJob = "CompleteJob",
        /// Resume an aborted job.
        ResumeJob = "ResumeJob",
        /// Internal: reconcile the job with its pods.
        SyncJob = "SyncJob",
        /// Internal: the job was admitted.
        EnqueueJob = "EnqueueJob",
        /// Internal: reconcile a queue.
        SyncQueue = "SyncQueue",
        /// Open a queue.
        OpenQueue = "OpenQueue",
        /// Close a queue.
        CloseQueue = "CloseQueue",
    }
}

impl BusEvent {
    /// Events a user may name in a lifecycle policy.
    pub const USER: &'static [BusEvent] = &[
        BusEvent::Any,
        BusEvent::PodFailed,
        BusEvent::PodEvicted,
        BusEvent::PodPending,
        BusEvent::Unknown,
        BusEvent::TaskCompleted,
        BusEvent::TaskFailed,
        BusEvent::JobUpdated,
    ];
}

/// The schema of a lifecycle-policy event: one of [`BusEvent::ALL`].
pub(crate) fn event_schema(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = BusEvent::ALL.iter().map(|e| e.as_str()).collect();
    string_enum(&names)
}

/// The schema of a list of lifecycle-policy events.
pub(crate) fn events_schema(generator: &mut SchemaGenerator) -> Schema {
    let item = event_schema(generator);
    json_schema!({"type": "array", "items": item})
}

impl BusAction {
    /// Actions a user may name in a lifecycle policy.
    pub const USER: &'static [BusAction] = &[
        BusAction::AbortJob,
        BusAction::RestartJob,
        BusAction::RestartTask,
        BusAction::RestartPod,
        BusAction::RestartPartition,
        BusAction::TerminateJob,
        BusAction::CompleteJob,
        BusAction::ResumeJob,
    ];
}
