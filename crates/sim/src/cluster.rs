//! The store with the controllers and the scheduler wired to it: every change a component
//! makes goes through the store, and every watch event the store produces goes back to the
//! controllers, as in a cluster.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::k8s_openapi::api::core::v1::PodStatus;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::keys;
use volcano_api::scheduling::{PodGroup, PodGroupStatus};
use volcano_controllers::change::Change;
use volcano_controllers::manager::{ControllerManager, ManagerOptions, Work, WorkKey};
use volcano_controllers::time::Instant;
use volcano_controllers::view::ClusterView;
use volcano_scheduler::cache::{
    BuildError, CacheOptions, apply_decisions, build_snapshot, implicit_queue,
};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::framework::{Decisions, SessionOptions};
use volcano_scheduler::model::Snapshot;

use crate::faults::inject::WriteFate;
use crate::faults::{FaultPlan, Faults, Invariants};
use crate::store::{ApplyError, Store, Watched};

/// Turns the controllers may take to settle before the cluster is declared stuck: far more
/// than any real workload needs, and a bound on a controller that keeps changing its mind.
pub const MAX_TURNS_PER_SETTLE: usize = 1_000_000;

/// Why the cluster could not go on.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The controllers kept producing work.
    #[error("the controllers did not settle after {0} turns")]
    Unsettled(usize),
    /// The scheduler could not take a snapshot.
    #[error(transparent)]
    Snapshot(#[from] BuildError),
    /// A kubelet-side change named a missing object.
    #[error(transparent)]
    Apply(#[from] ApplyError),
}

/// What one settling of the controllers did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settled {
    /// Turns taken.
    pub turns: usize,
    /// Changes applied (events included).
    pub changes: usize,
}

/// A simulated cluster: its objects, its controllers and the present time.
pub struct Cluster {
    /// The objects.
    pub store: Store,
    /// The controllers.
    pub controllers: ControllerManager,
    /// The present.
    pub now: Instant,
    cache: CacheOptions,
    pub(crate) chaos: Option<Box<Chaos>>,
}

/// Faults injected into a cluster, and the invariants checked under them.
#[derive(Debug)]
pub struct Chaos {
    /// The injector.
    pub faults: Faults,
    /// The checker.
    pub invariants: Invariants,
    /// The last session's writes were cut short (some of its decisions never landed).
    pub last_session_cut: bool,
}

impl Cluster {
    /// A cluster of `objects` at `now`, with the scheduler's implicit `root` and default
    /// queues, and controllers that have just listed everything.
    pub fn new(mut objects: Objects, opts: ManagerOptions, now: Instant) -> Self {
        let cache = CacheOptions::default();
        for name in [keys::ROOT_QUEUE, cache.default_queue.as_str()] {
            if !objects
                .queues
                .iter()
                .any(|q| q.metadata.name.as_deref() == Some(name))
            {
                objects.queues.push(implicit_queue(name));
            }
        }
        let store = Store::new(objects);
        let mut controllers = ControllerManager::new(opts);
        controllers.relist(&ClusterView::new(&store.objects));
        Cluster {
            store,
            controllers,
            now,
            cache,
            chaos: None,
        }
    }

    /// Injects the faults of `plan` from now on, and checks the invariants under them.
    pub fn inject_faults(&mut self, plan: FaultPlan) {
        self.chaos = Some(Box::new(Chaos {
            faults: Faults::new(plan),
            invariants: Invariants::new(),
            last_session_cut: false,
        }));
    }

    /// The faults injected and the invariants checked, when [`Cluster::inject_faults`] was
    /// called.
    pub fn chaos(&self) -> Option<&Chaos> {
        self.chaos.as_deref()
    }

    /// [`Cluster::chaos`], to change.
    pub fn chaos_mut(&mut self) -> Option<&mut Chaos> {
        self.chaos.as_deref_mut()
    }

    /// Hands watch events to the controllers (with faults: some twice, in another order).
    pub fn feed(&mut self, watched: &[Watched]) {
        if watched.is_empty() {
            return;
        }
        let view = ClusterView::new(&self.store.objects);
        match self.chaos.as_deref_mut() {
            Some(chaos) => {
                chaos.faults.set_now(self.now);
                for w in chaos.faults.deliver(watched.to_vec()) {
                    self.controllers.observe(w.as_watch(), &view);
                }
            }
            None => {
                for w in watched {
                    self.controllers.observe(w.as_watch(), &view);
                }
            }
        }
    }

    /// Runs the controllers until nothing is due at the present time.
    pub fn settle(&mut self) -> Result<Settled, ClusterError> {
        self.settle_with(|_| {})
    }

    /// [`Cluster::settle`], showing `seen` every change the store accepted, so a caller can
    /// follow transitions (a Job's phase) without rescanning the objects.
    pub fn settle_with(&mut self, mut seen: impl FnMut(&Change)) -> Result<Settled, ClusterError> {
        let mut done = Settled::default();
        // At most one crash per settling: a restarted process gets through the work it
        // relisted, as a crash-looping one backs off (without this, crashes at a high rate
        // restart the controllers forever at one instant).
        let mut crashed_once = false;
        // The changes of the last turn, still to be watched and reported: done with the next
        // turn's view, since both see the same objects (one index build per turn, not two).
        let mut last: Option<(WorkKey, bool, Vec<Watched>)> = None;
        loop {
            let work = {
                let view = ClusterView::new(&self.store.objects);
                if let Some((key, ok, mut watched)) = last.take() {
                    if let Some(chaos) = self.chaos.as_deref_mut() {
                        chaos.faults.set_now(self.now);
                        watched = chaos.faults.deliver(watched);
                    }
                    for w in &watched {
                        self.controllers.observe(w.as_watch(), &view);
                    }
                    self.controllers.finish(&key, ok, self.now);
                }
                self.controllers.next(&view, self.now)
            };
            let Some(Work { key, changes }) = work else {
                return Ok(done);
            };
            done.turns += 1;
            if done.turns > MAX_TURNS_PER_SETTLE {
                return Err(ClusterError::Unsettled(MAX_TURNS_PER_SETTLE));
            }
            let mut ok = true;
            let mut crashed = false;
            let mut watched = Vec::new();
            for c in &changes {
                let fate = if crashed_once {
                    self.write_fate().without_crash()
                } else {
                    self.write_fate()
                };
                match fate {
                    WriteFate::Apply => {}
                    WriteFate::Conflict => {
                        ok = false;
                        break;
                    }
                    WriteFate::Crash => {
                        crashed = true;
                        break;
                    }
                }
                match self.store.apply(c, self.now) {
                    Ok(w) => {
                        done.changes += 1;
                        seen(c);
                        watched.extend(w);
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "a controller change was refused");
                        ok = false;
                        break;
                    }
                }
            }
            if crashed {
                crashed_once = true;
                // The process is gone with its work queues and the watch events it had not
                // seen yet; a new one lists the cluster as it is now.
                self.controllers
                    .restart(&ClusterView::new(&self.store.objects));
            } else {
                last = Some((key, ok, watched));
            }
        }
    }

    /// What the injected faults make of a controller write (without faults: applied).
    fn write_fate(&mut self) -> WriteFate {
        match self.chaos.as_deref_mut() {
            Some(chaos) => {
                chaos.faults.set_now(self.now);
                chaos.faults.controller_write()
            }
            None => WriteFate::Apply,
        }
    }

    /// Runs one scheduling session and applies its decisions through the store: binds set
    /// the pods' node, evicted pods are removed (frozen time: their termination is instant),
    /// PodGroup and queue status are written where they changed.
    pub fn run_session(
        &mut self,
        conf: &SchedulerConf,
        uid: &str,
    ) -> Result<Decisions, ClusterError> {
        let snap = self.snapshot()?;
        Ok(self.run_session_on(snap, conf, uid))
    }

    /// The snapshot a session opened now would work on.
    pub fn snapshot(&self) -> Result<Snapshot, ClusterError> {
        Ok(build_snapshot(&self.store.objects, &self.cache)?)
    }

    /// [`Cluster::run_session`] on a snapshot the caller took with [`Cluster::snapshot`] (and
    /// may have read first, as the simulator does for the queues' deserved shares). With
    /// faults, the decisions are checked against the invariants, then only the part of them
    /// that reached the API server is applied and returned.
    pub fn run_session_on(&mut self, snap: Snapshot, conf: &SchedulerConf, uid: &str) -> Decisions {
        let mut d = volcano_scheduler::run_session(
            snap,
            conf,
            SessionOptions {
                uid: uid.to_string(),
                now: Some(self.now.to_time()),
                ..Default::default()
            },
        );
        if let Some(chaos) = self.chaos.as_deref_mut() {
            chaos.invariants.session(&self.store.objects, &d);
            chaos.faults.set_now(self.now);
            let written = chaos.faults.cut(&d);
            chaos.last_session_cut = written.binds.len() != d.binds.len()
                || written.evictions.len() != d.evictions.len()
                || written.pod_groups.len() != d.pod_groups.len()
                || written.queues.len() != d.queues.len();
            d = written;
        }
        let watched = self.apply_decisions(&d);
        self.feed(&watched);
        d
    }

    /// Applies the decisions with the scheduler's own `apply_decisions`, and turns what
    /// changed into watch events: the pods bound or evicted, the PodGroups whose status moved.
    /// A waiting pod's `PodScheduled` condition is a pod update like any other, as on a
    /// cluster.
    /// Objects are matched on borrowed `namespace/name` halves and only those a decision
    /// touches are copied: a session costs nothing per untouched object, which matters when
    /// the simulator runs thousands of them.
    fn apply_decisions(&mut self, d: &Decisions) -> Vec<Watched> {
        let objs = &mut self.store.objects;
        let touched: HashSet<(&str, &str)> = d
            .binds
            .iter()
            .map(|(p, _)| p.as_str())
            .chain(d.evictions.iter().map(String::as_str))
            .chain(d.nominated.iter().map(|(p, _)| p.as_str()))
            .chain(d.pod_conditions.iter().map(|c| c.key.as_str()))
            .map(split_key)
            .collect();
        let old_pods: BTreeMap<String, Pod> = if touched.is_empty() {
            BTreeMap::new()
        } else {
            objs.pods
                .iter()
                .filter(|p| touched.contains(&ns_name(&p.metadata)))
                .map(|p| (key(&p.metadata), p.clone()))
                .collect()
        };
        let statuses: HashMap<(&str, &str), &PodGroupStatus> = d
            .pod_groups
            .iter()
            .map(|u| (split_key(&u.key), &u.status))
            .collect();
        let old_groups: BTreeMap<usize, PodGroup> = objs
            .pod_groups
            .iter()
            .enumerate()
            .filter(|(_, pg)| {
                statuses
                    .get(&ns_name(&pg.metadata))
                    .is_some_and(|s| pg.status.as_ref() != Some(*s))
            })
            .map(|(i, pg)| (i, pg.clone()))
            .collect();
        apply_decisions(objs, d);

        let mut watched = Vec::new();
        let mut still_there = BTreeSet::new();
        if !old_pods.is_empty() {
            for p in &objs.pods {
                if !touched.contains(&ns_name(&p.metadata)) {
                    continue;
                }
                let k = key(&p.metadata);
                if let Some(old) = old_pods.get(&k) {
                    still_there.insert(k);
                    watched.push(Watched::Pod(
                        Some(Box::new(old.clone())),
                        Some(Box::new(p.clone())),
                    ));
                }
            }
        }
        for (k, old) in old_pods {
            if !still_there.contains(&k) {
                watched.push(Watched::Pod(Some(Box::new(old)), None));
            }
        }
        for (i, old) in old_groups {
            if let Some(pg) = objs.pod_groups.get(i)
                && old.status != pg.status
            {
                watched.push(Watched::PodGroup(
                    Some(Box::new(old)),
                    Some(Box::new(pg.clone())),
                ));
            }
        }
        self.store.events.extend(d.events.iter().cloned());
        watched
    }

    /// Sets a pod's phase as its kubelet would report it (for tests and the simulator).
    pub fn set_pod_phase(
        &mut self,
        namespace: &str,
        name: &str,
        phase: &str,
    ) -> Result<(), ClusterError> {
        let mut status: PodStatus = self
            .store
            .pod(namespace, name)
            .and_then(|p| p.status.clone())
            .unwrap_or_default();
        status.phase = Some(phase.to_string());
        let w = self.store.set_pod_status(namespace, name, status)?;
        self.feed(&[w]);
        Ok(())
    }

    /// Replaces a pod's status (for failures with exit codes and restarts).
    pub fn set_pod_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: PodStatus,
    ) -> Result<(), ClusterError> {
        let w = self.store.set_pod_status(namespace, name, status)?;
        self.feed(&[w]);
        Ok(())
    }
}

/// `namespace/name` as the scheduler writes a key (a pod without a namespace is in
/// `default`, as its cache reads it).
pub(crate) fn key(m: &ObjectMeta) -> String {
    let (ns, name) = ns_name(m);
    format!("{ns}/{name}")
}

/// The halves of [`key`], borrowed.
fn ns_name(m: &ObjectMeta) -> (&str, &str) {
    (
        m.namespace.as_deref().unwrap_or("default"),
        m.name.as_deref().unwrap_or_default(),
    )
}

/// A decision's `namespace/name` key, split.
fn split_key(k: &str) -> (&str, &str) {
    k.split_once('/').unwrap_or(("default", k))
}
