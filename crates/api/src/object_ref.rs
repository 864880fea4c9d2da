//! Typed object identity: which object a decision, an event, an error or a change is about.
//!
//! Identities are built from an object's metadata once, where the object is read, and carried
//! typed from there on; nothing downstream splits a `"ns/name"` string again. The text forms
//! (`ns/name`, `Kind ns/name`) exist for output only.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The namespace an object without one is read in, as the API server defaults it.
pub const DEFAULT_NAMESPACE: &str = "default";

/// The kinds volcano-rs reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// `v1` Pod.
    Pod,
    /// `v1` Node.
    Node,
    /// `scheduling.volcano.sh` PodGroup.
    PodGroup,
    /// `scheduling.volcano.sh` Queue.
    Queue,
    /// `batch.volcano.sh` Job.
    Job,
    /// `scheduling.k8s.io` PriorityClass.
    PriorityClass,
    /// `bus.volcano.sh` Command.
    Command,
    /// `v1` Namespace.
    Namespace,
    /// `v1` PersistentVolume.
    PersistentVolume,
    /// `v1` PersistentVolumeClaim.
    PersistentVolumeClaim,
    /// `storage.k8s.io` StorageClass.
    StorageClass,
    /// `storage.k8s.io` CSINode.
    CSINode,
    /// `apps` ReplicaSet.
    ReplicaSet,
    /// `apps` StatefulSet.
    StatefulSet,
    /// `apps` Deployment.
    Deployment,
    /// `batch.volcano.sh` CronJob.
    CronJob,
    /// `flow.volcano.sh` JobFlow.
    JobFlow,
    /// `flow.volcano.sh` JobTemplate.
    JobTemplate,
    /// `topology.volcano.sh` HyperNode.
    HyperNode,
}

impl ObjectKind {
    /// The Kubernetes kind name.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Pod => "Pod",
            ObjectKind::Node => "Node",
            ObjectKind::PodGroup => "PodGroup",
            ObjectKind::Queue => "Queue",
            ObjectKind::Job => "Job",
            ObjectKind::PriorityClass => "PriorityClass",
            ObjectKind::Command => "Command",
            ObjectKind::Namespace => "Namespace",
            ObjectKind::PersistentVolume => "PersistentVolume",
            ObjectKind::PersistentVolumeClaim => "PersistentVolumeClaim",
            ObjectKind::StorageClass => "StorageClass",
            ObjectKind::CSINode => "CSINode",
            ObjectKind::ReplicaSet => "ReplicaSet",
            ObjectKind::StatefulSet => "StatefulSet",
            ObjectKind::Deployment => "Deployment",
            ObjectKind::CronJob => "CronJob",
            ObjectKind::JobFlow => "JobFlow",
            ObjectKind::JobTemplate => "JobTemplate",
            ObjectKind::HyperNode => "HyperNode",
        }
    }

    /// The kind of a Kubernetes kind name.
    pub fn from_name(kind: &str) -> Option<Self> {
        Some(match kind {
            "Pod" => ObjectKind::Pod,
            "Node" => ObjectKind::Node,
            "PodGroup" => ObjectKind::PodGroup,
            "Queue" => ObjectKind::Queue,
            "Job" => ObjectKind::Job,
            "PriorityClass" => ObjectKind::PriorityClass,
            "Command" => ObjectKind::Command,
            "Namespace" => ObjectKind::Namespace,
            "PersistentVolume" => ObjectKind::PersistentVolume,
            "PersistentVolumeClaim" => ObjectKind::PersistentVolumeClaim,
            "StorageClass" => ObjectKind::StorageClass,
            "CSINode" => ObjectKind::CSINode,
            "ReplicaSet" => ObjectKind::ReplicaSet,
            "StatefulSet" => ObjectKind::StatefulSet,
            "Deployment" => ObjectKind::Deployment,
            "CronJob" => ObjectKind::CronJob,
            "JobFlow" => ObjectKind::JobFlow,
            "JobTemplate" => ObjectKind::JobTemplate,
            "HyperNode" => ObjectKind::HyperNode,
            _ => return None,
        })
    }

    /// Whether objects of this kind live in a namespace.
    pub fn namespaced(self) -> bool {
        !matches!(
            self,
            ObjectKind::Node
                | ObjectKind::Queue
                | ObjectKind::PriorityClass
                | ObjectKind::Namespace
                | ObjectKind::PersistentVolume
                | ObjectKind::StorageClass
                | ObjectKind::CSINode
                | ObjectKind::HyperNode
        )
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `namespace/name`; the namespace is empty for cluster-scoped objects.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NamespacedName {
    /// The namespace, empty for a cluster-scoped object.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl NamespacedName {
    /// A namespaced object's identity.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        NamespacedName {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// A cluster-scoped object's identity.
    pub fn cluster(name: impl Into<String>) -> Self {
        NamespacedName::new(String::new(), name)
    }

    /// The identity of a namespaced object as stored: a missing namespace is `default`, as the
    /// API server defaults it.
    pub fn of(meta: &ObjectMeta) -> Self {
        NamespacedName::new(
            meta.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE),
            meta.name.as_deref().unwrap_or_default(),
        )
    }

    /// The identity of an object of `kind`: namespaced kinds as [`NamespacedName::of`],
    /// cluster-scoped kinds by name alone.
    pub fn of_kind(kind: ObjectKind, meta: &ObjectMeta) -> Self {
        if kind.namespaced() {
            NamespacedName::of(meta)
        } else {
            NamespacedName::cluster(meta.name.as_deref().unwrap_or_default())
        }
    }

    /// Whether `meta` names this object (a missing namespace read as `default`).
    pub fn is(&self, meta: &ObjectMeta) -> bool {
        meta.name.as_deref() == Some(self.name.as_str())
            && (self.namespace.is_empty()
                || meta.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE) == self.namespace)
    }
}

impl fmt::Display for NamespacedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// One object: its kind and its namespaced name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// The kind.
    pub kind: ObjectKind,
    /// Namespace and name.
    pub key: NamespacedName,
}

impl ObjectRef {
    /// The object of `kind` that `meta` describes.
    pub fn of(kind: ObjectKind, meta: &ObjectMeta) -> Self {
        ObjectRef {
            kind,
            key: NamespacedName::of_kind(kind, meta),
        }
    }

    /// An object of `kind` by identity.
    pub fn new(kind: ObjectKind, key: NamespacedName) -> Self {
        ObjectRef { kind, key }
    }
}

/// `Kind ns/name`, or `Kind name` for a cluster-scoped object.
impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(ns: Option<&str>, name: &str) -> ObjectMeta {
        ObjectMeta {
            namespace: ns.map(str::to_string),
            name: Some(name.to_string()),
            ..Default::default()
        }
    }

    #[test]
    fn a_pod_without_namespace_is_in_default_and_a_node_in_none() {
        let pod = ObjectRef::of(ObjectKind::Pod, &meta(None, "p"));
        assert_eq!(pod.to_string(), "Pod default/p");
        let node = ObjectRef::of(ObjectKind::Node, &meta(Some("ignored"), "n1"));
        assert_eq!(node.to_string(), "Node n1");
    }

    #[test]
    fn claims_live_in_a_namespace_and_volumes_classes_csinodes_namespaces_do_not() {
        let claim = ObjectRef::of(ObjectKind::PersistentVolumeClaim, &meta(None, "c"));
        assert_eq!(claim.to_string(), "PersistentVolumeClaim default/c");
        for kind in [
            ObjectKind::Namespace,
            ObjectKind::PersistentVolume,
            ObjectKind::StorageClass,
            ObjectKind::CSINode,
        ] {
            let obj = ObjectRef::of(kind, &meta(Some("ignored"), "x"));
            assert_eq!(obj.to_string(), format!("{kind} x"));
            assert_eq!(ObjectKind::from_name(kind.as_str()), Some(kind));
        }
    }

    #[test]
    fn is_matches_name_and_defaulted_namespace() {
        let k = NamespacedName::new("default", "p");
        assert!(k.is(&meta(None, "p")));
        assert!(!k.is(&meta(Some("other"), "p")));
        assert!(NamespacedName::cluster("q").is(&meta(None, "q")));
    }
}
