//! The report's charts, each from one part of [`SimMetrics`]: utilisation, jobs waiting and
//! running, queue shares against what they deserve, and the completion-time distribution.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::chart::{self, Axis, Canvas, Key, Series, Stroke, colour, line_chart};
use super::format::{self, duration, escape, percent};
use crate::metrics::{Sample, SimMetrics};

/// Most ticks an axis carries; more would crowd the labels.
const X_TICKS: usize = 10;
const Y_TICKS: usize = 5;

/// The time axis of the timeline charts: from the first sample to the last.
fn time_axis(m: &SimMetrics) -> Axis {
    let times = m.timeline.iter().map(|s| s.t_s).filter(|t| t.is_finite());
    let (lo, hi) = times.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| {
        (lo.min(t), hi.max(t))
    });
    let (lo, hi) = if lo <= hi {
        (lo, hi)
    } else {
        (0.0, m.summary.simulated_s.max(0.0))
    };
    Axis::new(
        lo,
        hi,
        |a, b| format::time_ticks(a, b, X_TICKS),
        duration,
        "virtual time",
    )
}

/// A 0-100% axis, extended past 100% only if some value is above it.
fn share_axis(largest: f64, title: &str) -> Axis {
    let top = if largest.is_finite() && largest > 1.0 {
        format::nice_ceil(largest, Y_TICKS)
    } else {
        1.0
    };
    Axis::new(
        0.0,
        top,
        |a, b| format::number_ticks(a, b, Y_TICKS),
        percent,
        title,
    )
}

fn count_axis(largest: f64, title: &str) -> Axis {
    // A whole number of jobs at the top, so the ticks (whole steps) reach it.
    let top = format::nice_ceil(largest.max(1.0), Y_TICKS).ceil();
    Axis::new(
        0.0,
        top,
        |a, b| format::count_ticks(a, b, Y_TICKS),
        format::count,
        title,
    )
}

fn largest(series: &[Series]) -> f64 {
    series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

/// Names listed by the run first, then any only the samples carry, so nothing measured is
/// dropped and the run's order is kept.
fn names<'a>(listed: &'a [String], sampled: impl Iterator<Item = &'a String>) -> Vec<&'a String> {
    let mut out: Vec<&String> = Vec::new();
    for name in listed {
        if !out.contains(&name) {
            out.push(name);
        }
    }
    let extra: BTreeSet<&String> = sampled.filter(|n| !listed.contains(n)).collect();
    out.extend(extra);
    out
}

/// (a) Utilisation of each resource over time.
pub(super) fn utilisation(m: &SimMetrics) -> String {
    let resources = names(
        &m.resources,
        m.timeline.iter().flat_map(|s| s.utilisation.keys()),
    );
    let series: Vec<Series> = resources
        .iter()
        .enumerate()
        .map(|(i, r)| Series {
            label: (*r).clone(),
            colour: colour(i),
            style: Stroke::Solid,
            points: m
                .timeline
                .iter()
                .filter_map(|s| s.utilisation.get(*r).map(|u| (s.t_s, *u)))
                .collect(),
        })
        .collect();
    let y = share_axis(largest(&series), "requested / allocatable");
    line_chart(
        "Utilisation per resource over time",
        time_axis(m),
        y,
        &series,
    )
}

/// (b) Jobs pending and running over time.
pub(super) fn jobs(m: &SimMetrics) -> String {
    let line = |label: &str, c: usize, get: fn(&Sample) -> u32| Series {
        label: label.to_string(),
        colour: colour(c),
        style: Stroke::Solid,
        points: m
            .timeline
            .iter()
            .map(|s| (s.t_s, f64::from(get(s))))
            .collect(),
    };
    let series = [
        line("pending jobs", 3, |s| s.pending_jobs),
        line("running jobs", 0, |s| s.running_jobs),
    ];
    let y = count_axis(largest(&series), "jobs");
    line_chart(
        "Pending and running jobs over time",
        time_axis(m),
        y,
        &series,
    )
}

/// (c) Each queue's allocated share (solid) against its deserved share (dashed).
pub(super) fn queues(m: &SimMetrics) -> String {
    let queues = names(&m.queues, m.timeline.iter().flat_map(|s| s.queues.keys()));
    let mut series = Vec::new();
    for (i, q) in queues.iter().enumerate() {
        let share = |deserved: bool| -> Vec<(f64, f64)> {
            m.timeline
                .iter()
                .filter_map(|s| {
                    let share = s.queues.get(*q)?;
                    Some((
                        s.t_s,
                        if deserved {
                            share.deserved
                        } else {
                            share.allocated
                        },
                    ))
                })
                .collect()
        };
        series.push(Series {
            label: format!("{q} allocated"),
            colour: colour(i),
            style: Stroke::Solid,
            points: share(false),
        });
        series.push(Series {
            label: format!("{q} deserved"),
            colour: colour(i),
            style: Stroke::Dashed,
            points: share(true),
        });
    }
    let y = share_axis(largest(&series), "dominant share of cluster");
    line_chart(
        "Queue allocated share against deserved share over time",
        time_axis(m),
        y,
        &series,
    )
}

/// The value at or below which a fraction `p` of the sorted values lie (nearest rank).
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank.min(sorted.len()) - 1).copied()
}

/// (d) How long jobs took from submission to the end: a histogram, the cumulative share on
/// the right axis, and the 50th, 90th and 99th percentiles marked.
pub(super) fn completion(m: &SimMetrics) -> String {
    let mut values: Vec<f64> = m
        .jobs
        .iter()
        .filter_map(|j| j.completion_s)
        .filter(|v| v.is_finite() && *v >= 0.0)
        .collect();
    values.sort_by(f64::total_cmp);
    let largest = values.last().copied().unwrap_or(0.0);
    // Bins on a round time step, about thirty of them across the range.
    let step = format::time_ticks(0.0, largest.max(1.0), 30)
        .get(1)
        .copied()
        .filter(|s| *s > 0.0)
        .unwrap_or(1.0);
    let bins = ((largest / step).floor() as usize + 1).min(200);
    let mut counts = vec![0u32; bins];
    for v in &values {
        let b = ((v / step) as usize).min(bins - 1);
        if let Some(c) = counts.get_mut(b) {
            *c += 1;
        }
    }
    let x = Axis::new(
        0.0,
        step * bins as f64,
        |a, b| format::time_ticks(a, b, X_TICKS),
        duration,
        "completion time (submission to end)",
    );
    let top = counts.iter().copied().max().unwrap_or(0);
    let y = count_axis(f64::from(top), "jobs");
    let y2 = Axis::new(
        0.0,
        1.0,
        |a, b| format::number_ticks(a, b, 4),
        percent,
        "cumulative",
    );
    let keys = [
        Key {
            label: "jobs per bin".to_string(),
            colour: colour(0),
            style: Stroke::Bar,
        },
        Key {
            label: "cumulative share".to_string(),
            colour: colour(1),
            style: Stroke::Solid,
        },
        Key {
            label: "p50 / p90 / p99".to_string(),
            colour: "#555",
            style: Stroke::Dashed,
        },
    ];
    let mut canvas = Canvas::new("Completion-time distribution", x, y, Some(y2), &keys);
    if values.is_empty() {
        canvas.note("no job finished");
        return canvas.finish();
    }
    let mut bars = String::new();
    for (i, c) in counts.iter().enumerate() {
        if *c == 0 {
            continue;
        }
        let (x0, x1) = (canvas.px(i as f64 * step), canvas.px((i + 1) as f64 * step));
        let y = canvas.py(f64::from(*c));
        let _ = write!(
            bars,
            r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}" opacity="0.6"><title>{}–{}: {c} jobs</title></rect>"#,
            x0 + 0.5,
            (x1 - x0 - 1.0).max(0.5),
            (canvas.bottom() - y).max(0.0),
            colour(0),
            escape(&duration(i as f64 * step)),
            escape(&duration((i + 1) as f64 * step)),
        );
    }
    canvas.raw(&bars);
    let n = values.len() as f64;
    // A step: flat until each value, then up by one job's share.
    let mut cdf = vec![(0.0, 0.0)];
    for (i, v) in values.iter().enumerate() {
        cdf.push((*v, i as f64 / n));
        cdf.push((*v, (i + 1) as f64 / n));
    }
    cdf.push((step * bins as f64, 1.0));
    canvas.line(
        &Series {
            label: "cumulative share".to_string(),
            colour: colour(1),
            style: Stroke::Solid,
            points: cdf,
        },
        true,
    );
    let mut marks = String::new();
    for (k, (name, p)) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)]
        .into_iter()
        .enumerate()
    {
        let Some(v) = percentile(&values, p) else {
            continue;
        };
        let x = canvas.px(v);
        // Labels near the right edge go to the left of their line, inside the plot.
        let (label_x, anchor) = if x > chart::WIDTH - 200.0 {
            (x - 4.0, "end")
        } else {
            (x + 4.0, "start")
        };
        let _ = write!(
            marks,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#555" stroke-dasharray="4 4"/><text x="{label_x:.1}" y="{:.1}" class="mark" text-anchor="{anchor}">{name} {}</text>"##,
            canvas.top(),
            canvas.bottom(),
            canvas.top() + 12.0 + 14.0 * k as f64,
            escape(&duration(v))
        );
    }
    canvas.raw(&marks);
    canvas.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), Some(50.0));
        assert_eq!(percentile(&v, 0.99), Some(99.0));
        assert_eq!(percentile(&[7.0], 0.9), Some(7.0));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
