//! Pieces of the CRD schemas that the types' derives cannot express alone: enumerations taken
//! from our own constants (so the schema and the code cannot disagree) and name patterns.

use schemars::{Schema, SchemaGenerator, json_schema};

use crate::batch::job_phase;
use crate::bus::BusEvent;
use crate::scheduling::{phase, queue_state};

/// A DNS-1123 subdomain (queue and priority-class names), as Kubernetes validates it.
pub(crate) const DNS1123_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// A DNS-1123 label (task names become parts of pod and service names).
pub(crate) const DNS1123_LABEL: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

fn string_enum(values: &[&str]) -> Schema {
    json_schema!({"type": "string", "enum": values})
}

/// An object whose fields the API server knows itself (`metadata` at the root).
pub(crate) fn any_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "object"})
}

/// A lifecycle-policy event.
pub(crate) fn bus_event(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = BusEvent::ALL.iter().map(|e| e.as_str()).collect();
    string_enum(&names)
}

/// A list of lifecycle-policy events.
pub(crate) fn bus_events(generator: &mut SchemaGenerator) -> Schema {
    let item = bus_event(generator);
    json_schema!({"type": "array", "items": item})
}

/// A Job phase.
pub(crate) fn job_phase(_: &mut SchemaGenerator) -> Schema {
    use job_phase::*;
    string_enum(&[
        PENDING,
        ABORTING,
        ABORTED,
        RUNNING,
        RESTARTING,
        COMPLETING,
        COMPLETED,
        TERMINATING,
        TERMINATED,
        FAILED,
    ])
}

/// A PodGroup phase.
pub(crate) fn pod_group_phase(_: &mut SchemaGenerator) -> Schema {
    use phase::*;
    string_enum(&[PENDING, RUNNING, UNKNOWN, INQUEUE, COMPLETED])
}

/// A Queue state.
pub(crate) fn queue_state(_: &mut SchemaGenerator) -> Schema {
    use queue_state::*;
    string_enum(&[OPEN, CLOSED, CLOSING, UNKNOWN])
}

/// A task's NUMA topology policy, as the kubelet's topology manager names them.
pub(crate) fn topology_policy(_: &mut SchemaGenerator) -> Schema {
    string_enum(&["none", "best-effort", "restricted", "single-numa-node"])
}

/// How strictly a network-topology constraint holds.
pub(crate) fn network_topology_mode(_: &mut SchemaGenerator) -> Schema {
    string_enum(&["hard", "soft"])
}

/// The order a queue's jobs are considered in.
pub(crate) fn dequeue_strategy(_: &mut SchemaGenerator) -> Schema {
    string_enum(&["fifo", "traverse"])
}
