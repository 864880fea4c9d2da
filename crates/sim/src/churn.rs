//! A load generator for the controllers: PodGroup phase changes at a given rate, with a share
//! of status writes answered by conflicts, to check that work queues stay bounded by the
//! number of objects whatever the event rate (Volcano's controller grew without bound here).

use std::time::Duration;

use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::scheduling::PodGroup;
use volcano_api::scheduling::{PodGroupStatus, phase};
use volcano_api::{NamespacedName, Objects};
use volcano_controllers::change::Change;
use volcano_controllers::manager::{ManagerOptions, Work, WorkKey};
use volcano_controllers::time::Instant;
use volcano_controllers::view::ClusterView;

use crate::cluster::Cluster;
use volcano_api::WatchEvent;

/// The load to generate.
#[derive(Debug, Clone, Copy)]
pub struct Churn {
    /// PodGroup phase changes in total.
    pub updates: u32,
    /// Over this much virtual time.
    pub over: Duration,
    /// One write in this many is answered by a conflict.
    pub conflict_every: u32,
}

/// What the controllers went through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChurnReport {
    /// PodGroup updates fed.
    pub updates: u32,
    /// Controller turns taken.
    pub turns: u64,
    /// Writes the controllers sent.
    pub writes: u64,
    /// Writes answered by a conflict.
    pub conflicts: u64,
    /// Jobs, PodGroups and queues in the cluster.
    pub objects: usize,
    /// Most entries the job controller's work queue held.
    pub peak_job_queue: usize,
    /// Most entries the queue controller's work queue held.
    pub peak_queue_queue: usize,
}

fn is_write(c: &Change) -> bool {
    !matches!(c, Change::Event(_))
}

/// Feeds `churn` to the controllers of a cluster of `objects` and reports the queue peaks.
pub fn run(objects: Objects, opts: ManagerOptions, churn: Churn) -> ChurnReport {
    let mut churner = Churner::new(
        Cluster::new(objects, opts, Instant(Duration::from_secs(1))),
        churn,
    );
    churner.feed(churn.updates);
    churner.report
}

/// A cluster under churn. PodGroups take turns moving between Inqueue and Running, and pods
/// between Pending and Running; every write the controllers make in between is applied, except
/// each `conflict_every`-th, which fails the turn as a 409 would.
pub struct Churner {
    /// The cluster, for a caller that also schedules it.
    pub cluster: Cluster,
    /// What the controllers went through so far.
    pub report: ChurnReport,
    churn: Churn,
    step: Duration,
}

impl Churner {
    /// Churn for `cluster`, one update every `churn.over / churn.updates` of virtual time.
    pub fn new(cluster: Cluster, churn: Churn) -> Self {
        let report = ChurnReport {
            objects: cluster.store.objects().jobs.len()
                + cluster.store.objects().pod_groups.len()
                + cluster.store.objects().queues.len(),
            ..Default::default()
        };
        Churner {
            cluster,
            report,
            step: churn.over / churn.updates.max(1),
            churn,
        }
    }

    /// Feeds `count` more updates, working off what the controllers have due after each.
    pub fn feed(&mut self, count: u32) {
        for _ in 0..count {
            let i = self.report.updates;
            let watched = self.update(i);
            self.report.updates += 1;
            self.work_off(watched);
        }
    }

    /// Changes the `i`-th PodGroup's and pod's phases in the store, returning what the
    /// controllers are to watch.
    fn update(&mut self, i: u32) -> Vec<WatchEvent> {
        let cluster = &mut self.cluster;
        cluster.now = cluster.now.after(self.step);
        let mut watched = Vec::with_capacity(2);
        let groups = cluster.store.objects().pod_groups.len();
        if groups > 0 {
            let idx = usize::try_from(i).unwrap_or(0) % groups;
            let key = NamespacedName::of(&cluster.store.objects().pod_groups[idx].metadata);
            let changed = cluster.store.modify::<PodGroup>(&key, |pg| {
                let next = match pg.status.as_ref().map(|s| s.phase.as_str()) {
                    Some(phase::RUNNING) => phase::INQUEUE,
                    _ => phase::RUNNING,
                };
                pg.status.get_or_insert_with(PodGroupStatus::default).phase = next.to_string();
            });
            watched.extend(changed.ok());
        }
        // A pod of the cluster changes phase with it, as kubelets report, so that job status
        // really changes and must be written.
        let pods = cluster.store.objects().pods.len();
        if pods > 0 {
            let idx = usize::try_from(i).unwrap_or(0) % pods;
            let key = NamespacedName::of(&cluster.store.objects().pods[idx].metadata);
            let changed = cluster.store.modify::<Pod>(&key, |pod| {
                let status = pod.status.get_or_insert_with(Default::default);
                status.phase = Some(match status.phase.as_deref() {
                    Some("Running") => "Pending".to_string(),
                    _ => "Running".to_string(),
                });
            });
            watched.extend(changed.ok());
        }
        watched
    }

    /// Shows the controllers `watched`, then works off what is due now; retries wait for
    /// their backoff. Each turn's outcome is reported with the next turn's view of the
    /// objects, as both see the same objects: one index build per turn.
    fn work_off(&mut self, watched: Vec<WatchEvent>) {
        let (cluster, report) = (&mut self.cluster, &mut self.report);
        let now = cluster.now;
        let mut unseen = watched;
        let mut done: Option<(WorkKey, bool)> = None;
        loop {
            cluster.follow_journal();
            let work = {
                let view = ClusterView::new(cluster.store.indexed());
                for w in &unseen {
                    cluster.controllers.observe(w, &view);
                }
                if let Some((key, ok)) = done.take() {
                    cluster.controllers.finish(&key, ok, now);
                    let stats = cluster.controllers.stats();
                    report.peak_job_queue = report.peak_job_queue.max(stats.jobs_peak);
                    report.peak_queue_queue = report.peak_queue_queue.max(stats.queues_peak);
                }
                cluster.controllers.next(&view, now)
            };
            let Some(Work { key, changes }) = work else {
                break;
            };
            report.turns += 1;
            let mut ok = true;
            unseen = Vec::new();
            for c in &changes {
                if is_write(c) {
                    report.writes += 1;
                    if self.churn.conflict_every > 0
                        && report
                            .writes
                            .is_multiple_of(u64::from(self.churn.conflict_every))
                    {
                        report.conflicts += 1;
                        ok = false;
                        break;
                    }
                }
                if let Ok(w) = cluster.store.apply(c, now) {
                    unseen.extend(w);
                }
            }
            done = Some((key, ok));
        }
    }
}
