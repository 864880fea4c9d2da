//! The report's tables: the slowest jobs, the jobs still waiting at the end, and evictions.
//! Job and pod names come from users, so every cell is escaped.

use std::fmt::Write;

use super::format::{duration, escape};
use crate::metrics::{EvictionRecord, JobRecord};

/// Rows of the slowest-jobs table.
const SLOWEST: usize = 50;
/// Rows of the unfinished-jobs table.
const UNFINISHED: usize = 20;
/// Rows of the evictions table; a run with thousands says how many more there were.
const EVICTIONS: usize = 100;

fn opt_duration(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), duration)
}

pub(super) fn table(head: &[&str], rows: &[Vec<String>], numeric: &[usize]) -> String {
    let mut out = String::from("<table><thead><tr>");
    for (i, h) in head.iter().enumerate() {
        let class = if numeric.contains(&i) {
            r#" class="num""#
        } else {
            ""
        };
        let _ = write!(out, "<th{class}>{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if numeric.contains(&i) {
                r#" class="num""#
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// The jobs that took longest from submission to their end, slowest first.
pub(super) fn slowest_jobs(jobs: &[JobRecord]) -> String {
    let mut finished: Vec<&JobRecord> = jobs
        .iter()
        .filter(|j| j.completion_s.is_some_and(f64::is_finite))
        .collect();
    if finished.is_empty() {
        return r#"<p class="empty">No job finished.</p>"#.to_string();
    }
    finished.sort_by(|a, b| {
        let key = |j: &JobRecord| j.completion_s.unwrap_or(0.0);
        key(b).total_cmp(&key(a)).then_with(|| a.name.cmp(&b.name))
    });
    let rows: Vec<Vec<String>> = finished
        .iter()
        .take(SLOWEST)
        .map(|j| {
            let ran = j.finished_s.zip(j.started_s).map(|(f, s)| f - s);
            vec![
                j.name.clone(),
                j.queue.clone(),
                j.pods.to_string(),
                duration(j.submitted_s),
                opt_duration(j.wait_s),
                opt_duration(ran),
                opt_duration(j.completion_s),
                j.phase.clone(),
            ]
        })
        .collect();
    let head = [
        "job",
        "queue",
        "pods",
        "submitted at",
        "waited",
        "ran",
        "completion",
        "phase",
    ];
    let mut out = table(&head, &rows, &[2, 3, 4, 5, 6]);
    if finished.len() > SLOWEST {
        let _ = write!(
            out,
            r#"<p class="more">{SLOWEST} slowest of {} finished jobs.</p>"#,
            finished.len()
        );
    }
    out
}

/// The jobs that had not finished when the run ended, those submitted first first.
pub(super) fn unfinished_jobs(jobs: &[JobRecord]) -> Option<String> {
    let mut open: Vec<&JobRecord> = jobs.iter().filter(|j| j.finished_s.is_none()).collect();
    if open.is_empty() {
        return None;
    }
    open.sort_by(|a, b| {
        a.submitted_s
            .total_cmp(&b.submitted_s)
            .then_with(|| a.name.cmp(&b.name))
    });
    let rows: Vec<Vec<String>> = open
        .iter()
        .take(UNFINISHED)
        .map(|j| {
            vec![
                j.name.clone(),
                j.queue.clone(),
                j.pods.to_string(),
                duration(j.submitted_s),
                opt_duration(j.started_s),
                j.phase.clone(),
            ]
        })
        .collect();
    let head = [
        "job",
        "queue",
        "pods",
        "submitted at",
        "started at",
        "phase",
    ];
    let mut out = table(&head, &rows, &[2, 3, 4]);
    if open.len() > UNFINISHED {
        let _ = write!(
            out,
            r#"<p class="more">{UNFINISHED} earliest of {} unfinished jobs.</p>"#,
            open.len()
        );
    }
    Some(out)
}

/// Every eviction (up to a limit), in order.
pub(super) fn evictions(evictions: &[EvictionRecord]) -> Option<String> {
    if evictions.is_empty() {
        return None;
    }
    let rows: Vec<Vec<String>> = evictions
        .iter()
        .take(EVICTIONS)
        .map(|e| vec![duration(e.t_s), e.pod.clone(), e.reason.clone()])
        .collect();
    let mut out = table(&["at", "pod", "reason"], &rows, &[0]);
    if evictions.len() > EVICTIONS {
        let _ = write!(
            out,
            r#"<p class="more">First {EVICTIONS} of {} evictions.</p>"#,
            evictions.len()
        );
    }
    Some(out)
}
