//! Kubernetes events as volcano-rs components decide them: what happened to which object.

use std::fmt;

use crate::object_ref::ObjectRef;

/// Whether an event reports normal operation or something a user should look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventType {
    /// Normal.
    Normal,
    /// Warning.
    Warning,
}

impl EventType {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// An event to record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Event {
    /// The object the event is about.
    pub object: ObjectRef,
    /// Normal or Warning.
    pub type_: EventType,
    /// Machine-readable reason.
    pub reason: String,
    /// Human text.
    pub message: String,
}

impl Event {
    /// The object as event output prints it: `Kind/ns/name`, or `Kind/name` when
    /// cluster-scoped.
    pub fn object_path(&self) -> ObjectPath<'_> {
        ObjectPath(&self.object)
    }
}

/// An object printed as events name it: `Kind/ns/name`, or `Kind/name` when cluster-scoped.
#[derive(Debug, Clone, Copy)]
pub struct ObjectPath<'a>(pub &'a ObjectRef);

impl fmt::Display for ObjectPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.0.kind, self.0.key)
    }
}

/// A message without its digits: what it says, figures aside. Conditions, events and refusals
/// are told again only when this part changes; a message whose figures merely move ("largest
/// free 3" then "2") would otherwise be repeated once per session.
pub fn figures_aside(message: &str) -> String {
    message.chars().filter(|c| !c.is_ascii_digit()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object_ref::{NamespacedName, ObjectKind};

    fn event(kind: ObjectKind, key: NamespacedName) -> Event {
        Event {
            object: ObjectRef::new(kind, key),
            type_: EventType::Normal,
            reason: String::new(),
            message: String::new(),
        }
    }

    #[test]
    fn objects_print_as_kind_slash_key() {
        let pod = event(ObjectKind::Pod, NamespacedName::new("ns", "p"));
        assert_eq!(pod.object_path().to_string(), "Pod/ns/p");
        let queue = event(ObjectKind::Queue, NamespacedName::cluster("q"));
        assert_eq!(queue.object_path().to_string(), "Queue/q");
    }
}
