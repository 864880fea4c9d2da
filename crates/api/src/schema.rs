//! Pieces of the CRD schemas that the types' derives cannot express alone: name patterns,
//! string enumerations and fixed shapes. The lowest layer of the CRD modules, importing none of
//! them: an enumeration taken from our own constants (a Job phase, a bus event) is built beside
//! those constants with [`string_enum`], so the schema and the code cannot disagree.

use schemars::{Schema, SchemaGenerator, json_schema};

/// A DNS-1123 subdomain (queue and priority-class names), as Kubernetes validates it.
pub(crate) const DNS1123_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// A DNS-1123 label (task names become parts of pod and service names).
pub(crate) const DNS1123_LABEL: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// A string that takes one of `values`.
pub(crate) fn string_enum(values: &[&str]) -> Schema {
    json_schema!({"type": "string", "enum": values})
}

/// An object whose fields the API server knows itself (`metadata` at the root).
pub(crate) fn any_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "object"})
}

/// A task's NUMA topology policy, as the kubelet's topology manager names them.
pub(crate) fn topology_policy(_: &mut SchemaGenerator) -> Schema {
    string_enum(&["none", "best-effort", "restricted", "single-numa-node"])
}

/// How strictly a network-topology constraint holds.
pub(crate) fn network_topology_mode(_: &mut SchemaGenerator) -> Schema {
    string_enum(&["hard", "soft"])
}

/// The type of a HyperNode's member (the HyperNode module's member constants, written out
/// here: this module sits below every type module).
pub(crate) fn hyper_node_member_type(_: &mut SchemaGenerator) -> Schema {
    string_enum(&["Node", "HyperNode"])
}

/// The order a queue's jobs are considered in.
pub(crate) fn dequeue_strategy(_: &mut SchemaGenerator) -> Schema {
    string_enum(&["fifo", "traverse"])
}
