//! The job controller: turns a Volcano Job into its PodGroup and pods, applies its lifecycle
//! policies through the state machine and keeps its status.

pub mod build;
pub mod controller;
pub mod policy;
pub mod request;
pub mod state;
pub mod sync;

pub use controller::JobController;
pub use request::{JobKey, Request};
