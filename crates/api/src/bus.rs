//! `bus.volcano.sh/v1alpha1`: the Command, an instruction to a controller about one object.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::{Deserialize, Serialize};

/// An action (`AbortJob`, `ResumeJob`, `OpenQueue`, ...) requested on a target object. Unlike
/// most CRDs it has no `spec`: its fields sit at the top level.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Command {
    /// Standard object metadata.
    #[serde(default)]
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
