//! A queue as the scheduler sees it.

use volcano_api::scheduling::queue_state;

use crate::resource::Resource;

/// Queue state (`status.state`), owned by the queue controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueState {
    /// Accepts and schedules work (also the empty state).
    Open,
    /// Accepts nothing.
    Closed,
    /// Closing.
    Closing,
    /// Unknown.
    Unknown,
}

impl QueueState {
    /// Parses the wire value; empty counts as Open.
    pub fn parse(s: &str) -> QueueState {
        match s {
            queue_state::CLOSED => QueueState::Closed,
            queue_state::CLOSING => QueueState::Closing,
            queue_state::UNKNOWN => QueueState::Unknown,
            _ => QueueState::Open,
        }
    }

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueState::Open => queue_state::OPEN,
            QueueState::Closed => queue_state::CLOSED,
            QueueState::Closing => queue_state::CLOSING,
            QueueState::Unknown => queue_state::UNKNOWN,
        }
    }
}

/// A queue with its spec in resource vectors.
#[derive(Debug, Clone)]
pub struct QueueInfo {
    /// Queue name (also its UID for ordering).
    pub name: String,
    /// Share weight (≥ 1).
    pub weight: i32,
    /// Hard limit; dimensions not set are unbounded.
    pub capability: Resource,
    /// Guaranteed resources (zero when unset).
    pub guarantee: Resource,
    /// `spec.deserved` (zero when unset).
    pub deserved: Resource,
    /// Whether other queues may reclaim from it.
    pub reclaimable: bool,
    /// Parent queue name (`root` by default; empty for root itself).
    pub parent: String,
    /// Higher is scheduled first.
    pub priority: i32,
    /// State.
    pub state: QueueState,
    /// Creation time in seconds since the epoch.
    pub creation: i64,
    /// `status.allocated` as the snapshot found it.
    pub old_allocated: Resource,
}
