//! Runs scheduling sessions over a scenario's objects with frozen time, applying each session's
//! decisions to the objects as a cluster would: bound pods get their node, evicted pods are
//! removed, PodGroup and Queue status are written. (This moves into the simulator crate when it
//! lands; it is here because `schedule` is its only user so far.)

use std::collections::BTreeMap;

use volcano_api::Objects;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use volcano_api::k8s_openapi::jiff::Timestamp;
use volcano_api::keys;
use volcano_api::scheduling::{PodGroupStatus, QueueStatus};
use volcano_scheduler::cache::{
    BuildError, CacheOptions, apply_decisions, build_snapshot, implicit_queue,
};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::framework::{Event, SessionOptions, Unschedulable};

/// The outcome of a run of sessions.
pub struct Run {
    /// Sessions run.
    pub sessions: u32,
    /// Pods bound by this run, with their node.
    pub bindings: BTreeMap<String, String>,
    /// Pods evicted by this run.
    pub evictions: Vec<String>,
    /// Pods pipelined after the last session.
    pub pipelined: BTreeMap<String, String>,
    /// Every PodGroup's status after the last session.
    pub podgroups: BTreeMap<String, PodGroupStatus>,
    /// Every queue's state and allocated resources after the last session.
    pub queues: BTreeMap<String, QueueStatus>,
    /// Why each PodGroup left unscheduled is waiting (last session).
    pub unschedulable: BTreeMap<String, Unschedulable>,
    /// Events of all sessions, in order.
    pub events: Vec<Event>,
    /// Nodes that were out of sync in the last session.
    pub out_of_sync_nodes: Vec<String>,
}

/// Runs up to `limit` sessions; with `until_quiet`, stops after the first session that changes
/// nothing.
pub fn run_sessions(
    mut objs: Objects,
    conf: &SchedulerConf,
    limit: u32,
    until_quiet: bool,
) -> Result<Run, BuildError> {
    let opts = CacheOptions::default();
    // The scheduler creates `root` and the default queue at startup when they are missing.
    for name in [keys::ROOT_QUEUE, opts.default_queue.as_str()] {
        if !objs
            .queues
            .iter()
            .any(|q| q.metadata.name.as_deref() == Some(name))
        {
            objs.queues.push(implicit_queue(name));
        }
    }
    let mut run = Run {
        sessions: 0,
        bindings: BTreeMap::new(),
        evictions: Vec::new(),
        pipelined: BTreeMap::new(),
        podgroups: BTreeMap::new(),
        queues: BTreeMap::new(),
        unschedulable: BTreeMap::new(),
        events: Vec::new(),
        out_of_sync_nodes: Vec::new(),
    };
    for i in 1..=limit.max(1) {
        let snap = build_snapshot(&objs, &opts)?;
        let session = SessionOptions {
            uid: format!("session-{i}"),
            now: Some(Time(
                Timestamp::from_second(i64::from(i)).unwrap_or(Timestamp::UNIX_EPOCH),
            )),
        };
        let d = volcano_scheduler::run_session(snap, conf, session);
        run.sessions = i;

        apply_decisions(&mut objs, &d);
        run.bindings.extend(d.binds.iter().cloned());
        run.evictions.extend(d.evictions.iter().cloned());
        run.events.extend(d.events.iter().cloned());
        run.pipelined = d.pipelined.iter().cloned().collect();
        run.unschedulable = d.unschedulable.clone();
        run.out_of_sync_nodes = d.out_of_sync_nodes.clone();
        run.podgroups = d
            .pod_groups
            .iter()
            .map(|u| (u.key.clone(), u.status.clone()))
            .collect();
        run.queues = d
            .queues
            .iter()
            .map(|q| {
                (
                    q.name.clone(),
                    QueueStatus {
                        state: q.state.clone(),
                        allocated: Some(q.allocated.clone()),
                    },
                )
            })
            .collect();
        if until_quiet && !d.changed_anything() {
            break;
        }
    }
    Ok(run)
}
