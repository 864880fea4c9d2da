//! The job controller.

pub mod plugins;
