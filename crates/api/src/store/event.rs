//! A change to one object, with the object before and after, as a watch delivers it.

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;

use crate::batch::Job;
use crate::bus::Command;
use crate::object_ref::{ObjectKind, ObjectRef};
use crate::scheduling::{PodGroup, Queue};

use super::Stored;

/// One object created (`old` is `None`), changed, or deleted (`new` is `None`).
// Boxed: pods dominate, and events are moved through journals and channels.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// A pod.
    Pod(Option<Box<Pod>>, Option<Box<Pod>>),
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
}

fn object_of<K: Stored>(old: &Option<Box<K>>, new: &Option<Box<K>>) -> Option<ObjectRef> {
    let obj = new.as_deref().or(old.as_deref())?;
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
        }
    }

    /// The object changed.
    pub fn object(&self) -> Option<ObjectRef> {
        match self {
            WatchEvent::Pod(o, n) => object_of(o, n),
            WatchEvent::Node(o, n) => object_of(o, n),
            WatchEvent::PodGroup(o, n) => object_of(o, n),
            WatchEvent::Queue(o, n) => object_of(o, n),
            WatchEvent::Job(o, n) => object_of(o, n),
            WatchEvent::PriorityClass(o, n) => object_of(o, n),
            WatchEvent::Command(o, n) => object_of(o, n),
        }
    }
}
