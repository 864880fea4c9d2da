//! What watches a session run: each plugin built as it opens, each action, each plugin's last
//! word as it closes. The scheduler reads no clock, so a runtime that times these steps does
//! it here, around the step itself.

use crate::conf::ActionKind;

/// Sees each step of a session run, around the step itself, so the caller can time it (the
/// scheduler reads no clock). Every method must call `run` exactly once.
pub trait SessionObserver {
    /// A plugin is built as the session opens.
    fn plugin_open(&mut self, _plugin: &str, run: &mut dyn FnMut()) {
        run()
    }
    /// An action runs.
    fn action(&mut self, _action: ActionKind, run: &mut dyn FnMut()) {
        run()
    }
    /// A plugin has its last word as the session closes.
    fn plugin_close(&mut self, _plugin: &str, run: &mut dyn FnMut()) {
        run()
    }
}

/// An observer that only runs the steps.
pub struct Unobserved;

impl SessionObserver for Unobserved {}
