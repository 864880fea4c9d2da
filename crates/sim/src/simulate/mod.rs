//! `volcano sim`: a deterministic discrete-event simulation of a cluster over virtual time.
//!
//! The embedded cluster runs the same controllers and scheduling sessions as `volcano
//! schedule`, with simulated kubelets that start bound pods and end them as their annotations
//! say, objects submitted at their `submit-at`, and nodes that go away, come back or shrink.
//! The clock jumps from one thing that can change the cluster to the next; sessions fall on
//! the `--schedule-period` grid and run only when something changed since the last one, or
//! the last one changed something.
//!
//! - [`duration`]: the duration syntax of annotations and flags.
//! - [`annotations`], [`plan`]: the annotations, checked, and the run's plan.
//! - [`clock`]: the virtual clock and its events.
//! - [`kubelet`], [`nodes`]: pods and nodes over time.
//! - `engine`: the run loop; `records`, `sampler`, `stats`: what it measures; `why`: why
//!   each job waited or failed.

pub mod annotations;
pub mod clock;
pub mod disruptions;
pub mod duration;
mod engine;
pub mod kubelet;
pub mod nodes;
pub mod plan;
mod records;
mod sampler;
mod stats;
mod why;

use std::collections::BTreeMap;
use std::time::Duration;

use volcano_api::Objects;
use volcano_api::scenario::{LoadError, ObjectKey, Source};
use volcano_controllers::manager::ManagerOptions;
use volcano_scheduler::conf::SchedulerConf;

use crate::cluster::ClusterError;
use crate::faults::FaultPlan;
use crate::metrics::SimMetrics;

/// How a run goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimOptions {
    /// A session every this much virtual time (when something changed).
    pub schedule_period: Duration,
    /// From a pod's binding to its running.
    pub pod_startup: Duration,
    /// Run until exactly this virtual time; `None`: until every job has finished (or nothing
    /// more can happen).
    pub until: Option<Duration>,
    /// Never beyond this virtual time.
    pub max_time: Duration,
    /// Sample the cluster this often.
    pub sample_every: Duration,
    /// Measure session latency (wall-clock); off, every latency reads 0 so output depends on
    /// the input alone.
    pub timings: bool,
    /// Faults to inject, with the invariants checked after every step.
    pub faults: Option<FaultPlan>,
    /// Check every snapshot the scheduler's incremental cache keeps against one built from
    /// all objects, failing the run where they differ (tests: it doubles a session's cost).
    pub check_snapshots: bool,
    /// How long a pod runs whose annotations (pod, Job or PodGroup) give neither
    /// `duration` nor `fail-after`; `None`: until something else ends it.
    pub default_duration: Option<Duration>,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            schedule_period: Duration::from_secs(1),
            pod_startup: Duration::from_secs(1),
            until: None,
            max_time: Duration::from_secs(30 * 86_400),
            sample_every: Duration::from_secs(60),
            timings: true,
            faults: None,
            check_snapshots: false,
            default_duration: None,
        }
    }
}

/// How far a run has come, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Virtual time now.
    pub now: Duration,
    /// Where the run stops, when `--until` says (otherwise it stops once every job has
    /// finished).
    pub until: Option<Duration>,
    /// Jobs in the run.
    pub jobs: usize,
    /// Jobs finished.
    pub finished: usize,
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A simulation annotation (or another field) is wrong: the input's fault.
    #[error(transparent)]
    Input(Box<LoadError>),
    /// The cluster could not go on (a snapshot refused an object, controllers that never
    /// settle).
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

impl SimError {
    /// Whether the input is to blame (exit status 2) rather than the program.
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            SimError::Input(_) | SimError::Cluster(ClusterError::Snapshot(_))
        )
    }
}

/// Simulates `objects` (with `sources` to name them in errors) under `conf`, telling
/// `progress` how far it has come after each step.
pub fn simulate(
    objects: Objects,
    sources: &BTreeMap<ObjectKey, Source>,
    conf: &SchedulerConf,
    opts: &SimOptions,
    controllers: ManagerOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<SimMetrics, SimError> {
    let plan = plan::plan(objects, sources).map_err(SimError::Input)?;
    engine::Engine::new(plan, conf, opts, controllers).run(progress)
}
