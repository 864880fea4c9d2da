//! A scrape of `/metrics` carries every series Volcano's scheduler and controllers export,
//! under the same name, with the same type and label names.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use prometheus_client::registry::Registry;
use volcano_runtime::metrics::{ControllerMetrics, SchedulerMetrics, label};
use volcano_runtime::serve::render;

/// Every metric Volcano's scheduler and controllers export: `(name, type, label names)`, as
/// Go's client writes them in the text format 0.0.4 (a counter keeps the name it was given,
/// with or without `_total`). Taken by hand from volcano-sh/volcano at commit
/// ed72c7c815a9fd547a787134676f73d42e9d049c:
/// - pkg/scheduler/metrics/metrics.go, queue.go, job.go, namespace.go
/// - pkg/controllers/metrics/job.go, queue.go
/// - pkg/controllers/job/state/metrics.go, pkg/controllers/jobflow/state/metrics.go
///
/// Left out on purpose: Go's runtime and process collectors, `rest_client_*` and
/// `promhttp_*` (Go client internals, not Volcano's), `volcano_goroutines` (initialised for
/// kube-scheduler plugins and never registered), the vGPU device series of
/// pkg/scheduler/api/devices/nvidia/vgpu/metrics.go, and the agent and agent-scheduler.
const VOLCANO: &[(&str, &str, &[&str])] = &[
    // pkg/scheduler/metrics/metrics.go
    (
        "volcano_e2e_scheduling_latency_milliseconds",
        "histogram",
        &[],
    ),
    (
        "volcano_open_session_duration_milliseconds",
        "histogram",
        &[],
    ),
    (
        "volcano_e2e_job_scheduling_latency_milliseconds",
        "histogram",
        &[],
    ),
    (
        "volcano_e2e_job_scheduling_duration",
        "gauge",
        &["job_name", "queue", "job_namespace"],
    ),
    (
        "volcano_e2e_job_scheduling_start_time",
        "gauge",
        &["job_name", "queue", "job_namespace"],
    ),
    (
        "volcano_e2e_job_scheduling_last_time",
        "gauge",
        &["job_name", "queue", "job_namespace"],
    ),
    (
        "volcano_plugin_scheduling_latency_milliseconds",
        "histogram",
        &["plugin", "OnSession"],
    ),
    (
        "volcano_action_scheduling_latency_milliseconds",
        "histogram",
        &["action"],
    ),
    (
        "volcano_task_scheduling_latency_milliseconds",
        "histogram",
        &["stage"],
    ),
    (
        "volcano_scheduling_stage_duration_milliseconds",
        "histogram",
        &["stage"],
    ),
    ("volcano_schedule_attempts_total", "counter", &["result"]),
    ("volcano_pod_preemption_victims", "gauge", &[]),
    ("volcano_total_preemption_attempts", "counter", &[]),
    (
        "volcano_eviction_transactions_total",
        "counter",
        &["action"],
    ),
    ("volcano_unschedule_task_count", "gauge", &["job_id"]),
    ("volcano_unschedule_job_count", "gauge", &[]),
    // pkg/scheduler/metrics/queue.go
    (
        "volcano_queue_allocated_milli_cpu",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_allocated_memory_bytes",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_allocated_scalar_resources",
        "gauge",
        &["queue_name", "resource"],
    ),
    ("volcano_queue_request_milli_cpu", "gauge", &["queue_name"]),
    (
        "volcano_queue_request_memory_bytes",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_request_scalar_resources",
        "gauge",
        &["queue_name", "resource"],
    ),
    ("volcano_queue_deserved_milli_cpu", "gauge", &["queue_name"]),
    (
        "volcano_queue_deserved_memory_bytes",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_deserved_scalar_resources",
        "gauge",
        &["queue_name", "resource"],
    ),
    ("volcano_queue_share", "gauge", &["queue_name"]),
    ("volcano_queue_weight", "gauge", &["queue_name"]),
    ("volcano_queue_overused", "gauge", &["queue_name"]),
    ("volcano_queue_capacity_milli_cpu", "gauge", &["queue_name"]),
    (
        "volcano_queue_capacity_memory_bytes",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_capacity_scalar_resources",
        "gauge",
        &["queue_name", "resource"],
    ),
    (
        "volcano_queue_real_capacity_milli_cpu",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_real_capacity_memory_bytes",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_real_capacity_scalar_resources",
        "gauge",
        &["queue_name", "resource"],
    ),
    ("volcano_queue_inqueue_milli_cpu", "gauge", &["queue_name"]),
    (
        "volcano_queue_inqueue_memory_bytes",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_inqueue_scalar_resources",
        "gauge",
        &["queue_name", "resource"],
    ),
    // pkg/scheduler/metrics/job.go
    ("volcano_job_share", "gauge", &["job_ns", "job_id"]),
    ("volcano_job_retry_counts", "counter", &["job_id"]),
    // pkg/scheduler/metrics/namespace.go
    ("volcano_namespace_share", "gauge", &["namespace_name"]),
    ("volcano_namespace_weight", "gauge", &["namespace_name"]),
    (
        "volcano_namespace_weighted_share",
        "gauge",
        &["namespace_name"],
    ),
    // pkg/controllers/metrics/job.go
    (
        "volcano_controller_job_to_pod_creation_latency_milliseconds",
        "histogram",
        &[],
    ),
    // pkg/controllers/metrics/queue.go
    (
        "volcano_queue_pod_group_inqueue_count",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_pod_group_pending_count",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_pod_group_running_count",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_pod_group_unknown_count",
        "gauge",
        &["queue_name"],
    ),
    (
        "volcano_queue_pod_group_completed_count",
        "gauge",
        &["queue_name"],
    ),
    // pkg/controllers/job/state/metrics.go
    (
        "volcano_job_completed_phase_count",
        "counter",
        &["job_name", "queue_name"],
    ),
    (
        "volcano_job_failed_phase_count",
        "counter",
        &["job_name", "queue_name"],
    ),
    // pkg/controllers/jobflow/state/metrics.go
    (
        "volcano_jobflow_succeed_phase_count",
        "counter",
        &["jobflow_namespace"],
    ),
    (
        "volcano_jobflow_failed_phase_count",
        "counter",
        &["jobflow_namespace"],
    ),
];

/// A value in every family of both components, so each shows its label names in a sample,
/// as Go's client shows a vector family only once it has a member.
fn registry_with_samples() -> Registry {
    let mut reg = Registry::default();
    let s = SchedulerMetrics::register(&mut reg);
    let c = ControllerMetrics::register(&mut reg);
    let job = || {
        [
            ("job_name", "j".to_string()),
            ("queue", "q".to_string()),
            ("job_namespace", "ns".to_string()),
        ]
    };
    s.e2e_latency_ms.observe(3.0);
    s.open_session_ms.observe(1.0);
    s.e2e_job_latency_ms.observe(500.0);
    s.e2e_job_duration.set(job(), 500.0);
    s.e2e_job_start_time.set(job(), 1.0);
    s.e2e_job_last_time.set(job(), 2.0);
    s.plugin_latency_ms
        .get_or_create(&[
            ("plugin", "gang".to_string()),
            ("OnSession", "OnSessionOpen".to_string()),
        ])
        .observe(0.2);
    s.action_latency_ms
        .get_or_create(&label("action", "allocate"))
        .observe(2.0);
    s.task_latency_ms
        .get_or_create(&label("stage", "Bound"))
        .observe(80.0);
    s.stage_duration_ms
        .get_or_create(&label("stage", "Bind"))
        .observe(1.0);
    s.schedule_attempts
        .get_or_create(&label("result", "scheduled"))
        .inc();
    s.preemption_victims.set(1);
    s.preemption_attempts.inc();
    s.eviction_transactions
        .get_or_create(&label("action", "preempt"))
        .inc();
    s.unschedulable_tasks.set(label("job_id", "j"), 2.0);
    s.unschedulable_jobs.set(1);
    let q = &s.queues;
    for r in [
        &q.allocated,
        &q.request,
        &q.deserved,
        &q.capacity,
        &q.real_capacity,
        &q.inqueue,
    ] {
        r.milli_cpu.set(label("queue_name", "q"), 1000.0);
        r.memory_bytes.set(label("queue_name", "q"), 1e9);
        r.scalar.set(
            [
                ("queue_name", "q".to_string()),
                ("resource", "nvidia.com/gpu".to_string()),
            ],
            1000.0,
        );
    }
    q.share.set(label("queue_name", "q"), 0.5);
    q.weight.set(label("queue_name", "q"), 1.0);
    q.overused.set(label("queue_name", "q"), 0.0);
    s.job_share.set(
        [("job_ns", "ns".to_string()), ("job_id", "j".to_string())],
        0.5,
    );
    s.job_retries.member(label("job_id", "j")).inc();
    s.namespace_share.set(label("namespace_name", "ns"), 0.5);
    s.namespace_weight.set(label("namespace_name", "ns"), 1.0);
    s.namespace_weighted_share
        .set(label("namespace_name", "ns"), 0.5);
    c.job_to_pod_ms.observe(60.0);
    for g in &c.queue_pod_groups {
        g.set(label("queue_name", "q"), 1.0);
    }
    let job2 = || {
        [
            ("job_name", "ns/j".to_string()),
            ("queue_name", "q".to_string()),
        ]
    };
    c.job_completed.get_or_create(&job2()).inc();
    c.job_failed.get_or_create(&job2()).inc();
    c.jobflow_succeeded
        .get_or_create(&label("jobflow_namespace", "ns"))
        .inc();
    c.jobflow_failed
        .get_or_create(&label("jobflow_namespace", "ns"))
        .inc();
    // volcano-rs's own.
    s.snapshots.get_or_create(&label("source", "kept")).inc();
    s.pending_reasons
        .set(label("reason", "NotEnoughResources"), 1.0);
    c.queue_depth
        .get_or_create(&label("controller", "job"))
        .set(1);
    c.changes.get_or_create(&label("result", "ok")).inc();
    reg
}

/// Family → (type, label-name sets seen in its samples), from a 0.0.4 text scrape.
fn families(text: &str) -> BTreeMap<String, (String, BTreeSet<BTreeSet<String>>)> {
    let mut out: BTreeMap<String, (String, BTreeSet<BTreeSet<String>>)> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            out.insert(name.to_string(), (kind.to_string(), BTreeSet::new()));
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let end = line.find(['{', ' ']).unwrap();
        let sample = &line[..end];
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .filter_map(|s| sample.strip_suffix(s))
            .find(|f| out.get(*f).is_some_and(|(k, _)| k == "histogram"))
            .unwrap_or(sample);
        let labels: BTreeSet<String> = if line[end..].starts_with('{') {
            let close = line.rfind('}').unwrap();
            line[end + 1..close]
                .split("\",")
                .filter_map(|kv| kv.split_once('=').map(|(k, _)| k.to_string()))
                .filter(|k| k != "le")
                .collect()
        } else {
            BTreeSet::new()
        };
        let entry = out
            .get_mut(family)
            .unwrap_or_else(|| panic!("sample {sample} before its # TYPE line"));
        entry.1.insert(labels);
    }
    out
}

#[test]
fn every_volcano_metric_is_exported_with_its_type_and_labels() {
    let text = render(&registry_with_samples()).unwrap();
    let ours = families(&text);
    let mut problems = Vec::new();
    for (name, kind, labels) in VOLCANO {
        let want: BTreeSet<String> = labels.iter().map(|l| l.to_string()).collect();
        match ours.get(*name) {
            None => problems.push(format!("{name}: missing")),
            Some((k, _)) if k != kind => {
                problems.push(format!("{name}: type {k}, Volcano's is {kind}"));
            }
            Some((_, sets)) if sets.len() != 1 || !sets.contains(&want) => {
                problems.push(format!("{name}: labels {sets:?}, Volcano's are {want:?}"));
            }
            Some(_) => {}
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n\nscrape:\n{text}",
        problems.join("\n")
    );
}

#[test]
fn our_own_series_do_not_take_a_volcano_name() {
    let text = render(&registry_with_samples()).unwrap();
    let volcano: BTreeSet<&str> = VOLCANO.iter().map(|(n, _, _)| *n).collect();
    let extra: BTreeSet<String> = families(&text)
        .into_keys()
        .filter(|n| !volcano.contains(n.as_str()))
        .collect();
    let expected: BTreeSet<String> = [
        "volcano_pods_bound_total",
        "volcano_bind_failures_total",
        "volcano_sessions_standby_total",
        "volcano_snapshots_total",
        "volcano_unschedulable_pod_groups",
        "volcano_controller_queue_depth",
        "volcano_controller_changes_total",
        "volcano_controller_turns_total",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(extra, expected);
}

#[test]
fn histograms_have_volcanos_buckets() {
    let text = render(&registry_with_samples()).unwrap();
    let les = |name: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}_bucket")))
            .filter_map(|l| {
                l.split("le=\"")
                    .nth(1)?
                    .split('"')
                    .next()
                    .map(str::to_string)
            })
            .collect()
    };
    let e2e = les("volcano_e2e_scheduling_latency_milliseconds");
    assert_eq!(e2e.len(), 21, "20 buckets and +Inf: {e2e:?}");
    assert_eq!(e2e.first().map(String::as_str), Some("1"));
    assert_eq!(e2e.last().map(String::as_str), Some("+Inf"));
    let action = les("volcano_action_scheduling_latency_milliseconds");
    assert_eq!(action.len(), 21);
    let plugin = les("volcano_plugin_scheduling_latency_milliseconds");
    assert_eq!(plugin.len(), 16);
    assert_eq!(plugin.first().map(String::as_str), Some("0.1"));
    let job = les("volcano_e2e_job_scheduling_latency_milliseconds");
    assert_eq!(job.len(), 31);
    assert_eq!(job.first().map(String::as_str), Some("100"));
}

#[test]
fn the_grafana_dashboard_charts_only_series_we_export() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/grafana/volcano-dashboard.json"
    );
    let dashboard = std::fs::read_to_string(path).unwrap();
    let _: serde_json::Value = serde_json::from_str(&dashboard).expect("valid JSON");
    let ours = families(&render(&registry_with_samples()).unwrap());
    let mut used = BTreeSet::new();
    for (i, _) in dashboard.match_indices("volcano_") {
        let name: String = dashboard[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| ours.get(*f).is_some_and(|(k, _)| k == "histogram"))
            })
            .unwrap_or(&name)
            .to_string();
        used.insert(family);
    }
    let missing: Vec<&String> = used.iter().filter(|n| !ours.contains_key(*n)).collect();
    assert!(missing.is_empty(), "the dashboard charts {missing:?}");
    assert!(used.len() > 20, "{used:?}");
}
