//! The scheduling cycle every runtime drives: the store's watch events keep the incremental
//! cache current, a snapshot is taken from it (or rebuilt from all objects when it cannot be
//! kept), a session runs the configured actions over it, and its decisions come back.
//!
//! Sans-IO like the rest of the crate: the runtime owns the objects and the clock, hands the
//! cycle what changed ([`SchedulingCycle::follow`]), asks for a [`Prepared`] session, runs it
//! where it likes (the kube runtime off its async threads) and writes the decisions back. A
//! [`SessionObserver`] sees each plugin and action run, so a runtime can time them.

use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::scheduling::Queue;
use volcano_api::{NamespacedName, ObjectKind, Objects, WatchEvent, keys};

use crate::cache::{BuildError, CacheOptions, SchedulerCache, build_snapshot, implicit_queue};
use crate::conf::SchedulerConf;
use crate::framework::{Decisions, Session, SessionObserver, SessionOptions};
use crate::model::Snapshot;

/// Objects a snapshot may leave out, one at a time, before the session is given up.
pub const MAX_LEFT_OUT: usize = 64;

/// Where a session's snapshot came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotSource {
    /// The incremental cache's, kept current from watch events.
    Kept,
    /// Built from all objects.
    Rebuilt,
}

impl SnapshotSource {
    /// The label monitoring uses.
    pub fn as_str(self) -> &'static str {
        match self {
            SnapshotSource::Kept => "kept",
            SnapshotSource::Rebuilt => "rebuilt",
        }
    }
}

/// A session ready to run: its snapshot and how it was taken.
pub struct Prepared {
    /// The snapshot the session works on.
    pub snapshot: Snapshot,
    /// Where it came from.
    pub source: SnapshotSource,
    /// Objects left out because the scheduler cannot read them, each with why.
    pub left_out: Vec<BuildError>,
}

impl Prepared {
    /// Opens the session, runs the configured actions, closes it.
    pub fn run(
        self,
        conf: &SchedulerConf,
        opts: SessionOptions,
        observer: &mut dyn SessionObserver,
    ) -> Decisions {
        let mut ssn = Session::open_observed(self.snapshot, conf, opts, observer);
        ssn.run_actions_observed(observer);
        ssn.close_observed(observer)
    }
}

/// The scheduler's state between sessions: the incremental cache (see the module
/// documentation).
pub struct SchedulingCycle {
    cache: SchedulerCache,
    opts: CacheOptions,
}

impl SchedulingCycle {
    /// A cycle reading objects as `opts` says; the first snapshot is built from all objects.
    pub fn new(opts: CacheOptions) -> Self {
        SchedulingCycle {
            cache: SchedulerCache::new(opts.clone()),
            opts,
        }
    }

    /// How the cache reads objects.
    pub fn options(&self) -> &CacheOptions {
        &self.opts
    }

    /// Tells the cache of one change to the objects the next snapshot will be taken over.
    pub fn follow(&mut self, event: &WatchEvent) {
        let cache = &mut self.cache;
        match event {
            WatchEvent::Pod(old, new) => cache.pod_changed(old.as_deref(), new.as_ref()),
            WatchEvent::PodGroup(old, new) => {
                cache.pod_group_changed(old.as_deref(), new.as_deref());
            }
            WatchEvent::Queue(old, new) => cache.queue_changed(old.as_deref(), new.as_deref()),
            WatchEvent::Node(old, new) => cache.node_changed(old.as_deref(), new.as_deref()),
            WatchEvent::PriorityClass(..) => cache.priority_class_changed(),
            WatchEvent::Namespace(..)
            | WatchEvent::PersistentVolume(..)
            | WatchEvent::PersistentVolumeClaim(..)
            | WatchEvent::StorageClass(..)
            | WatchEvent::CSINode(..) => cache.cluster_object_changed(),
            WatchEvent::HyperNode(..) => cache.hyper_node_changed(),
            // Workloads shape PodGroups through the controllers; the scheduler reads those.
            WatchEvent::ReplicaSet(..)
            | WatchEvent::StatefulSet(..)
            | WatchEvent::Deployment(..) => {}
            WatchEvent::Job(..) | WatchEvent::Command(..) | WatchEvent::CronJob(..) => {}
            WatchEvent::JobFlow(..) | WatchEvent::JobTemplate(..) => {}
        }
    }

    /// The PodGroup `pod` belongs to ([`SchedulerCache::gang_key`]).
    pub fn gang_key(&self, pod: &Pod) -> Option<NamespacedName> {
        self.cache.gang_key(pod)
    }

    /// Whether gang `key`, as followed so far, still has fewer pods than it needs
    /// ([`SchedulerCache::gang_short_of_pods`]).
    pub fn gang_short_of_pods(&self, key: &NamespacedName) -> bool {
        self.cache.gang_short_of_pods(key)
    }

    /// Forgets the kept snapshot: the next one is built from all objects.
    pub fn invalidate(&mut self) {
        self.cache.invalidate();
    }

    /// The session over `objs`, which must hold every change [`SchedulingCycle::follow`] was
    /// told of: the kept snapshot when the cache holds one; otherwise one built from all
    /// objects. Without the `root` and default queues (a cluster where nobody created them
    /// yet) they are added as Volcano's scheduler would create them, and an object the
    /// scheduler cannot read is left out (each named in [`Prepared::left_out`]) so one bad
    /// object never stops scheduling for everyone else.
    pub fn prepare(&mut self, objs: &Objects) -> Result<Prepared, BuildError> {
        if self.has_implicit_queues(objs) {
            let before = self.cache.stats();
            if let Ok(snapshot) = self.cache.snapshot(objs) {
                let source = if self.cache.stats().kept > before.kept {
                    SnapshotSource::Kept
                } else {
                    SnapshotSource::Rebuilt
                };
                return Ok(Prepared {
                    snapshot,
                    source,
                    left_out: Vec::new(),
                });
            }
        }
        self.cache.invalidate();
        let (snapshot, left_out) = self.snapshot_leaving_out(objs)?;
        Ok(Prepared {
            snapshot,
            source: SnapshotSource::Rebuilt,
            left_out,
        })
    }

    fn implicit_queue_names(&self) -> [&str; 2] {
        [keys::ROOT_QUEUE, self.opts.default_queue.as_str()]
    }

    fn has_implicit_queues(&self, objs: &Objects) -> bool {
        self.implicit_queue_names()
            .iter()
            .all(|n| has_queue(&objs.queues, n))
    }

    /// A snapshot of `objs` with the implicit queues, leaving out what cannot be read.
    fn snapshot_leaving_out(
        &self,
        objs: &Objects,
    ) -> Result<(Snapshot, Vec<BuildError>), BuildError> {
        let mut owned = objs.clone();
        for name in self.implicit_queue_names() {
            if !has_queue(&owned.queues, name) {
                owned.queues.push(implicit_queue(name));
            }
        }
        let mut left_out = Vec::new();
        loop {
            match build_snapshot(&owned, &self.opts) {
                Ok(s) => return Ok((s, left_out)),
                Err(e) => {
                    if left_out.len() >= MAX_LEFT_OUT || !leave_out(&mut owned, &e) {
                        return Err(e);
                    }
                    left_out.push(e);
                }
            }
        }
    }
}

fn has_queue(queues: &[Queue], name: &str) -> bool {
    queues
        .iter()
        .any(|q| q.metadata.name.as_deref() == Some(name))
}

/// Removes the object a [`BuildError`] is about; whether it was there.
fn leave_out(objs: &mut Objects, e: &BuildError) -> bool {
    fn drop_from<T>(
        list: &mut Vec<T>,
        key: &NamespacedName,
        meta: impl Fn(&T) -> &volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) -> bool {
        let before = list.len();
        list.retain(|o| !key.is(meta(o)));
        list.len() != before
    }
    let key = &e.object.key;
    match e.object.kind {
        ObjectKind::Pod => drop_from(&mut objs.pods, key, |o| &o.metadata),
        ObjectKind::Node => drop_from(&mut objs.nodes, key, |o| &o.metadata),
        ObjectKind::PodGroup => drop_from(&mut objs.pod_groups, key, |o| &o.metadata),
        ObjectKind::Queue => drop_from(&mut objs.queues, key, |o| &o.metadata),
        ObjectKind::Job
        | ObjectKind::PriorityClass
        | ObjectKind::Command
        | ObjectKind::Namespace
        | ObjectKind::PersistentVolume
        | ObjectKind::PersistentVolumeClaim
        | ObjectKind::StorageClass
        | ObjectKind::CSINode
        | ObjectKind::ReplicaSet
        | ObjectKind::StatefulSet
        | ObjectKind::Deployment
        | ObjectKind::CronJob
        | ObjectKind::JobFlow
        | ObjectKind::JobTemplate => false,
        ObjectKind::HyperNode => drop_from(&mut objs.hyper_nodes, key, |o| &o.metadata),
    }
}

#[cfg(test)]
mod tests;
