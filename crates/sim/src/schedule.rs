//! `volcano schedule`: the controllers and scheduling sessions with frozen time. No pod starts
//! or finishes; pods evicted in one session are gone before the next.

use std::collections::BTreeMap;
use std::time::Duration;

use volcano_api::Objects;
use volcano_api::batch::job_phase;
use volcano_api::event::Event;
use volcano_api::scheduling::{PodGroupStatus, QueueStatus, phase};
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::time::Instant;
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::framework::Unschedulable;

use crate::cluster::{Cluster, ClusterError};

/// A Volcano Job's phase and pod counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobSummary {
    /// `status.state.phase` (`Pending` before the controller has seen it).
    pub phase: String,
    /// Running pods.
    pub running: i32,
    /// Pending pods.
    pub pending: i32,
    /// Succeeded pods.
    pub succeeded: i32,
    /// Failed pods.
    pub failed: i32,
}

/// The outcome of a run.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// Sessions run.
    pub sessions: u32,
    /// Pods bound by this run, with their node.
    pub bindings: BTreeMap<String, String>,
    /// Claims bound at scheduling by this run (`ns/claim`), with the node and the volume
    /// chosen (`None`: to be provisioned for the node).
    pub volumes: BTreeMap<String, (String, Option<String>)>,
    /// Pods evicted by this run.
    pub evictions: Vec<String>,
    /// Evicted pod → why: the preemptor or the reclaiming queue that took its place.
    pub eviction_reasons: BTreeMap<String, String>,
    /// Pods pipelined after the last session.
    pub pipelined: BTreeMap<String, String>,
    /// Every PodGroup's status at the end.
    pub podgroups: BTreeMap<String, PodGroupStatus>,
    /// Every queue's state and allocated resources at the end.
    pub queues: BTreeMap<String, QueueStatus>,
    /// Every Volcano Job's phase and counts at the end.
    pub jobs: BTreeMap<String, JobSummary>,
    /// Why each PodGroup left unscheduled is waiting (last session).
    pub unschedulable: BTreeMap<String, Unschedulable>,
    /// Events of the scheduler and the controllers, in order.
    pub events: Vec<Event>,
    /// Nodes that were out of sync in the last session.
    pub out_of_sync_nodes: Vec<String>,
}

/// Runs up to `limit` sessions, the controllers settling before each and after the last; with
/// `until_quiet`, stops after the first session in which neither changed anything.
pub fn run(
    objects: Objects,
    conf: &SchedulerConf,
    limit: u32,
    until_quiet: bool,
    controllers: ManagerOptions,
) -> Result<Run, ClusterError> {
    let mut cluster = Cluster::new(objects, controllers, Instant(Duration::ZERO));
    let mut run = Run::default();
    for i in 1..=limit.max(1) {
        cluster.now = Instant(Duration::from_secs(u64::from(i)));
        let settled = cluster.settle()?;
        let d = cluster.run_session(conf, &format!("session-{i}"))?;
        run.sessions = i;
        // The run is output: objects are keyed by their printed names, in that order.
        run.bindings
            .extend(d.binds.iter().map(|(k, n)| (k.to_string(), n.clone())));
        run.volumes.extend(
            d.volume_bindings
                .iter()
                .map(|(k, b)| (k.to_string(), (b.node.clone(), b.volume.clone()))),
        );
        run.evictions
            .extend(d.evictions.iter().map(ToString::to_string));
        run.eviction_reasons.extend(
            d.eviction_reasons
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone())),
        );
        run.pipelined = d
            .pipelined
            .iter()
            .map(|(k, n)| (k.to_string(), n.clone()))
            .collect();
        run.unschedulable = d
            .unschedulable
            .iter()
            .map(|(k, u)| (k.to_string(), u.clone()))
            .collect();
        run.out_of_sync_nodes = d.out_of_sync_nodes.clone();
        if until_quiet && !d.changed_anything() && settled.changes == 0 {
            break;
        }
    }
    cluster.settle()?;
    let objs = cluster.store.objects();
    let key = |m: &volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        format!(
            "{}/{}",
            m.namespace.as_deref().unwrap_or_default(),
            m.name.as_deref().unwrap_or_default()
        )
    };
    run.podgroups = objs
        .pod_groups
        .iter()
        .map(|pg| {
            let mut status = pg.status.clone().unwrap_or_default();
            if status.phase.is_empty() {
                status.phase = phase::PENDING.to_string();
            }
            (key(&pg.metadata), status)
        })
        .collect();
    run.queues = objs
        .queues
        .iter()
        .map(|q| {
            let status = q.status.clone().unwrap_or_default();
            (q.metadata.name.clone().unwrap_or_default(), status)
        })
        .collect();
    run.jobs = objs
        .jobs
        .iter()
        .map(|j| {
            let s = j.status.clone().unwrap_or_default();
            let phase = if s.state.phase.is_empty() {
                job_phase::PENDING.to_string()
            } else {
                s.state.phase
            };
            (
                key(&j.metadata),
                JobSummary {
                    phase,
                    running: s.running,
                    pending: s.pending,
                    succeeded: s.succeeded,
                    failed: s.failed,
                },
            )
        })
        .collect();
    run.events = cluster.store.events.clone();
    Ok(run)
}
