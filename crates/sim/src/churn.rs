//! A load generator for the controllers: PodGroup phase changes at a given rate, with a share
//! of status writes answered by conflicts, to check that work queues stay bounded by the
//! number of objects whatever the event rate (Volcano's controller grew without bound here).

use std::time::Duration;

use volcano_api::Objects;
use volcano_api::scheduling::{PodGroupStatus, phase};
use volcano_controllers::change::Change;
use volcano_controllers::manager::{ManagerOptions, Work};
use volcano_controllers::time::Instant;
use volcano_controllers::view::ClusterView;

use crate::cluster::Cluster;
use crate::store::Watched;

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
/// PodGroups take turns moving between Inqueue and Running, and pods between Pending and
/// Running; every write the controllers make
/// in between is applied, except each `conflict_every`-th, which fails the turn as a 409
/// would.
pub fn run(objects: Objects, opts: ManagerOptions, churn: Churn) -> ChurnReport {
    let mut cluster = Cluster::new(objects, opts, Instant(Duration::from_secs(1)));
    let mut report = ChurnReport {
        objects: cluster.store.objects.jobs.len()
            + cluster.store.objects.pod_groups.len()
            + cluster.store.objects.queues.len(),
        ..Default::default()
    };
    let step = churn.over / churn.updates.max(1);
    let groups = cluster.store.objects.pod_groups.len();
    for i in 0..churn.updates {
        cluster.now = cluster.now.after(step);
        if groups > 0 {
            let idx = usize::try_from(i).unwrap_or(0) % groups;
            let pg = &mut cluster.store.objects.pod_groups[idx];
            let old = pg.clone();
            let next = match pg.status.as_ref().map(|s| s.phase.as_str()) {
                Some(phase::RUNNING) => phase::INQUEUE,
                _ => phase::RUNNING,
            };
            pg.status.get_or_insert_with(PodGroupStatus::default).phase = next.to_string();
            let new = pg.clone();
            cluster.feed(&[Watched::PodGroup(Some(Box::new(old)), Some(Box::new(new)))]);
            report.updates += 1;
        }
        // A pod of the cluster changes phase with it, as kubelets report, so that job status
        // really changes and must be written.
        let pods = cluster.store.objects.pods.len();
        if pods > 0 {
            let idx = usize::try_from(i).unwrap_or(0) % pods;
            let pod = &mut cluster.store.objects.pods[idx];
            let old = pod.clone();
            let status = pod.status.get_or_insert_with(Default::default);
            status.phase = Some(match status.phase.as_deref() {
                Some("Running") => "Pending".to_string(),
                _ => "Running".to_string(),
            });
            let new = pod.clone();
            cluster.feed(&[Watched::Pod(Some(Box::new(old)), Some(Box::new(new)))]);
        }
        // Work off what is due now; retries wait for their backoff.
        loop {
            let work = {
                let view = ClusterView::new(&cluster.store.objects);
                cluster.controllers.next(&view, cluster.now)
            };
            let Some(Work { key, changes }) = work else {
                break;
            };
            report.turns += 1;
            let mut ok = true;
            let mut watched = Vec::new();
            for c in &changes {
                if is_write(c) {
                    report.writes += 1;
                    if churn.conflict_every > 0
                        && report
                            .writes
                            .is_multiple_of(u64::from(churn.conflict_every))
                    {
                        report.conflicts += 1;
                        ok = false;
                        break;
                    }
                }
                if let Ok(w) = cluster.store.apply(c, cluster.now) {
                    watched.extend(w);
                }
            }
            cluster.feed(&watched);
            cluster.controllers.finish(&key, ok, cluster.now);
            let stats = cluster.controllers.stats();
            report.peak_job_queue = report.peak_job_queue.max(stats.jobs_peak);
            report.peak_queue_queue = report.peak_queue_queue.max(stats.queues_peak);
        }
    }
    report
}
