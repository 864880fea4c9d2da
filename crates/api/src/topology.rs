//! `topology.volcano.sh/v1alpha1`: the HyperNode, a network domain (a leaf switch, a spine, a
//! data hall) over nodes or over smaller HyperNodes, and the tree the HyperNodes of a cluster
//! form ([`tree`]).

mod check;
pub mod tree;

pub use check::check_hyper_node;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A member of type Node: a Kubernetes node.
pub const MEMBER_NODE: &str = "Node";
/// A member of type HyperNode: a smaller domain.
pub const MEMBER_HYPER_NODE: &str = "HyperNode";

/// The spec of a HyperNode: its tier and members.
// Each `printcolumn(...)` names the same keys: not a duplicate, which clippy cannot tell.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "topology.volcano.sh",
    version = "v1alpha1",
    kind = "HyperNode",
    status = "HyperNodeStatus",
    doc = "A HyperNode: a network domain over nodes or smaller HyperNodes.",
    shortname = "hn",
    printcolumn(name = "Tier", type_ = "string", json_path = ".spec.tier"),
    printcolumn(name = "TierName", type_ = "string", json_path = ".spec.tierName"),
    printcolumn(name = "NodeCount", type_ = "integer", json_path = ".status.nodeCount"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct HyperNodeSpec {
    /// The domain's level: 1 for the closest nodes (a leaf switch), higher for wider domains.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub tier: i64,
    /// The level's name (`highestTierName` of a network topology refers to it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253))]
    pub tier_name: String,
    /// The nodes or HyperNodes the domain holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub members: Vec<MemberSpec>,
}

/// One member entry: a type and how the members of that type are chosen.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberSpec {
    /// `Node` or `HyperNode`.
    #[serde(rename = "type", default)]
    #[schemars(schema_with = "crate::schema::hyper_node_member_type")]
    pub member_type: String,
    /// Which nodes or HyperNodes: exactly one of the three ways.
    #[serde(default)]
    pub selector: MemberSelector,
}

/// How members are chosen: by exact name, by a regular expression over names, or (nodes only)
/// by labels.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberSelector {
    /// One member by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_match: Option<ExactMatch>,
    /// Every member whose name the pattern matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex_match: Option<RegexMatch>,
    /// Every node whose labels the selector matches (Node members only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_match: Option<LabelSelector>,
}

/// A member chosen by name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExactMatch {
    /// The node's or HyperNode's name.
    #[serde(default)]
    #[schemars(length(min = 1, max = 253), regex(pattern = crate::schema::DNS1123_SUBDOMAIN))]
    pub name: String,
}

/// Members chosen by a regular expression over their names.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegexMatch {
    /// The pattern (RE2 syntax, as Go's `regexp`); it matches anywhere in the name unless
    /// anchored.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub pattern: String,
}

/// Observed state of a HyperNode.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HyperNodeStatus {
    /// Conditions of the domain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// How many nodes the domain holds, through its member HyperNodes too.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(range(min = 0))]
    pub node_count: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}
