//! The scheduler's series: Volcano's (`pkg/scheduler/metrics/{metrics,queue,job,namespace}.go`)
//! and volcano-rs's own (pods bound, bind failures, standby sessions, snapshots, PodGroups left
//! unschedulable by reason), and how one session is recorded in them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::keys;
use volcano_api::scheduling::PodGroup;
use volcano_api::{ObjectStore, Objects};
use volcano_scheduler::framework::Decisions;

use super::{
    CounterVec, GaugeVec, HistogramVec, Label, Labels2, Labels3, QueueMetrics, histogram, label,
};

/// Task stage of [`SchedulerMetrics::task_latency_ms`]: first seen by the scheduler.
pub const STAGE_WATCHED: &str = "Watched";
/// Task stage: decided in a session.
pub const STAGE_ASSUMED: &str = "Assumed";
/// Task stage: bound by the API server.
pub const STAGE_BOUND: &str = "Bound";
/// Scheduling stage of [`SchedulerMetrics::stage_duration_ms`]: the bind call.
pub const STAGE_BIND: &str = "Bind";
/// `OnSession` label of [`SchedulerMetrics::plugin_latency_ms`]: building the plugin.
pub const ON_OPEN: &str = "OnSessionOpen";
/// `OnSession` label: the plugin's last word at session close.
pub const ON_CLOSE: &str = "OnSessionClose";
/// The actions whose eviction transactions Volcano counts; others are left out, as Volcano
/// leaves them, to keep the `action` label bounded.
const EVICTING_ACTIONS: [&str; 4] = ["preempt", "reclaim", "gangpreempt", "gangreclaim"];

/// What the scheduler reports.
#[derive(Clone, Debug)]
pub struct SchedulerMetrics {
    /// `volcano_e2e_scheduling_latency_milliseconds`: one whole session.
    pub e2e_latency_ms: Histogram,
    /// `volcano_open_session_duration_milliseconds`: snapshot and session open.
    pub open_session_ms: Histogram,
    /// `volcano_e2e_job_scheduling_latency_milliseconds`: PodGroup creation to Running.
    pub e2e_job_latency_ms: Histogram,
    /// `volcano_e2e_job_scheduling_duration{job_name,queue,job_namespace}`, milliseconds.
    pub e2e_job_duration: GaugeVec<Labels3>,
    /// `volcano_e2e_job_scheduling_start_time{job_name,queue,job_namespace}`, Unix seconds.
    pub e2e_job_start_time: GaugeVec<Labels3>,
    /// `volcano_e2e_job_scheduling_last_time{job_name,queue,job_namespace}`, Unix seconds.
    pub e2e_job_last_time: GaugeVec<Labels3>,
    /// `volcano_plugin_scheduling_latency_milliseconds{plugin,OnSession}`.
    pub plugin_latency_ms: HistogramVec<Labels2>,
    /// `volcano_action_scheduling_latency_milliseconds{action}`.
    pub action_latency_ms: HistogramVec<Label>,
    /// `volcano_task_scheduling_latency_milliseconds{stage}`: pod creation to the stage.
    pub task_latency_ms: HistogramVec<Label>,
    /// `volcano_scheduling_stage_duration_milliseconds{stage}`.
    pub stage_duration_ms: HistogramVec<Label>,
    /// `volcano_schedule_attempts_total{result}`: tasks scheduled or left unschedulable.
    pub schedule_attempts: Family<Label, Counter>,
    /// `volcano_pod_preemption_victims`: pods evicted by the last session.
    pub preemption_victims: Gauge,
    /// `volcano_total_preemption_attempts`: evictions carried out.
    pub preemption_attempts: Counter,
    /// `volcano_eviction_transactions_total{action}`.
    pub eviction_transactions: Family<Label, Counter>,
    /// `volcano_unschedule_task_count{job_id}`: pods each PodGroup lacks to reach its gang.
    pub unschedulable_tasks: GaugeVec<Label>,
    /// `volcano_unschedule_job_count`: PodGroups left unschedulable by the last session.
    pub unschedulable_jobs: Gauge,
    /// The per-queue series.
    pub queues: QueueMetrics,
    /// `volcano_job_share{job_ns,job_id}`: each job's dominant share under `drf`.
    pub job_share: GaugeVec<Labels2>,
    /// `volcano_job_retry_counts{job_id}`: sessions that left the PodGroup unschedulable.
    pub job_retries: CounterVec<Label>,
    /// `volcano_namespace_share{namespace_name}`.
    pub namespace_share: GaugeVec<Label>,
    /// `volcano_namespace_weight{namespace_name}`.
    pub namespace_weight: GaugeVec<Label>,
    /// `volcano_namespace_weighted_share{namespace_name}`.
    pub namespace_weighted_share: GaugeVec<Label>,
    /// `volcano_pods_bound_total` (volcano-rs).
    pub pods_bound: Counter,
    /// `volcano_bind_failures_total` (volcano-rs): binds the API server refused.
    pub bind_failures: Counter,
    /// `volcano_sessions_standby_total` (volcano-rs): periods skipped while not leading.
    pub sessions_standby: Counter,
    /// `volcano_snapshots_total{source}` (volcano-rs): `kept` or `rebuilt`.
    pub snapshots: Family<Label, Counter>,
    /// `volcano_unschedulable_pod_groups{reason}` (volcano-rs): why PodGroups wait.
    pub pending_reasons: GaugeVec<Label>,
}

fn histograms<S: Clone + Eq + std::hash::Hash>(
    ctor: fn() -> Histogram,
) -> Family<S, Histogram, fn() -> Histogram> {
    Family::new_with_constructor(ctor)
}

impl SchedulerMetrics {
    /// Registers the scheduler's metrics in `reg`.
    pub fn register(reg: &mut Registry) -> SchedulerMetrics {
        let m = SchedulerMetrics {
            e2e_latency_ms: histogram(1.0, 5000.0, 20),
            open_session_ms: histogram(1.0, 5000.0, 20),
            e2e_job_latency_ms: histogram(100.0, 120_000.0, 30),
            e2e_job_duration: GaugeVec::new(),
            e2e_job_start_time: GaugeVec::new(),
            e2e_job_last_time: GaugeVec::new(),
            plugin_latency_ms: histograms(|| histogram(0.1, 100.0, 15)),
            action_latency_ms: histograms(|| histogram(1.0, 2000.0, 20)),
            task_latency_ms: histograms(|| histogram(50.0, 60_000.0, 30)),
            stage_duration_ms: histograms(|| histogram(0.1, 500.0, 20)),
            schedule_attempts: Family::default(),
            preemption_victims: Gauge::default(),
            preemption_attempts: Counter::default(),
            eviction_transactions: Family::default(),
            unschedulable_tasks: GaugeVec::new(),
            unschedulable_jobs: Gauge::default(),
            queues: QueueMetrics::register(reg),
            job_share: GaugeVec::new(),
            job_retries: CounterVec::new(),
            namespace_share: GaugeVec::new(),
            namespace_weight: GaugeVec::new(),
            namespace_weighted_share: GaugeVec::new(),
            pods_bound: Counter::default(),
            bind_failures: Counter::default(),
            sessions_standby: Counter::default(),
            snapshots: Family::default(),
            pending_reasons: GaugeVec::new(),
        };
        reg.register(
            "volcano_e2e_scheduling_latency_milliseconds",
            "Duration of a single scheduling session execution in milliseconds",
            m.e2e_latency_ms.clone(),
        );
        reg.register(
            "volcano_open_session_duration_milliseconds",
            "Duration of opening a scheduling session in milliseconds, including cache snapshot and session initialization",
            m.open_session_ms.clone(),
        );
        reg.register(
            "volcano_e2e_job_scheduling_latency_milliseconds",
            "End-to-end job scheduling latency in milliseconds",
            m.e2e_job_latency_ms.clone(),
        );
        m.e2e_job_duration.register(
            reg,
            "volcano_e2e_job_scheduling_duration",
            "Per-job duration from job creation to last task assumed, in milliseconds",
        );
        m.e2e_job_start_time.register(
            reg,
            "volcano_e2e_job_scheduling_start_time",
            "E2E job scheduling start time",
        );
        m.e2e_job_last_time.register(
            reg,
            "volcano_e2e_job_scheduling_last_time",
            "E2E job scheduling last time",
        );
        reg.register(
            "volcano_plugin_scheduling_latency_milliseconds",
            "Plugin scheduling latency in milliseconds",
            m.plugin_latency_ms.clone(),
        );
        reg.register(
            "volcano_action_scheduling_latency_milliseconds",
            "Action scheduling latency in milliseconds",
            m.action_latency_ms.clone(),
        );
        reg.register(
            "volcano_task_scheduling_latency_milliseconds",
            "Task scheduling latency from creation to various stages in milliseconds",
            m.task_latency_ms.clone(),
        );
        reg.register(
            "volcano_scheduling_stage_duration_milliseconds",
            "Duration of per-task scheduling stages in milliseconds",
            m.stage_duration_ms.clone(),
        );
        reg.register(
            "volcano_schedule_attempts",
            "Number of attempts to schedule pods, by the result",
            m.schedule_attempts.clone(),
        );
        reg.register(
            "volcano_pod_preemption_victims",
            "Number of selected preemption victims",
            m.preemption_victims.clone(),
        );
        reg.register(
            "volcano_total_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            m.preemption_attempts.clone(),
        );
        reg.register(
            "volcano_eviction_transactions",
            "Total number of committed eviction transactions, by action",
            m.eviction_transactions.clone(),
        );
        m.unschedulable_tasks.register(
            reg,
            "volcano_unschedule_task_count",
            "Number of tasks could not be scheduled",
        );
        reg.register(
            "volcano_unschedule_job_count",
            "Number of jobs could not be scheduled",
            m.unschedulable_jobs.clone(),
        );
        m.job_share
            .register(reg, "volcano_job_share", "Share for one job");
        m.job_retries.register(
            reg,
            "volcano_job_retry_counts",
            "Number of retry counts for one job",
        );
        m.namespace_share
            .register(reg, "volcano_namespace_share", "Share for one namespace");
        m.namespace_weight
            .register(reg, "volcano_namespace_weight", "Weight for one namespace");
        m.namespace_weighted_share.register(
            reg,
            "volcano_namespace_weighted_share",
            "Weighted share for one namespace",
        );
        reg.register(
            "volcano_pods_bound",
            "Pods bound to nodes by this scheduler",
            m.pods_bound.clone(),
        );
        reg.register(
            "volcano_bind_failures",
            "Binds the API server refused; the pod was returned to the mirror",
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
        m.pending_reasons.register(
            reg,
            "volcano_unschedulable_pod_groups",
            "PodGroups the last session left unschedulable, by reason",
        );
        m
    }

    /// Records one session: its latency, what it decided, every queue and every waiting job,
    /// as the mirror saw them before the session's writes. Series of queues and jobs that are
    /// gone are removed.
    /// Only a session of the period's tick (`tick`) counts waiting jobs and retries, sets every
    /// job's share and sweeps the series of PodGroups gone: that walks every pod and PodGroup,
    /// and sessions started by new work may run a hundred times a second. (Volcano's sessions
    /// are the period's.)
    pub fn record_session(
        &self,
        d: &Decisions,
        store: &ObjectStore,
        elapsed: Duration,
        tick: bool,
    ) {
        self.e2e_latency_ms.observe(ms(elapsed));
        self.schedule_attempts
            .get_or_create(&label("result", "scheduled"))
            .inc_by(d.binds.len() as u64);
        if !d.unschedulable.is_empty() {
            self.schedule_attempts
                .get_or_create(&label("result", "unschedulable"))
                .inc_by(d.unschedulable.len() as u64);
        }
        self.preemption_victims.set(d.evictions.len() as i64);
        for action in &d.eviction_transactions {
            if EVICTING_ACTIONS.contains(&action.as_str()) {
                self.eviction_transactions
                    .get_or_create(&label("action", action.clone()))
                    .inc();
            }
        }
        self.unschedulable_jobs.set(d.unschedulable.len() as i64);
        self.queues.record(&d.queue_reports);
        if tick {
            for (job, share) in &d.job_shares {
                self.job_share.set(
                    [
                        ("job_ns", job.namespace.clone()),
                        ("job_id", job.name.clone()),
                    ],
                    *share,
                );
            }
            self.job_share.sweep();
            self.record_waiting(d, store.objects());
            self.sweep_jobs(store.objects());
        }
        self.record_jobs(d, store);
    }

    /// `unschedule_task_count`, `job_retry_counts` and the why-pending counts. As Volcano's
    /// gang plugin counts them: a PodGroup left unschedulable lacks `minMember` less its
    /// ready pods (bound or finished) and takes one more retry; every other PodGroup not
    /// completed shows 0. Volcano's `job_id` is the PodGroup's name; same-named PodGroups of
    /// two namespaces add up rather than overwrite each other. A bare pod's shadow PodGroup is
    /// counted while it waits.
    fn record_waiting(&self, d: &Decisions, objs: &Objects) {
        let mut ready: HashMap<(&str, &str), i64> = HashMap::new();
        for p in &objs.pods {
            let bound = p.spec.as_ref().is_some_and(|s| s.node_name.is_some())
                || p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded");
            if let (true, Some(ns), Some(group)) =
                (bound, p.metadata.namespace.as_deref(), group_of(p))
            {
                *ready.entry((ns, group)).or_default() += 1;
            }
        }
        let unschedulable: HashMap<(&str, &str), &str> = d
            .unschedulable
            .iter()
            .map(|(key, why)| {
                (
                    (key.namespace.as_str(), key.name.as_str()),
                    why.reason.as_str(),
                )
            })
            .collect();
        let mut per_job: BTreeMap<&str, i64> = BTreeMap::new();
        let mut names: HashSet<&str> = HashSet::new();
        let mut objects: HashSet<(&str, &str)> = HashSet::new();
        for pg in &objs.pod_groups {
            let (Some(ns), Some(name)) = (
                pg.metadata.namespace.as_deref(),
                pg.metadata.name.as_deref(),
            ) else {
                continue;
            };
            names.insert(name);
            objects.insert((ns, name));
            let completed = pg.status.as_ref().is_some_and(|s| s.phase == "Completed");
            if completed {
                continue;
            }
            let unready = if unschedulable.contains_key(&(ns, name)) {
                let ready = ready.get(&(ns, name)).copied().unwrap_or(0);
                (i64::from(pg.spec.min_member) - ready).max(0)
            } else {
                0
            };
            *per_job.entry(name).or_default() += unready;
        }
        // A bare pod's PodGroup that the scheduler keeps in memory (its shadow) has no object:
        // while it waits it is counted as the gang of one it is, under the name Volcano's
        // controller gives that PodGroup, and its series go once it is placed.
        for &(_, name) in unschedulable.keys().filter(|k| !objects.contains(*k)) {
            names.insert(name);
            *per_job.entry(name).or_default() += 1;
        }
        for (job, n) in per_job {
            self.unschedulable_tasks.set(label("job_id", job), n as f64);
        }
        self.unschedulable_tasks.sweep();

        let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
        for ((_, name), reason) in &unschedulable {
            self.job_retries.member(label("job_id", *name)).inc();
            *reasons.entry(reason).or_default() += 1;
        }
        // Retries are counted for as long as the PodGroup exists, as Volcano keeps them.
        self.job_retries.retain(|l| names.contains(l[0].1.as_str()));
        for (reason, n) in reasons {
            self.pending_reasons.set(label("reason", reason), n as f64);
        }
        self.pending_reasons.sweep();
    }

    /// The per-job end-to-end series, when a PodGroup turns Running, and the per-task
    /// `Assumed` latency of every bind decided.
    fn record_jobs(&self, d: &Decisions, store: &ObjectStore) {
        let now = now_ms();
        for u in d.pod_groups.iter().filter(|u| u.changed) {
            let (ns, name) = (u.key.namespace.as_str(), u.key.name.as_str());
            let Some(pg) = store.get::<PodGroup>(&u.key) else {
                continue;
            };
            let was = pg.status.as_ref().map(|s| s.phase.as_str()).unwrap_or("");
            if u.status.phase != "Running" || was == "Running" {
                continue;
            }
            let Some(created) = created_ms(&pg.metadata) else {
                continue;
            };
            let labels = job_labels(ns, name, &pg.spec.queue);
            let took = (now - created).max(0) as f64;
            self.e2e_job_latency_ms.observe(took);
            self.e2e_job_duration.set(labels.clone(), took);
            self.e2e_job_start_time
                .set(labels.clone(), (created / 1000) as f64);
            self.e2e_job_last_time.set(labels, (now / 1000) as f64);
        }
        if d.binds.is_empty() {
            return;
        }
        let assumed = self
            .task_latency_ms
            .get_or_create_owned(&label("stage", STAGE_ASSUMED));
        for (key, _) in &d.binds {
            if let Some(created) = store.get::<Pod>(key).and_then(|p| created_ms(&p.metadata)) {
                assumed.observe((now - created).max(0) as f64);
            }
        }
    }

    /// A job's end-to-end series stay until its PodGroup is gone, as Volcano keeps them.
    fn sweep_jobs(&self, objs: &Objects) {
        let pgs: HashSet<(&str, &str)> = objs
            .pod_groups
            .iter()
            .filter_map(|pg| {
                let m = &pg.metadata;
                Some((m.namespace.as_deref()?, m.name.as_deref()?))
            })
            .collect();
        let exists = |l: &Labels3| pgs.contains(&(l[2].1.as_str(), l[0].1.as_str()));
        self.e2e_job_duration.retain(exists);
        self.e2e_job_start_time.retain(exists);
        self.e2e_job_last_time.retain(exists);
    }

    /// Records the scheduler's first sight of a pod waiting for one of `schedulers`.
    pub fn pod_watched(&self, pod: &Pod, schedulers: &[String]) {
        let Some(spec) = pod.spec.as_ref() else {
            return;
        };
        let ours = spec
            .scheduler_name
            .as_ref()
            .is_some_and(|n| schedulers.contains(n));
        if !ours || spec.node_name.is_some() {
            return;
        }
        if let Some(created) = created_ms(&pod.metadata) {
            self.task_latency_ms
                .get_or_create(&label("stage", STAGE_WATCHED))
                .observe((now_ms() - created).max(0) as f64);
        }
    }

    /// Records a bind that succeeded after `took`, of a pod created at `created` (if known).
    pub fn record_bound(&self, took: Duration, pod: Option<&Pod>) {
        self.pods_bound.inc();
        self.stage_duration_ms
            .get_or_create(&label("stage", STAGE_BIND))
            .observe(ms(took));
        if let Some(created) = pod.and_then(|p| created_ms(&p.metadata)) {
            self.task_latency_ms
                .get_or_create(&label("stage", STAGE_BOUND))
                .observe((now_ms() - created).max(0) as f64);
        }
    }
}

/// `[job_name, queue, job_namespace]`, Volcano's order.
fn job_labels(ns: &str, name: &str, queue: &str) -> Labels3 {
    [
        ("job_name", name.to_string()),
        ("queue", queue.to_string()),
        ("job_namespace", ns.to_string()),
    ]
}

/// The PodGroup a pod belongs to, by either annotation Volcano reads.
fn group_of(p: &Pod) -> Option<&str> {
    let a = p.metadata.annotations.as_ref()?;
    a.get(keys::GROUP_NAME)
        .or_else(|| a.get(keys::VOLCANO_GROUP_NAME))
        .map(String::as_str)
}

/// Milliseconds of `d`, fractional.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn now_ms() -> i64 {
    volcano_api::k8s_openapi::jiff::Timestamp::now().as_millisecond()
}

fn created_ms(m: &ObjectMeta) -> Option<i64> {
    m.creation_timestamp.as_ref().map(|t| t.0.as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;
    use volcano_scheduler::framework::Unschedulable;

    fn objects(pod_groups: &[&str]) -> Objects {
        let mut objs = Objects::default();
        for name in pod_groups {
            objs.pod_groups.push(
                serde_json::from_value(serde_json::json!({
                    "apiVersion": "scheduling.volcano.sh/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {"name": name, "namespace": "ns"},
                    "spec": {"minMember": 3, "queue": "q"},
                }))
                .unwrap(),
            );
        }
        // One pod of `gang` is bound already.
        objs.pods.push(
            serde_json::from_value::<Pod>(serde_json::json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "gang-0", "namespace": "ns",
                             "annotations": {"scheduling.k8s.io/group-name": "gang"}},
                "spec": {"nodeName": "n1", "containers": []},
                "status": {"phase": "Running"},
            }))
            .unwrap_or_default()
            .into(),
        );
        objs
    }

    #[test]
    fn waiting_jobs_are_counted_by_job_and_by_reason_until_they_are_gone() {
        let m = SchedulerMetrics::register(&mut Registry::default());
        let mut d = Decisions::default();
        d.unschedulable.insert(
            volcano_api::NamespacedName::new("ns", "gang"),
            Unschedulable {
                reason: "NotEnoughResources".to_string(),
                message: "2/3 tasks in gang unschedulable".to_string(),
            },
        );
        let tasks = |job: &str| {
            m.unschedulable_tasks
                .family
                .get(&label("job_id", job))
                .map(|g| g.get())
        };
        m.record_session(
            &d,
            &ObjectStore::new(objects(&["gang", "fine"])),
            Duration::ZERO,
            true,
        );
        m.record_session(
            &d,
            &ObjectStore::new(objects(&["gang", "fine"])),
            Duration::ZERO,
            true,
        );
        assert_eq!(tasks("gang"), Some(2.0), "minMember 3, one bound");
        assert_eq!(tasks("fine"), Some(0.0));
        let retries = m
            .job_retries
            .family
            .get(&label("job_id", "gang"))
            .map(|c| c.get());
        assert_eq!(retries, Some(2));
        let reason = label("reason", "NotEnoughResources");
        assert_eq!(
            m.pending_reasons.family.get(&reason).map(|g| g.get()),
            Some(1.0)
        );

        // `gang` is deleted.
        m.record_session(
            &Decisions::default(),
            &ObjectStore::new(objects(&["fine"])),
            Duration::ZERO,
            true,
        );
        assert_eq!(tasks("gang"), None);
        assert!(m.job_retries.family.get(&label("job_id", "gang")).is_none());
        assert!(m.pending_reasons.family.get(&reason).is_none());
    }

    #[test]
    fn a_bare_pod_waiting_in_its_shadow_pod_group_is_counted_until_it_is_placed() {
        let m = SchedulerMetrics::register(&mut Registry::default());
        // No PodGroup object: the scheduler keeps the bare pod's PodGroup in memory.
        let shadow = "podgroup-0b8c6f1e-5a1d-4a59-9a43-1d2f0f3c9e77";
        let mut d = Decisions::default();
        d.unschedulable.insert(
            volcano_api::NamespacedName::new("ns", shadow),
            Unschedulable {
                reason: "NotEnoughResources".to_string(),
                message: "0/3 nodes are unavailable: 3 Insufficient cpu.".to_string(),
            },
        );
        let store = ObjectStore::new(objects(&[]));
        m.record_session(&d, &store, Duration::ZERO, true);
        m.record_session(&d, &store, Duration::ZERO, true);
        let tasks = m
            .unschedulable_tasks
            .family
            .get(&label("job_id", shadow))
            .map(|g| g.get());
        let retries = || {
            m.job_retries
                .family
                .get(&label("job_id", shadow))
                .map(|c| c.get())
        };
        assert_eq!(tasks, Some(1.0), "a gang of one, waiting");
        assert_eq!(retries(), Some(2));
        assert_eq!(m.unschedulable_jobs.get(), 1);

        m.record_session(&Decisions::default(), &store, Duration::ZERO, true);
        assert!(
            m.unschedulable_tasks
                .family
                .get(&label("job_id", shadow))
                .is_none()
        );
        assert_eq!(retries(), None, "placed: its series are gone");
    }
}
