//! `conformance`: never victimise critical pods (system priority classes, `kube-system`).
//! Victim selection arrives with preemption; until then the plugin registers nothing.

use crate::framework::Plugin;

/// The conformance plugin.
pub struct Conformance;

impl Plugin for Conformance {
    fn name(&self) -> &'static str {
        "conformance"
    }
}
