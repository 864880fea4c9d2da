//! Fault injection for the simulator: what a real cluster does to a scheduler and its
//! controllers, at seeded random points, with the invariants checked after every step.
//!
//! - [`plan`]: which faults, how often, parsed from `key=value,...`.
//! - [`inject`]: the seeded injector the cluster asks at each write, watch event and session.
//! - [`invariants`]: what must hold whatever the faults: no node over its allocatable because
//!   of this scheduler, gangs whole, queues within capability, no pod bound twice, no event
//!   repeated for one transition, every Job in a final phase at the end.
//! - `accounting`: resource sums done independently of the scheduler, for the invariants.

pub(crate) mod accounting;
pub mod inject;
pub mod invariants;
pub mod plan;

pub use inject::{FaultCounts, Faults};
pub use invariants::{Invariants, Violation};
pub use plan::{FaultPlan, FaultPlanError, Rate};
