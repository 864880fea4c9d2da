//! Prometheus metrics, with Volcano's names where Volcano has one (`volcano_` prefix, as its
//! scheduler registers them), so existing dashboards keep working.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// One label: `[(name, value)]`.
pub type Label = [(&'static str, String); 1];
/// Two labels.
pub type Labels2 = [(&'static str, String); 2];

/// A float gauge.
pub type FGauge = Gauge<f64, AtomicU64>;

/// What the scheduler reports.
#[derive(Clone)]
pub struct SchedulerMetrics {
    /// Volcano's `e2e_scheduling_latency_milliseconds`: one whole session.
    pub e2e_latency_ms: Histogram,
    /// Volcano's `action_scheduling_latency_microseconds{action}`.
    pub action_latency_us: Family<Label, Histogram>,
    /// Volcano's `schedule_attempts_total{result}`: tasks scheduled or left unschedulable.
    pub schedule_attempts: Family<Label, Counter>,
    /// Volcano's `total_preemption_attempts`: evictions decided.
    pub preemption_attempts: Counter,
    /// Volcano's `pod_preemption_victims`: pods evicted by the last session.
    pub preemption_victims: Gauge,
    /// Volcano's `unschedule_job_count`: PodGroups left unschedulable by the last session.
    pub unschedulable_jobs: Gauge,
    /// Volcano's `unschedule_task_count{job_id}` is per job; volcano-rs reports the total.
    pub unschedulable_tasks: Gauge,
    /// Volcano's `queue_allocated_milli_cpu{queue_name}`.
    pub queue_allocated_milli_cpu: Family<Label, FGauge>,
    /// Volcano's `queue_allocated_memory_bytes{queue_name}`.
    pub queue_allocated_memory_bytes: Family<Label, FGauge>,
    /// Volcano's `queue_allocated_scalar_resources{queue_name,resource}`.
    pub queue_allocated_scalar: Family<Labels2, FGauge>,
    /// Volcano's `queue_weight{queue_name}`.
    pub queue_weight: Family<Label, Gauge>,
    /// Volcano's `queue_pod_group_{inqueue,pending,running,unknown,completed}_count`.
    pub queue_pod_groups: [Family<Label, Gauge>; 5],
    /// Pods bound (volcano-rs; Volcano has no such counter).
    pub pods_bound: Counter,
    /// Binds the API server refused; the pod went back to the cache.
    pub bind_failures: Counter,
    /// Sessions skipped because this replica is not the leader.
    pub sessions_standby: Counter,
    /// Session snapshots by `source`: `kept` (brought up to date in place) or `rebuilt` (from
    /// all objects).
    pub snapshots: Family<Label, Counter>,
}

/// The PodGroup phases counted per queue, in [`SchedulerMetrics::queue_pod_groups`] order.
pub const POD_GROUP_PHASES: [&str; 5] = ["Inqueue", "Pending", "Running", "Unknown", "Completed"];

impl SchedulerMetrics {
    /// Registers the scheduler's metrics in `reg`.
    pub fn register(reg: &mut Registry) -> SchedulerMetrics {
        let m = SchedulerMetrics {
            e2e_latency_ms: Histogram::new(exponential_buckets(5.0, 2.0, 10)),
            action_latency_us: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(5.0, 2.0, 10))
            }),
            schedule_attempts: Family::default(),
            preemption_attempts: Counter::default(),
            preemption_victims: Gauge::default(),
            unschedulable_jobs: Gauge::default(),
            unschedulable_tasks: Gauge::default(),
            queue_allocated_milli_cpu: Family::default(),
            queue_allocated_memory_bytes: Family::default(),
            queue_allocated_scalar: Family::default(),
            queue_weight: Family::default(),
            queue_pod_groups: Default::default(),
            pods_bound: Counter::default(),
            bind_failures: Counter::default(),
            sessions_standby: Counter::default(),
            snapshots: Family::default(),
        };
        reg.register(
            "volcano_e2e_scheduling_latency_milliseconds",
            "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
            m.e2e_latency_ms.clone(),
        );
        reg.register(
            "volcano_action_scheduling_latency_microseconds",
            "Action scheduling latency in microseconds",
            m.action_latency_us.clone(),
        );
        reg.register(
            "volcano_schedule_attempts",
            "Number of attempts to schedule tasks, by result",
            m.schedule_attempts.clone(),
        );
        reg.register(
            "volcano_total_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            m.preemption_attempts.clone(),
        );
        reg.register(
            "volcano_pod_preemption_victims",
            "Number of selected preemption victims",
            m.preemption_victims.clone(),
        );
        reg.register(
            "volcano_unschedule_job_count",
            "Number of jobs could not be scheduled",
            m.unschedulable_jobs.clone(),
        );
        reg.register(
            "volcano_unschedule_task_count",
            "Number of tasks could not be scheduled",
            m.unschedulable_tasks.clone(),
        );
        reg.register(
            "volcano_queue_allocated_milli_cpu",
            "Allocated CPU count for one queue",
            m.queue_allocated_milli_cpu.clone(),
        );
        reg.register(
            "volcano_queue_allocated_memory_bytes",
            "Allocated memory for one queue",
            m.queue_allocated_memory_bytes.clone(),
        );
        reg.register(
            "volcano_queue_allocated_scalar_resources",
            "Allocated scalar resources for one queue",
            m.queue_allocated_scalar.clone(),
        );
        reg.register(
            "volcano_queue_weight",
            "Weight for one queue",
            m.queue_weight.clone(),
        );
        for (phase, family) in POD_GROUP_PHASES.iter().zip(&m.queue_pod_groups) {
            reg.register(
                format!("volcano_queue_pod_group_{}_count", phase.to_lowercase()),
                format!("The number of {phase} PodGroups in this queue"),
                family.clone(),
            );
        }
        reg.register(
            "volcano_pods_bound",
            "Pods bound to nodes by this scheduler",
            m.pods_bound.clone(),
        );
        reg.register(
            "volcano_bind_failures",
            "Binds the API server refused; the pod was returned to the cache",
            m.bind_failures.clone(),
        );
        reg.register(
            "volcano_sessions_standby",
            "Session periods skipped because this replica is not the leader",
            m.sessions_standby.clone(),
        );
        reg.register(
            "volcano_snapshots",
            "Session snapshots, kept current in place or rebuilt from all objects",
            m.snapshots.clone(),
        );
        m
    }
}

/// What the controller manager reports.
#[derive(Clone)]
pub struct ControllerMetrics {
    /// Work items waiting per controller.
    pub queue_depth: Family<Label, Gauge>,
    /// Changes written, by result (`ok`, `failed`).
    pub changes: Family<Label, Counter>,
    /// Turns taken by the controllers.
    pub turns: Counter,
}

impl ControllerMetrics {
    /// Registers the controllers' metrics in `reg`.
    pub fn register(reg: &mut Registry) -> ControllerMetrics {
        let m = ControllerMetrics {
            queue_depth: Family::default(),
            changes: Family::default(),
            turns: Counter::default(),
        };
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
}

/// A label value.
pub fn label(name: &'static str, value: impl Into<String>) -> Label {
    [(name, value.into())]
}
