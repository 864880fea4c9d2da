//! The framework: a [`Session`] over one snapshot, the tiers of plugins it consults through
//! Volcano's exact combination rules, the [`Statement`] that makes a gang's placement one unit,
//! and the decisions a session closes with.
//!
//! The framework knows no plugin and no action by name: a session is given its plugins when
//! it opens, and actions reach the plugins only through the extension points; the
//! [`crate::registry`] above wires the configured kinds to their code.

pub mod close;
pub mod conditions;
mod dispatch;
mod observer;
pub mod pending;
mod plugin;
mod priority_queue;
pub mod report;
mod session;
pub mod signals;
mod statement;

pub use close::{Decisions, Unschedulable, Unwritten, VolumeBinding};
pub use conditions::{Event, EventType};
pub use observer::{SessionObserver, Unobserved};
pub use plugin::{EvictionUnit, Plugin, PluginSlot, QueueShare, Verdict, Vote};
pub use priority_queue::PriorityQueue;
pub use session::{PluginBuilder, Session, SessionError, SessionOptions};
pub use signals::{
    FAILED_SCHEDULING, POD_SCHEDULED, POD_UNSCHEDULABLE, PodUnschedulable, reason_part,
};
pub use statement::Statement;
