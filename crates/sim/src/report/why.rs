//! The report's account of why jobs waited and why they failed, and what the run ran under
//! (the scheduler configuration and the seed). Every text comes from the run, so every cell
//! is escaped.

use std::fmt::Write;

use super::format::{duration, escape};
use super::tables::table;
use crate::metrics::{JobRecord, SimMetrics};

/// Each job's why-pending messages with the time under each, in submission order.
pub(super) fn waited(jobs: &[JobRecord]) -> Option<String> {
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .flat_map(|j| {
            j.waited.iter().enumerate().map(move |(k, w)| {
                let name = if k == 0 {
                    j.name.clone()
                } else {
                    String::new()
                };
                vec![name, duration(w.seconds), w.reason.clone()]
            })
        })
        .collect();
    (!rows.is_empty()).then(|| table(&["job", "time", "reason"], &rows, &[1]))
}

/// Each failed job: its final phase, what failed it, the exit code, and the details.
pub(super) fn failed(jobs: &[JobRecord]) -> Option<String> {
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .filter_map(|j| {
            let f = j.failure.as_ref()?;
            Some(vec![
                j.name.clone(),
                j.phase.clone(),
                f.reason.clone(),
                f.exit_code
                    .map_or_else(|| "–".to_string(), |c| c.to_string()),
                f.message.clone(),
            ])
        })
        .collect();
    (!rows.is_empty()).then(|| {
        table(
            &["job", "phase", "reason", "exit code", "detail"],
            &rows,
            &[3],
        )
    })
}

/// The seed and the scheduler configuration text of the run.
pub(super) fn configuration(m: &SimMetrics) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<p>Seed <code>{}</code>.</p><pre>{}</pre>",
        m.seed,
        escape(m.scheduler_conf.trim_end())
    );
    out
}
