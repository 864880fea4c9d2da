//! The soak: a cluster of running Volcano Jobs under steady churn for a long virtual time, the
//! controllers working off every change with a share of their writes refused by conflicts, and
//! a scheduling session every virtual second. Work-queue lengths and resident memory are
//! sampled minute by minute, so that any growth shows (Volcano's controller grew until it was
//! killed at 20,000 pods a minute).

use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use volcano_api::scenario::load_str;
use volcano_controllers::admission;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::time::Instant;
use volcano_scheduler::conf::SchedulerConf;

use crate::bench::rss::current_rss_bytes;
use crate::churn::{Churn, Churner};
use crate::cluster::{Cluster, ClusterError};

/// What to soak.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SoakSpec {
    /// Volcano Jobs in the cluster, two pods each.
    pub jobs: u32,
    /// Pod phase changes per virtual minute (each with a PodGroup phase change).
    pub pods_per_minute: u32,
    /// Virtual minutes to run.
    pub minutes: u32,
    /// Share of the controllers' writes answered by a conflict, in percent.
    pub conflict_percent: u32,
}

/// One minute of the soak, as it ended.
#[derive(Debug, Clone, Serialize)]
pub struct SoakSample {
    /// Virtual minutes done.
    pub minute: u32,
    /// Controller writes so far.
    pub writes: u64,
    /// Of them, refused by a conflict.
    pub conflicts: u64,
    /// Most entries the job controller's work queue ever held.
    pub job_queue_peak: usize,
    /// Most entries the queue controller's work queue ever held.
    pub queue_queue_peak: usize,
    /// Entries in the job controller's work queue now.
    pub job_queue_now: usize,
    /// Scheduling sessions run so far.
    pub sessions: u64,
    /// Resident memory now, in bytes (0 where it cannot be read).
    pub rss_bytes: u64,
}

/// The soak's figures.
#[derive(Debug, Clone, Serialize)]
pub struct SoakReport {
    /// What was run.
    #[serde(flatten)]
    pub spec: SoakSpec,
    /// Jobs, PodGroups and queues in the cluster (fixed during the run).
    pub objects: usize,
    /// Resident memory after the first minute.
    pub rss_after_first_minute_bytes: u64,
    /// Resident memory at the end.
    pub rss_at_end_bytes: u64,
    /// How much the end exceeds the first minute, in percent (negative when it shrank).
    pub rss_growth_percent: f64,
    /// One sample per minute.
    pub samples: Vec<SoakSample>,
}

/// Why the soak could not run.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    /// The spec cannot produce a run.
    #[error("soak: {0}")]
    Spec(String),
    /// The generated cluster did not load (a defect of this module).
    #[error("soak: the generated cluster did not load: {0}")]
    Load(String),
    /// The cluster refused a change.
    #[error("soak: {0}")]
    Cluster(#[from] ClusterError),
}

/// Pods per node in the generated cluster.
const PODS_PER_NODE: u32 = 100;

/// The cluster: enough 128-CPU nodes for every pod, and the Jobs, each two one-CPU pods.
fn cluster_yaml(jobs: u32) -> String {
    let nodes = (jobs * 2).div_ceil(PODS_PER_NODE).max(1);
    let mut text = String::new();
    for n in 0..nodes {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: node-{n}}}\n\
             status: {{allocatable: {{cpu: \"128\", memory: 512Gi, pods: \"110\"}}}}\n"
        ));
    }
    for j in 0..jobs {
        text.push_str(&format!(
            "---\napiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n\
             metadata: {{name: job-{j}, namespace: default}}\n\
             spec:\n  minAvailable: 2\n  tasks:\n  - name: worker\n    replicas: 2\n    \
             template: {{spec: {{containers: [{{name: main, image: x, resources: {{requests: {{cpu: \"1\"}}}}}}]}}}}\n"
        ));
    }
    text
}

/// Runs the soak and reports it minute by minute.
pub fn run(spec: &SoakSpec, opts: ManagerOptions) -> Result<SoakReport, SoakError> {
    if spec.jobs == 0 || spec.minutes == 0 || spec.pods_per_minute == 0 {
        return Err(SoakError::Spec(
            "--jobs, --minutes and --pods-per-minute must be at least 1".into(),
        ));
    }
    if spec.conflict_percent > 100 {
        return Err(SoakError::Spec(format!(
            "--conflicts {}% is more than 100%",
            spec.conflict_percent
        )));
    }
    let scenario = load_str(Path::new("soak.yaml"), &cluster_yaml(spec.jobs))
        .map_err(|e| SoakError::Load(e.to_string()))?;
    let mut objects = scenario.objects;
    for j in &mut objects.jobs {
        admission::default_job(j);
    }
    let conf = SchedulerConf::default_conf();
    let mut cluster = Cluster::new(objects, opts, Instant(Duration::from_secs(1)));
    // Start from a running cluster: pods created, bound and started.
    for i in 0..3 {
        cluster.now = cluster.now.after(Duration::from_secs(1));
        cluster.settle()?;
        cluster.run_session(&conf, &format!("warmup-{i}"))?;
    }
    cluster.settle()?;

    let conflict_every = match spec.conflict_percent {
        0 => 0,
        p => 100 / p,
    };
    let minute = Duration::from_secs(60);
    let mut churner = Churner::new(
        cluster,
        Churn {
            updates: spec.pods_per_minute,
            over: minute,
            conflict_every,
        },
    );
    let per_second = spec.pods_per_minute / 60;
    let mut samples = Vec::with_capacity(spec.minutes as usize);
    let mut sessions = 0u64;
    for m in 1..=spec.minutes {
        for s in 0..60 {
            // The minute's updates spread over its seconds, the remainder in the last one.
            let count = if s == 59 {
                spec.pods_per_minute - per_second * 59
            } else {
                per_second
            };
            churner.feed(count);
            churner
                .cluster
                .run_session(&conf, &format!("soak-{m}-{s}"))?;
            sessions += 1;
        }
        let stats = churner.cluster.controllers.stats();
        let r = churner.report;
        samples.push(SoakSample {
            minute: m,
            writes: r.writes,
            conflicts: r.conflicts,
            job_queue_peak: r.peak_job_queue,
            queue_queue_peak: r.peak_queue_queue,
            job_queue_now: stats.jobs,
            sessions,
            rss_bytes: current_rss_bytes().unwrap_or(0),
        });
    }
    let first = samples.first().map_or(0, |s| s.rss_bytes);
    let last = samples.last().map_or(0, |s| s.rss_bytes);
    let growth = if first == 0 {
        0.0
    } else {
        (last as f64 - first as f64) * 100.0 / first as f64
    };
    Ok(SoakReport {
        spec: *spec,
        objects: churner.report.objects,
        rss_after_first_minute_bytes: first,
        rss_at_end_bytes: last,
        rss_growth_percent: growth,
        samples,
    })
}

#[cfg(test)]
mod tests {
    use volcano_controllers::job_plugins::PlaceholderSshKeys;
    use volcano_controllers::workqueue::RetryPolicy;

    use super::*;

    fn opts() -> ManagerOptions {
        ManagerOptions {
            retry: RetryPolicy::default(),
            scheduler_names: Vec::new(),
            ssh_keys: Box::new(PlaceholderSshKeys),
        }
    }

    #[test]
    fn a_short_soak_keeps_the_work_queues_bounded_by_the_objects() {
        let spec = SoakSpec {
            jobs: 20,
            pods_per_minute: 1200,
            minutes: 3,
            conflict_percent: 10,
        };
        let report = run(&spec, opts()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(report.samples.len(), 3);
        let last = &report.samples[2];
        assert!(last.conflicts * 10 >= last.writes - 10, "{last:?}");
        assert!(last.writes > 3000, "the controllers wrote: {last:?}");
        assert!(last.job_queue_peak <= 20, "{last:?}");
        assert_eq!(last.sessions, 180);
    }

    #[test]
    fn impossible_specs_are_refused() {
        let zero = SoakSpec {
            jobs: 0,
            pods_per_minute: 1,
            minutes: 1,
            conflict_percent: 0,
        };
        assert!(matches!(run(&zero, opts()), Err(SoakError::Spec(_))));
        let over = SoakSpec {
            jobs: 1,
            conflict_percent: 101,
            ..zero
        };
        assert!(matches!(run(&over, opts()), Err(SoakError::Spec(_))));
    }
}
