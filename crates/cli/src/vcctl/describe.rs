//! `volcano job view`: a Job described the way vcctl (and `kubectl describe`) lays it out:
//! metadata, spec, status, then the job's events.

use std::collections::BTreeMap;
use std::fmt::Display;

use k8s_openapi::api::core::v1::{Container, Event};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Resource;
use volcano_api::batch::Job;

use super::table::{Table, age, epoch_seconds};

/// One line of a description.
enum Line {
    /// `key:  value`, values of consecutive fields of a level lined up.
    Field(String, String),
    /// `key:` heading the more deeply indented lines under it.
    Section(String),
    /// Text as it is (a table row).
    Verbatim(String),
}

/// Lines at nesting levels (two spaces each).
#[derive(Default)]
struct Lines(Vec<(usize, Line)>);

impl Lines {
    fn field(&mut self, level: usize, key: &str, value: impl Display) {
        self.0
            .push((level, Line::Field(key.to_string(), value.to_string())));
    }

    /// A field shown only when it says something.
    fn some(&mut self, level: usize, key: &str, value: Option<impl Display>) {
        if let Some(v) = value {
            self.field(level, key, v);
        }
    }

    fn section(&mut self, level: usize, key: &str) {
        self.0.push((level, Line::Section(key.to_string())));
    }

    /// Lines taken as they are (a table), at a level.
    fn verbatim(&mut self, level: usize, text: &str) {
        for line in text.lines() {
            self.0.push((level, Line::Verbatim(line.to_string())));
        }
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (i, (level, line)) in self.0.iter().enumerate() {
            out.push_str(&"  ".repeat(*level));
            match line {
                Line::Section(key) => out.push_str(&format!("{key}:")),
                Line::Verbatim(text) => out.push_str(text),
                Line::Field(key, value) => {
                    let width = self.run_width(i);
                    let label = format!("{key}:");
                    out.push_str(format!("{label:<width$}  {value}").trim_end());
                }
            }
            out.push('\n');
        }
        out
    }

    /// The widest label of the run of fields at one level that line `i` belongs to.
    fn run_width(&self, i: usize) -> usize {
        let level = self.0[i].0;
        let in_run = |(l, line): &&(usize, Line)| *l == level && matches!(line, Line::Field(..));
        let before = self.0[..i].iter().rev().take_while(in_run);
        let after = self.0[i..].iter().take_while(in_run);
        before
            .chain(after)
            .filter_map(|(_, line)| match line {
                Line::Field(key, _) => Some(key.chars().count() + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }
}

fn map_or_none(map: Option<&BTreeMap<String, String>>) -> String {
    match map {
        Some(m) if !m.is_empty() => m
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
        _ => "<none>".to_string(),
    }
}

fn resources(list: Option<&BTreeMap<String, Quantity>>) -> Option<String> {
    let list = list.filter(|l| !l.is_empty())?;
    Some(
        list.iter()
            .map(|(k, v)| format!("{k}={}", v.0))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

fn non_zero(n: i32) -> Option<i32> {
    (n != 0).then_some(n)
}

fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

fn container(lines: &mut Lines, level: usize, c: &Container) {
    lines.field(level, "Name", &c.name);
    lines.some(level, "Image", c.image.as_deref());
    let command: Vec<String> = c
        .command
        .iter()
        .flatten()
        .chain(c.args.iter().flatten())
        .cloned()
        .collect();
    lines.some(
        level,
        "Command",
        (!command.is_empty()).then(|| command.join(" ")),
    );
    let res = c.resources.as_ref();
    lines.some(
        level,
        "Requests",
        resources(res.and_then(|r| r.requests.as_ref())),
    );
    lines.some(
        level,
        "Limits",
        resources(res.and_then(|r| r.limits.as_ref())),
    );
    lines.some(level, "Working Dir", c.working_dir.as_deref());
    for port in c.ports.iter().flatten() {
        let name = port
            .name
            .as_deref()
            .map_or(String::new(), |n| format!(" ({n})"));
        lines.field(level, "Port", format!("{}{name}", port.container_port));
    }
}

/// The description of `job` and its `events`, ages taken at `now` (Unix seconds).
pub fn describe_job(job: &Job, events: &[Event], now: i64) -> String {
    let mut l = Lines::default();
    let meta = &job.metadata;
    l.field(0, "Name", meta.name.as_deref().unwrap_or_default());
    l.field(
        0,
        "Namespace",
        meta.namespace.as_deref().unwrap_or_default(),
    );
    l.field(0, "Labels", map_or_none(meta.labels.as_ref()));
    l.field(0, "Annotations", map_or_none(meta.annotations.as_ref()));
    l.field(0, "API Version", Job::api_version(&()));
    l.field(0, "Kind", Job::kind(&()));
    l.section(0, "Metadata");
    l.some(
        1,
        "Creation Timestamp",
        meta.creation_timestamp.as_ref().map(|t| t.0),
    );
    l.some(1, "Generate Name", meta.generate_name.as_deref());
    l.some(1, "Generation", meta.generation);
    l.some(1, "Resource Version", meta.resource_version.as_deref());
    l.some(1, "UID", meta.uid.as_deref());

    let spec = &job.spec;
    l.section(0, "Spec");
    l.some(1, "Min Available", spec.min_available);
    l.some(1, "Min Success", spec.min_success);
    l.some(1, "Queue", non_empty(&spec.queue));
    l.some(1, "Scheduler Name", non_empty(&spec.scheduler_name));
    l.some(
        1,
        "Priority Class Name",
        non_empty(&spec.priority_class_name),
    );
    l.some(1, "Max Retry", spec.max_retry);
    l.some(
        1,
        "TTL Seconds After Finished",
        spec.ttl_seconds_after_finished,
    );
    if !spec.plugins.is_empty() {
        l.section(1, "Plugins");
        for (name, args) in &spec.plugins {
            l.field(2, name, format!("[{}]", args.join(" ")));
        }
    }
    policies(&mut l, 1, &spec.policies);
    l.section(1, "Tasks");
    for task in &spec.tasks {
        l.field(2, "Name", &task.name);
        l.field(2, "Replicas", task.replicas);
        l.some(2, "Min Available", task.min_available);
        l.some(2, "Max Retry", task.max_retry);
        if let Some(deps) = task.depends_on.as_ref().filter(|d| !d.name.is_empty()) {
            l.field(2, "Depends On", deps.name.join(", "));
        }
        policies(&mut l, 2, &task.policies);
        l.section(2, "Template");
        let pod = task.template.spec.clone().unwrap_or_default();
        l.section(3, "Containers");
        for c in &pod.containers {
            container(&mut l, 4, c);
        }
        l.some(3, "Restart Policy", pod.restart_policy.as_deref());
    }

    let status = job.status.clone().unwrap_or_default();
    l.section(0, "Status");
    l.section(1, "State");
    l.field(2, "Phase", &status.state.phase);
    l.some(2, "Reason", non_empty(&status.state.reason));
    l.some(2, "Message", non_empty(&status.state.message));
    l.some(
        2,
        "Last Transition Time",
        status.state.last_transition_time.as_ref().map(|t| t.0),
    );
    // As vcctl, counters show only when they are not zero.
    l.some(1, "Min Available", non_zero(status.min_available));
    l.some(1, "Pending", non_zero(status.pending));
    l.some(1, "Running", non_zero(status.running));
    l.some(1, "Succeeded", non_zero(status.succeeded));
    l.some(1, "Failed", non_zero(status.failed));
    l.some(1, "Terminating", non_zero(status.terminating));
    l.some(1, "Unknown", non_zero(status.unknown));
    l.some(1, "Retry Count", non_zero(status.retry_count));
    l.some(1, "Version", non_zero(status.version));
    if !status.task_status_count.is_empty() {
        l.section(1, "Task Status Count");
        for (task, counts) in &status.task_status_count {
            let phases: Vec<String> = counts
                .phase
                .iter()
                .map(|(p, n)| format!("{p}={n}"))
                .collect();
            l.field(2, task, phases.join(", "));
        }
    }
    if !status.controlled_resources.is_empty() {
        l.section(1, "Controlled Resources");
        for (k, v) in &status.controlled_resources {
            l.field(2, k, v);
        }
    }
    if !status.conditions.is_empty() {
        l.section(1, "Conditions");
        let mut t = Table::new(&[("Status", 0), ("Transition Time", 0)]).gap(2);
        for c in &status.conditions {
            let when = c.last_transition_time.as_ref().map(|t| t.0.to_string());
            t.row(vec![c.status.clone(), when.unwrap_or_default()]);
        }
        l.verbatim(2, &t.render());
    }
    events_section(&mut l, events, now);
    l.render()
}

fn policies(l: &mut Lines, level: usize, policies: &[volcano_api::batch::LifecyclePolicy]) {
    if policies.is_empty() {
        return;
    }
    l.section(level, "Policies");
    for p in policies {
        let mut when: Vec<String> = p.events.clone();
        if !p.event.is_empty() {
            when.insert(0, p.event.clone());
        }
        if let Some(code) = p.exit_code {
            when.push(format!("exit code {code}"));
        }
        let after = p
            .timeout
            .as_ref()
            .map_or(String::new(), |t| format!(" after {t}"));
        l.verbatim(
            level + 1,
            &format!("{} -> {}{after}", when.join(", "), p.action),
        );
    }
}

fn events_section(l: &mut Lines, events: &[Event], now: i64) {
    if events.is_empty() {
        l.field(0, "Events", "<none>");
        return;
    }
    l.section(0, "Events");
    let mut t = Table::new(&[
        ("Type", 8),
        ("Reason", 16),
        ("Age", 8),
        ("From", 16),
        ("Message", 0),
    ])
    .gap(2);
    t.row(
        ["----", "------", "---", "----", "-------"]
            .map(String::from)
            .to_vec(),
    );
    for e in events {
        let first = e
            .first_timestamp
            .as_ref()
            .map(epoch_seconds)
            .or_else(|| e.event_time.as_ref().map(|t| t.0.as_second()))
            .or_else(|| e.metadata.creation_timestamp.as_ref().map(epoch_seconds));
        let last = e.last_timestamp.as_ref().map(epoch_seconds).or(first);
        let age_of = |t: Option<i64>| t.map_or("<unknown>".to_string(), |t| age(now, t));
        let count = e.count.unwrap_or(1);
        let when = if count > 1 {
            format!("{} (x{count} over {})", age_of(last), age_of(first))
        } else {
            age_of(first)
        };
        let source = e.source.clone().unwrap_or_default();
        let from: Vec<String> = [
            source.component.or_else(|| e.reporting_component.clone()),
            source.host,
        ]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect();
        t.row(vec![
            e.type_.clone().unwrap_or_default(),
            e.reason.clone().unwrap_or_default(),
            when,
            from.join(", "),
            e.message.as_deref().unwrap_or_default().trim().to_string(),
        ]);
    }
    l.verbatim(1, &t.render());
}

/// The events about `job` (by kind, name and, where both have one, uid), oldest first.
pub fn events_of(job: &Job, events: Vec<Event>) -> Vec<Event> {
    let name = job.metadata.name.as_deref();
    let uid = job.metadata.uid.as_deref();
    let mut mine: Vec<Event> = events
        .into_iter()
        .filter(|e| {
            let o = &e.involved_object;
            o.kind.as_deref() == Some("Job")
                && o.name.as_deref() == name
                && (o.uid.is_none() || uid.is_none() || o.uid.as_deref() == uid)
        })
        .collect();
    mine.sort_by_key(|e| {
        e.last_timestamp
            .as_ref()
            .or(e.first_timestamp.as_ref())
            .map(epoch_seconds)
    });
    mine
}

#[cfg(test)]
#[path = "describe_tests.rs"]
mod tests;
