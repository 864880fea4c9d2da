//! A change to one object, with the object before and after, as a watch delivers it.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

use crate::batch::Job;
use crate::bus::Command;
use crate::cronjob::CronJob;
use crate::flow::{JobFlow, JobTemplate};
use crate::object_ref::{ObjectKind, ObjectRef};
use crate::scheduling::{PodGroup, Queue};
use crate::topology::HyperNode;

use std::sync::Arc;

use super::Stored;

/// One object created (`old` is `None`), changed, or deleted (`new` is `None`).
// Boxed, as events are moved through journals and channels. Pods, which dominate, are shared
// with the store that sent the event, so a journal or a follower costs no copy of the pod.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// A pod.
    Pod(Option<Arc<Pod>>, Option<Arc<Pod>>),
    /// A node.
    Node(Option<Box<Node>>, Option<Box<Node>>),
    /// A PodGroup.
    PodGroup(Option<Box<PodGroup>>, Option<Box<PodGroup>>),
    /// A queue.
    Queue(Option<Box<Queue>>, Option<Box<Queue>>),
    /// A Volcano Job.
    Job(Option<Box<Job>>, Option<Box<Job>>),
    /// A priority class.
    PriorityClass(Option<Box<PriorityClass>>, Option<Box<PriorityClass>>),
    /// A bus Command.
    Command(Option<Box<Command>>, Option<Box<Command>>),
    /// A namespace.
    Namespace(Option<Box<Namespace>>, Option<Box<Namespace>>),
    /// A PersistentVolume.
    PersistentVolume(Option<Box<PersistentVolume>>, Option<Box<PersistentVolume>>),
    /// A PersistentVolumeClaim.
    PersistentVolumeClaim(
        Option<Box<PersistentVolumeClaim>>,
        Option<Box<PersistentVolumeClaim>>,
    ),
    /// A StorageClass.
    StorageClass(Option<Box<StorageClass>>, Option<Box<StorageClass>>),
    /// A CSINode.
    CSINode(Option<Box<CSINode>>, Option<Box<CSINode>>),
    /// An apps ReplicaSet.
    ReplicaSet(Option<Box<ReplicaSet>>, Option<Box<ReplicaSet>>),
    /// An apps StatefulSet.
    StatefulSet(Option<Box<StatefulSet>>, Option<Box<StatefulSet>>),
    /// An apps Deployment.
    Deployment(Option<Box<Deployment>>, Option<Box<Deployment>>),
    /// A Volcano CronJob.
    CronJob(Option<Box<CronJob>>, Option<Box<CronJob>>),
    /// A JobFlow.
    JobFlow(Option<Box<JobFlow>>, Option<Box<JobFlow>>),
    /// A JobTemplate.
    JobTemplate(Option<Box<JobTemplate>>, Option<Box<JobTemplate>>),
    /// A HyperNode.
    HyperNode(Option<Box<HyperNode>>, Option<Box<HyperNode>>),
}

fn object_of<K: Stored>(old: Option<&K>, new: Option<&K>) -> Option<ObjectRef> {
    let obj = new.or(old)?;
    Some(ObjectRef::new(K::KIND, obj.key()))
}

impl WatchEvent {
    /// The kind changed.
    pub fn kind(&self) -> ObjectKind {
        match self {
            WatchEvent::Pod(..) => ObjectKind::Pod,
            WatchEvent::Node(..) => ObjectKind::Node,
            WatchEvent::PodGroup(..) => ObjectKind::PodGroup,
            WatchEvent::Queue(..) => ObjectKind::Queue,
            WatchEvent::Job(..) => ObjectKind::Job,
            WatchEvent::PriorityClass(..) => ObjectKind::PriorityClass,
            WatchEvent::Command(..) => ObjectKind::Command,
            WatchEvent::Namespace(..) => ObjectKind::Namespace,
            WatchEvent::PersistentVolume(..) => ObjectKind::PersistentVolume,
            WatchEvent::PersistentVolumeClaim(..) => ObjectKind::PersistentVolumeClaim,
            WatchEvent::StorageClass(..) => ObjectKind::StorageClass,
            WatchEvent::CSINode(..) => ObjectKind::CSINode,
            WatchEvent::ReplicaSet(..) => ObjectKind::ReplicaSet,
            WatchEvent::StatefulSet(..) => ObjectKind::StatefulSet,
            WatchEvent::Deployment(..) => ObjectKind::Deployment,
            WatchEvent::CronJob(..) => ObjectKind::CronJob,
            WatchEvent::JobFlow(..) => ObjectKind::JobFlow,
            WatchEvent::JobTemplate(..) => ObjectKind::JobTemplate,
            WatchEvent::HyperNode(..) => ObjectKind::HyperNode,
        }
    }

    /// The object changed.
    pub fn object(&self) -> Option<ObjectRef> {
        match self {
            WatchEvent::Pod(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::Node(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::PodGroup(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::Queue(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::Job(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::PriorityClass(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::Command(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::Namespace(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::PersistentVolume(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::PersistentVolumeClaim(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::StorageClass(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::CSINode(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::ReplicaSet(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::StatefulSet(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::Deployment(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::CronJob(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::JobFlow(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::JobTemplate(o, n) => object_of(o.as_deref(), n.as_deref()),
            WatchEvent::HyperNode(o, n) => object_of(o.as_deref(), n.as_deref()),
        }
    }
}
