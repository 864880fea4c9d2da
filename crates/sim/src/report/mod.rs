//! A simulation run as one HTML page a person can open from disk and read at a glance: the
//! headline figures, then charts and tables. The page is self-contained (inline CSS, charts
//! drawn here as inline SVG, no script, no font or image fetched), every text from the run is
//! escaped, and empty or partial metrics draw as empty charts, never as "NaN".

use std::fmt::Write;

use crate::metrics::{SimMetrics, Stats};

mod chart;
mod figures;
mod format;
mod tables;
mod topology;
mod why;

#[cfg(test)]
mod tests;

use format::{duration, escape, millis, percent};

/// The report of one run, titled `title`, as a complete HTML document.
pub fn render_html(m: &SimMetrics, title: &str) -> String {
    let mut page = String::with_capacity(64 * 1024);
    let _ = write!(
        page,
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{CSS}</style>
</head>
<body>
<main>
<header><h1>{title}</h1><p class="sub">{subtitle}</p></header>
"#,
        title = escape(title),
        subtitle = escape(&subtitle(m)),
    );
    page.push_str(&cards(m));
    section(
        &mut page,
        "Utilisation",
        "Requested by bound pods over allocatable of ready nodes, per resource.",
        &figures::utilisation(m),
    );
    section(
        &mut page,
        "Jobs waiting and running",
        "Pending: submitted, no pod running yet. Running: at least one pod running.",
        &figures::jobs(m),
    );
    section(
        &mut page,
        "Queue shares",
        "Each queue's dominant share of the cluster: what its pods hold (solid) against what it deserves (dashed, same colour).",
        &figures::queues(m),
    );
    section(
        &mut page,
        "Completion time",
        "Submission to end, over jobs that ended; the line is the share of them done by then.",
        &figures::completion(m),
    );
    section(
        &mut page,
        "Slowest jobs",
        "By completion time, slowest first.",
        &tables::slowest_jobs(&m.jobs),
    );
    if let Some(table) = tables::unfinished_jobs(&m.jobs) {
        section(
            &mut page,
            "Unfinished jobs",
            "Not finished when the run ended, earliest submitted first.",
            &table,
        );
    }
    if let Some(t) = &m.topology {
        section(
            &mut page,
            "Network topology",
            "HyperNodes, tier by tier, with what pods use of each domain at the end of the run; gangs kept inside one tier-1 domain; waits of jobs with a network topology.",
            &topology::section(t),
        );
    }
    if let Some(table) = tables::evictions(&m.evictions) {
        section(
            &mut page,
            "Evictions",
            "Pods evicted, and what took their place.",
            &table,
        );
    }
    if let Some(table) = why::waited(&m.jobs) {
        section(
            &mut page,
            "Why jobs waited",
            "Each message the scheduler wrote on a job's PodGroup while it was not running, and the virtual time spent under it.",
            &table,
        );
    }
    if let Some(table) = why::failed(&m.jobs) {
        section(
            &mut page,
            "Why jobs failed",
            "The last pod failure before each failed job ended (exit code, lost node or eviction), and the phases the job controller took it through.",
            &table,
        );
    }
    section(
        &mut page,
        "Configuration",
        "The seed of the run and the scheduler configuration it used.",
        &why::configuration(m),
    );
    page.push_str("<footer>volcano-rs sim</footer>\n</main>\n</body>\n</html>\n");
    page
}

fn subtitle(m: &SimMetrics) -> String {
    format!(
        "{} simulated · {} jobs · {} queues · {} pods bound",
        duration(m.summary.simulated_s),
        m.summary.jobs,
        m.queues.len(),
        m.summary.pods_bound
    )
}

fn section(page: &mut String, heading: &str, hint: &str, body: &str) {
    let _ = writeln!(
        page,
        "<section><h2>{}</h2><p class=\"hint\">{}</p>{body}</section>",
        escape(heading),
        escape(hint)
    );
}

/// One headline figure: a label, a big value, and a detail line (all escaped here).
fn card(out: &mut String, label: &str, value: &str, detail: &str) {
    let _ = write!(
        out,
        r#"<div class="card"><div class="label">{}</div><div class="value">{}</div><div class="detail">{}</div></div>"#,
        escape(label),
        escape(value),
        escape(detail)
    );
}

/// `p50 · p90 · p99` of a distribution, or a dash when it is empty.
fn spread(s: &Stats, show: impl Fn(f64) -> String) -> (String, String) {
    if s.count == 0 {
        return ("–".to_string(), "no values".to_string());
    }
    (
        show(s.p50),
        format!(
            "median · p90 {} · p99 {} · max {}",
            show(s.p90),
            show(s.p99),
            show(s.max)
        ),
    )
}

fn cards(m: &SimMetrics) -> String {
    let s = &m.summary;
    let mut out = String::from(r#"<section class="cards">"#);
    card(
        &mut out,
        "Jobs",
        &s.jobs.to_string(),
        &format!(
            "{} completed · {} failed · {} unfinished",
            s.completed, s.failed, s.unfinished
        ),
    );
    card(
        &mut out,
        "Makespan",
        &duration(s.makespan_s),
        "first submission to last end",
    );
    let (value, detail) = spread(&s.wait_s, duration);
    card(&mut out, "Wait", &value, &detail);
    let (value, detail) = spread(&s.completion_s, duration);
    card(&mut out, "Completion", &value, &detail);
    out.push_str(&utilisation_card(m));
    card(
        &mut out,
        "Evictions",
        &s.evictions.to_string(),
        &format!("{} pods bound", s.pods_bound),
    );
    let latency = if s.session_ms.count == 0 {
        "no latency recorded".to_string()
    } else {
        format!(
            "latency p50 {} · p99 {}",
            millis(s.session_ms.p50),
            millis(s.session_ms.p99)
        )
    };
    card(&mut out, "Sessions", &s.sessions.to_string(), &latency);
    out.push_str("</section>\n");
    out
}

/// Mean utilisation per resource as small bars, in the run's resource order.
fn utilisation_card(m: &SimMetrics) -> String {
    let mean = &m.summary.mean_utilisation;
    let mut names: Vec<&String> = m
        .resources
        .iter()
        .filter(|r| mean.contains_key(*r))
        .collect();
    names.extend(mean.keys().filter(|k| !m.resources.contains(k)));
    let mut rows = String::new();
    for name in names {
        let u = mean.get(name).copied().unwrap_or(0.0);
        let width = if u.is_finite() {
            u.clamp(0.0, 1.0) * 100.0
        } else {
            0.0
        };
        let _ = write!(
            rows,
            r#"<div class="bar-row"><span class="bar-name">{}</span><span class="bar"><span style="width:{width:.1}%"></span></span><span class="bar-value">{}</span></div>"#,
            escape(name),
            escape(&percent(u))
        );
    }
    if rows.is_empty() {
        rows.push_str(r#"<div class="detail">no samples</div>"#);
    }
    format!(r#"<div class="card wide"><div class="label">Mean utilisation</div>{rows}</div>"#)
}

/// The page's whole style: a system font stack, so nothing is fetched.
const CSS: &str = r#"
:root { --ink: #1d2430; --muted: #5b6475; --line: #d9dee7; --bg: #f6f7f9; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 20px 40px; }
pre { overflow-x: auto; background: #fff; border: 1px solid var(--line); padding: 8px 10px; font-size: 12px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 0 0 2px; }
.sub, .hint, .more, footer { color: var(--muted); }
.hint { margin: 0 0 8px; font-size: 13px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin: 14px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 10px;
  background: none; border: none; padding: 0; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.card.wide { grid-column: span 2; }
.label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.value { font-size: 26px; font-weight: 600; font-variant-numeric: tabular-nums; }
.detail { color: var(--muted); font-size: 12.5px; }
.bar-row { display: grid; grid-template-columns: 8.5em 1fr 3.5em; gap: 8px; align-items: center; margin-top: 5px; }
.bar-name { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; font-size: 13px; }
.bar { background: #e8ebf0; border-radius: 3px; height: 10px; overflow: hidden; }
.bar > span { display: block; height: 100%; background: #2f6db5; }
.bar-value { text-align: right; font-variant-numeric: tabular-nums; }
svg.chart { width: 100%; height: auto; display: block; }
svg .grid { stroke: #eceff4; }
svg .axis { stroke: #8a93a3; }
svg .tick { font-size: 12px; fill: var(--muted); }
svg .axis-title { font-size: 12.5px; fill: var(--muted); }
svg .legend { font-size: 13px; fill: var(--ink); }
svg .note { font-size: 15px; fill: var(--muted); }
svg .mark { font-size: 12px; fill: #333; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: left; white-space: nowrap; }
td:first-child { white-space: normal; word-break: break-all; }
th { color: var(--muted); font-weight: 600; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.empty { color: var(--muted); }
footer { font-size: 12px; text-align: right; }
"#;
