//! Kubernetes events as volcano-rs components decide them: what happened to which object.

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
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Event {
    /// `Kind/ns/name` of the object.
    pub object: String,
    /// Normal or Warning.
    pub type_: EventType,
    /// Machine-readable reason.
    pub reason: String,
    /// Human text.
    pub message: String,
}
