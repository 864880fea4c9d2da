//! Times a session's steps as the scheduling cycle runs them: each plugin's part of opening
//! and closing it, each action, and the whole opening (snapshot included), into Volcano's
//! histograms. The scheduler reads no clock; this observer does.

use std::time::{Duration, Instant};

use volcano_scheduler::conf::ActionKind;
use volcano_scheduler::framework::SessionObserver;

use super::scheduler::{ON_CLOSE, ON_OPEN, SchedulerMetrics};
use super::{label, ms};

impl SchedulerMetrics {
    /// What times a session's steps, for [`volcano_scheduler::cycle::Prepared::run`]; the
    /// snapshot took `snapshot_took`, which counts towards opening the session.
    pub fn session_observer(&self, snapshot_took: Duration) -> SessionTimer<'_> {
        SessionTimer::new(self, snapshot_took)
    }
}

/// The observer of one session (see the module documentation).
pub struct SessionTimer<'m> {
    metrics: &'m SchedulerMetrics,
    /// The snapshot's share of opening the session.
    snapshot_took: Duration,
    opened_at: Instant,
    open_recorded: bool,
}

impl<'m> SessionTimer<'m> {
    /// A timer for a session whose snapshot took `snapshot_took`.
    fn new(metrics: &'m SchedulerMetrics, snapshot_took: Duration) -> Self {
        SessionTimer {
            metrics,
            snapshot_took,
            opened_at: Instant::now(),
            open_recorded: false,
        }
    }

    /// The session is open once its first action (or, with none, its closing) starts.
    fn opened(&mut self) {
        if !self.open_recorded {
            self.open_recorded = true;
            self.metrics
                .open_session_ms
                .observe(ms(self.snapshot_took + self.opened_at.elapsed()));
        }
    }

    fn plugin(&self, plugin: &str, on: &str, run: &mut dyn FnMut()) {
        let t = Instant::now();
        run();
        self.metrics
            .plugin_latency_ms
            .get_or_create(&[
                ("plugin", plugin.to_string()),
                ("OnSession", on.to_string()),
            ])
            .observe(ms(t.elapsed()));
    }
}

impl SessionObserver for SessionTimer<'_> {
    fn plugin_open(&mut self, plugin: &str, run: &mut dyn FnMut()) {
        self.plugin(plugin, ON_OPEN, run);
    }

    fn action(&mut self, action: ActionKind, run: &mut dyn FnMut()) {
        self.opened();
        let t = Instant::now();
        run();
        self.metrics
            .action_latency_ms
            .get_or_create(&label("action", action.name().to_string()))
            .observe(ms(t.elapsed()));
    }

    fn plugin_close(&mut self, plugin: &str, run: &mut dyn FnMut()) {
        self.opened();
        self.plugin(plugin, ON_CLOSE, run);
    }
}
