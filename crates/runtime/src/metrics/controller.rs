//! The controllers' series: Volcano's (`pkg/controllers/metrics/{job,queue}.go`,
//! `pkg/controllers/job/state/metrics.go`, `pkg/controllers/jobflow/state/metrics.go`) and
//! volcano-rs's own (work queue depth, changes written, turns), and how they are recorded
//! from what the controllers' mirror sees.

use std::collections::HashMap;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use volcano_api::Objects;
use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::Pod;

use super::{GaugeVec, Label, Labels2, POD_GROUP_PHASES, histogram, label};

/// The queue a PodGroup naming none belongs to.
const DEFAULT_QUEUE: &str = "default";

/// What the controller manager reports.
#[derive(Clone, Debug)]
pub struct ControllerMetrics {
    /// `volcano_queue_pod_group_{inqueue,pending,running,unknown,completed}_count{queue_name}`,
    /// in [`POD_GROUP_PHASES`] order.
    pub queue_pod_groups: [GaugeVec<Label>; 5],
    /// `volcano_job_completed_phase_count{job_name,queue_name}`.
    pub job_completed: Family<Labels2, Counter>,
    /// `volcano_job_failed_phase_count{job_name,queue_name}`.
    pub job_failed: Family<Labels2, Counter>,
    /// `volcano_jobflow_succeed_phase_count{jobflow_namespace}`.
    pub jobflow_succeeded: Family<Label, Counter>,
    /// `volcano_jobflow_failed_phase_count{jobflow_namespace}`.
    pub jobflow_failed: Family<Label, Counter>,
    /// `volcano_controller_job_to_pod_creation_latency_milliseconds`.
    pub job_to_pod_ms: Histogram,
    /// `volcano_controller_queue_depth{controller}` (volcano-rs): work items waiting.
    pub queue_depth: Family<Label, Gauge>,
    /// `volcano_controller_changes_total{result}` (volcano-rs): `ok` or `failed`.
    pub changes: Family<Label, Counter>,
    /// `volcano_controller_turns_total` (volcano-rs).
    pub turns: Counter,
}

impl ControllerMetrics {
    /// Registers the controllers' metrics in `reg`.
    pub fn register(reg: &mut Registry) -> ControllerMetrics {
        let m = ControllerMetrics {
            queue_pod_groups: std::array::from_fn(|_| GaugeVec::new()),
            job_completed: Family::default(),
            job_failed: Family::default(),
            jobflow_succeeded: Family::default(),
            jobflow_failed: Family::default(),
            job_to_pod_ms: histogram(50.0, 60_000.0, 30),
            queue_depth: Family::default(),
            changes: Family::default(),
            turns: Counter::default(),
        };
        for (phase, family) in POD_GROUP_PHASES.iter().zip(&m.queue_pod_groups) {
            family.register(
                reg,
                &format!("volcano_queue_pod_group_{}_count", phase.to_lowercase()),
                &format!("The number of {phase} PodGroup in this queue"),
            );
        }
        reg.register(
            "volcano_job_completed_phase_count",
            "Number of job completed phase",
            m.job_completed.clone(),
        );
        reg.register(
            "volcano_job_failed_phase_count",
            "Number of job failed phase",
            m.job_failed.clone(),
        );
        reg.register(
            "volcano_jobflow_succeed_phase_count",
            "Number of jobflow succeed phase",
            m.jobflow_succeeded.clone(),
        );
        reg.register(
            "volcano_jobflow_failed_phase_count",
            "Number of jobflow failed phase",
            m.jobflow_failed.clone(),
        );
        reg.register(
            "volcano_controller_job_to_pod_creation_latency_milliseconds",
            "Latency from VCJob creation to pod created in milliseconds",
            m.job_to_pod_ms.clone(),
        );
        reg.register(
            "volcano_controller_queue_depth",
            "Objects waiting in each controller's work queue",
            m.queue_depth.clone(),
        );
        reg.register(
            "volcano_controller_changes",
            "Changes written to the API server, by result",
            m.changes.clone(),
        );
        reg.register(
            "volcano_controller_turns",
            "Reconcile turns taken by the controllers",
            m.turns.clone(),
        );
        m
    }

    /// Counts every queue's PodGroups by phase (a PodGroup without a phase is Pending) and
    /// removes the series of queues that are gone.
    pub fn record_queues(&self, objs: &Objects) {
        let mut counts: HashMap<(&str, usize), usize> = HashMap::new();
        for pg in &objs.pod_groups {
            let queue = if pg.spec.queue.is_empty() {
                DEFAULT_QUEUE
            } else {
                pg.spec.queue.as_str()
            };
            let phase = pg
                .status
                .as_ref()
                .map(|s| s.phase.as_str())
                .filter(|p| !p.is_empty())
                .unwrap_or("Pending");
            if let Some(i) = POD_GROUP_PHASES.iter().position(|p| *p == phase) {
                *counts.entry((queue, i)).or_default() += 1;
            }
        }
        for q in &objs.queues {
            let Some(name) = q.metadata.name.as_deref() else {
                continue;
            };
            for (i, family) in self.queue_pod_groups.iter().enumerate() {
                let n = counts.get(&(name, i)).copied().unwrap_or(0);
                family.set(label("queue_name", name), n as f64);
            }
        }
        for family in &self.queue_pod_groups {
            family.sweep();
        }
    }

    /// Counts a Job that reached `Completed` or `Failed` (`job_name` is `namespace/name`, as
    /// Volcano writes it).
    pub fn job_changed(&self, old: &Job, new: &Job) {
        let phase = |j: &Job| j.status.as_ref().map(|s| s.state.phase.clone());
        let now = phase(new);
        if now == phase(old) {
            return;
        }
        let family = match now.as_deref() {
            Some("Completed") => &self.job_completed,
            Some("Failed") => &self.job_failed,
            _ => return,
        };
        let name = format!(
            "{}/{}",
            new.metadata.namespace.as_deref().unwrap_or_default(),
            new.metadata.name.as_deref().unwrap_or_default()
        );
        family
            .get_or_create(&[("job_name", name), ("queue_name", new.spec.queue.clone())])
            .inc();
    }

    /// Observes the time from a Job's creation to that of a pod it owns.
    pub fn pod_created(&self, pod: &Pod, objs: &Objects) {
        let Some(owner) = pod.metadata.owner_references.as_ref().and_then(|o| {
            o.iter().find(|o| {
                o.kind == "Job"
                    && o.api_version.starts_with("batch.volcano.sh/")
                    && o.controller == Some(true)
            })
        }) else {
            return;
        };
        let Some(job) = objs
            .jobs
            .iter()
            .find(|j| j.metadata.uid.as_deref() == Some(owner.uid.as_str()))
        else {
            return;
        };
        if let (Some(p), Some(j)) = (
            pod.metadata.creation_timestamp.as_ref(),
            job.metadata.creation_timestamp.as_ref(),
        ) {
            let ms = (p.0.as_millisecond() - j.0.as_millisecond()).max(0);
            self.job_to_pod_ms.observe(ms as f64);
        }
    }
}
