//! The kinds a scenario may hold and a typed object of any of them: what [`decode`](super::decode)
//! produces and [`validate`](super::validate) checks, below both.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::batch::Job;
use crate::bus::Command;
use crate::cronjob::CronJob;
use crate::flow::{JobFlow, JobTemplate};
use crate::scheduling::{PodGroup, Queue};
use crate::topology::HyperNode;

/// A kind a scenario may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `v1` Node.
    Node,
    /// `v1` Pod.
    Pod,
    /// `scheduling.volcano.sh/v1beta1` PodGroup.
    PodGroup,
    /// `scheduling.volcano.sh/v1beta1` Queue.
    Queue,
    /// `batch.volcano.sh/v1alpha1` Job.
    Job,
    /// `bus.volcano.sh/v1alpha1` Command.
    Command,
    /// `scheduling.k8s.io/v1` PriorityClass.
    PriorityClass,
    /// `v1` ConfigMap carrying the scheduler configuration.
    ConfigMap,
    /// `v1` Namespace.
    Namespace,
    /// `v1` PersistentVolume.
    PersistentVolume,
    /// `v1` PersistentVolumeClaim.
    PersistentVolumeClaim,
    /// `storage.k8s.io/v1` StorageClass.
    StorageClass,
    /// `storage.k8s.io/v1` CSINode.
    CSINode,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `apps/v1` Deployment.
    Deployment,
    /// `batch.volcano.sh/v1alpha1` CronJob.
    CronJob,
    /// `flow.volcano.sh/v1alpha1` JobFlow.
    JobFlow,
    /// `flow.volcano.sh/v1alpha1` JobTemplate.
    JobTemplate,
    /// `topology.volcano.sh/v1alpha1` HyperNode.
    HyperNode,
}

/// Every kind, in the order errors list them.
pub(super) const KINDS: [Kind; 20] = [
    Kind::Node,
    Kind::Pod,
    Kind::PodGroup,
    Kind::Queue,
    Kind::Job,
    Kind::Command,
    Kind::PriorityClass,
    Kind::ConfigMap,
    Kind::Namespace,
    Kind::PersistentVolume,
    Kind::PersistentVolumeClaim,
    Kind::StorageClass,
    Kind::CSINode,
    Kind::ReplicaSet,
    Kind::StatefulSet,
    Kind::Deployment,
    Kind::CronJob,
    Kind::JobFlow,
    Kind::JobTemplate,
    Kind::HyperNode,
];

/// What an error about an unknown kind says a scenario may hold.
pub(super) const KNOWN_KINDS: &str = "a scenario holds Node, Pod, PodGroup, Queue, Job, Command, \
     PriorityClass, ConfigMap, Namespace, PersistentVolume, PersistentVolumeClaim, StorageClass, \
     CSINode, ReplicaSet, StatefulSet, Deployment, CronJob, JobFlow, JobTemplate and HyperNode";

impl Kind {
    /// The `kind` field's value.
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Node => "Node",
            Kind::Pod => "Pod",
            Kind::PodGroup => "PodGroup",
            Kind::Queue => "Queue",
            Kind::Job => "Job",
            Kind::Command => "Command",
            Kind::PriorityClass => "PriorityClass",
            Kind::ConfigMap => "ConfigMap",
            Kind::Namespace => "Namespace",
            Kind::PersistentVolume => "PersistentVolume",
            Kind::PersistentVolumeClaim => "PersistentVolumeClaim",
            Kind::StorageClass => "StorageClass",
            Kind::CSINode => "CSINode",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::StatefulSet => "StatefulSet",
            Kind::Deployment => "Deployment",
            Kind::CronJob => "CronJob",
            Kind::JobFlow => "JobFlow",
            Kind::JobTemplate => "JobTemplate",
            Kind::HyperNode => "HyperNode",
        }
    }

    pub(super) fn api_version(self) -> &'static str {
        match self {
            Kind::Node
            | Kind::Pod
            | Kind::ConfigMap
            | Kind::Namespace
            | Kind::PersistentVolume
            | Kind::PersistentVolumeClaim => "v1",
            Kind::StorageClass | Kind::CSINode => "storage.k8s.io/v1",
            Kind::ReplicaSet | Kind::StatefulSet | Kind::Deployment => "apps/v1",
            Kind::PodGroup | Kind::Queue => "scheduling.volcano.sh/v1beta1",
            Kind::Job | Kind::CronJob => "batch.volcano.sh/v1alpha1",
            Kind::Command => "bus.volcano.sh/v1alpha1",
            Kind::PriorityClass => "scheduling.k8s.io/v1",
            Kind::JobFlow | Kind::JobTemplate => "flow.volcano.sh/v1alpha1",
            Kind::HyperNode => "topology.volcano.sh/v1alpha1",
        }
    }

    pub(super) fn namespaced(self) -> bool {
        matches!(
            self,
            Kind::Pod
                | Kind::PodGroup
                | Kind::Job
                | Kind::Command
                | Kind::ConfigMap
                | Kind::PersistentVolumeClaim
                | Kind::ReplicaSet
                | Kind::StatefulSet
                | Kind::Deployment
                | Kind::CronJob
                | Kind::JobFlow
                | Kind::JobTemplate
        )
    }

    /// Volcano's CRDs accept an object without `spec` (every field has a default); the typed
    /// structs do not, so an absent spec is read as an empty one.
    pub(super) fn spec_optional(self) -> bool {
        matches!(
            self,
            Kind::PodGroup | Kind::Queue | Kind::Job | Kind::JobFlow | Kind::JobTemplate
        )
    }
}

/// A typed object of any scenario kind.
#[derive(Debug, Clone)]
pub(super) enum Object {
    /// A node.
    Node(Box<Node>),
    /// A pod.
    Pod(Box<Pod>),
    /// A PodGroup.
    PodGroup(Box<PodGroup>),
    /// A queue.
    Queue(Box<Queue>),
    /// A Volcano Job.
    Job(Box<Job>),
    /// A bus Command.
    Command(Box<Command>),
    /// A priority class.
    PriorityClass(Box<PriorityClass>),
    /// A ConfigMap.
    ConfigMap(Box<ConfigMap>),
    /// A namespace.
    Namespace(Box<Namespace>),
    /// A PersistentVolume.
    PersistentVolume(Box<PersistentVolume>),
    /// A PersistentVolumeClaim.
    PersistentVolumeClaim(Box<PersistentVolumeClaim>),
    /// A StorageClass.
    StorageClass(Box<StorageClass>),
    /// A CSINode.
    CSINode(Box<CSINode>),
    /// A ReplicaSet.
    ReplicaSet(Box<ReplicaSet>),
    /// A StatefulSet.
    StatefulSet(Box<StatefulSet>),
    /// A Deployment.
    Deployment(Box<Deployment>),
    /// A Volcano CronJob.
    CronJob(Box<CronJob>),
    /// A JobFlow.
    JobFlow(Box<JobFlow>),
    /// A JobTemplate.
    JobTemplate(Box<JobTemplate>),
    /// A HyperNode.
    HyperNode(Box<HyperNode>),
}

impl Object {
    /// Its metadata, for defaulting.
    pub(super) fn metadata_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Object::Node(o) => &mut o.metadata,
            Object::Pod(o) => &mut o.metadata,
            Object::PodGroup(o) => &mut o.metadata,
            Object::Queue(o) => &mut o.metadata,
            Object::Job(o) => &mut o.metadata,
            Object::Command(o) => &mut o.metadata,
            Object::PriorityClass(o) => &mut o.metadata,
            Object::ConfigMap(o) => &mut o.metadata,
            Object::Namespace(o) => &mut o.metadata,
            Object::PersistentVolume(o) => &mut o.metadata,
            Object::PersistentVolumeClaim(o) => &mut o.metadata,
            Object::StorageClass(o) => &mut o.metadata,
            Object::CSINode(o) => &mut o.metadata,
            Object::ReplicaSet(o) => &mut o.metadata,
            Object::StatefulSet(o) => &mut o.metadata,
            Object::Deployment(o) => &mut o.metadata,
            Object::CronJob(o) => &mut o.metadata,
            Object::JobFlow(o) => &mut o.metadata,
            Object::JobTemplate(o) => &mut o.metadata,
            Object::HyperNode(o) => &mut o.metadata,
        }
    }
}
