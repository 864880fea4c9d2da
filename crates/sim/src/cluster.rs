//! The store with the controllers and the scheduler wired to it: every change a component
//! makes goes through the store, and every watch event the store produces goes back to the
//! controllers, as in a cluster.

use volcano_api::k8s_openapi::api::core::v1::PodStatus;
use volcano_api::keys;
use volcano_api::{Objects, WatchEvent};
use volcano_controllers::change::Change;
use volcano_controllers::manager::{ControllerManager, ManagerOptions, Work, WorkKey};
use volcano_controllers::time::Instant;
use volcano_controllers::view::ClusterView;
use volcano_scheduler::cache::{BuildError, CacheOptions, build_snapshot, implicit_queue};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::cycle::{Prepared, SchedulingCycle, SnapshotSource};
use volcano_scheduler::framework::{Decisions, SessionOptions, Unobserved};
use volcano_scheduler::model::Snapshot;

use crate::decisions::apply_decisions;
use crate::faults::inject::WriteFate;
use crate::faults::{FaultPlan, Faults, Invariants};
use crate::store::{ApplyError, Store};

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
    /// The incremental snapshot disagreed with one built from all objects.
    #[error("the kept snapshot differs from a rebuilt one: {0}")]
    SnapshotsDiffer(String),
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
    /// The scheduler's incremental cache, following the store's journal.
    cycle: SchedulingCycle,
    /// Check every kept snapshot against one built from all objects (tests).
    check_snapshots: bool,
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
    /// queues, the ReplicaSets and pods its workloads would have by now, and controllers that
    /// have just listed everything.
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
        crate::workloads::start_workloads(&mut objects);
        let store = Store::new(objects);
        let mut controllers = ControllerManager::new(opts);
        controllers.relist(&ClusterView::new(store.indexed()));
        Cluster {
            store,
            controllers,
            now,
            cycle: SchedulingCycle::new(cache),
            check_snapshots: false,
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

    /// Checks every snapshot the incremental cache keeps against one built from all objects,
    /// failing the session where they disagree (for tests: it doubles a session's cost).
    pub fn check_snapshots(&mut self) {
        self.check_snapshots = true;
    }

    /// Hands the store's journal to the scheduler's cache, as its watches would; done as
    /// changes happen, so the journal never holds more than one step's changes.
    pub fn follow_journal(&mut self) {
        for e in self.store.take_journal() {
            self.cycle.follow(&e);
        }
    }

    /// Hands watch events to the controllers (with faults: some twice, in another order).
    pub fn feed(&mut self, watched: &[WatchEvent]) {
        self.follow_journal();
        if watched.is_empty() {
            return;
        }
        let view = ClusterView::new(self.store.indexed());
        let delivered = match self.chaos.as_deref_mut() {
            Some(chaos) => {
                chaos.faults.set_now(self.now);
                chaos.faults.deliver(watched.to_vec())
            }
            None => {
                for w in watched {
                    self.controllers.observe(w, &view);
                }
                return;
            }
        };
        for w in &delivered {
            self.controllers.observe(w, &view);
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
        let mut last: Option<(WorkKey, bool, Vec<WatchEvent>)> = None;
        loop {
            self.follow_journal();
            let work = {
                let view = ClusterView::new(self.store.indexed());
                if let Some((key, ok, mut watched)) = last.take() {
                    if let Some(chaos) = self.chaos.as_deref_mut() {
                        chaos.faults.set_now(self.now);
                        watched = chaos.faults.deliver(watched);
                    }
                    for w in &watched {
                        self.controllers.observe(w, &view);
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
                    .restart(&ClusterView::new(self.store.indexed()));
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

    /// The snapshot a session opened now would work on: the scheduler's incremental cache,
    /// told of every change since the last one, as a scheduler on a cluster takes it.
    pub fn snapshot(&mut self) -> Result<Snapshot, ClusterError> {
        self.follow_journal();
        let Prepared {
            snapshot,
            source,
            mut left_out,
        } = self.cycle.prepare(self.store.objects())?;
        // Scenarios are checked when loaded: an object the scheduler cannot read is a bug
        // to report, not one to schedule around.
        if !left_out.is_empty() {
            self.cycle.invalidate();
            return Err(left_out.swap_remove(0).into());
        }
        if self.check_snapshots && source == SnapshotSource::Kept {
            let rebuilt = build_snapshot(self.store.objects(), self.cycle.options())?;
            check_same(&snapshot, &rebuilt)?;
        }
        Ok(snapshot)
    }

    /// [`Cluster::run_session`] on a snapshot the caller took with [`Cluster::snapshot`] (and
    /// may have read first, as the simulator does for the queues' deserved shares). With
    /// faults, the decisions are checked against the invariants, then only the part of them
    /// that reached the API server is applied and returned.
    pub fn run_session_on(&mut self, snap: Snapshot, conf: &SchedulerConf, uid: &str) -> Decisions {
        let prepared = Prepared {
            snapshot: snap,
            source: SnapshotSource::Kept,
            left_out: Vec::new(),
        };
        let opts = SessionOptions {
            uid: uid.to_string(),
            now: Some(self.now.to_time()),
            ..Default::default()
        };
        let mut d = prepared.run(conf, opts, &mut Unobserved);
        if let Some(chaos) = self.chaos.as_deref_mut() {
            chaos.invariants.session(self.store.objects(), &d);
            chaos.faults.set_now(self.now);
            let written = chaos.faults.cut(&d);
            chaos.last_session_cut = written.binds.len() != d.binds.len()
                || written.evictions.len() != d.evictions.len()
                || written.pod_groups.len() != d.pod_groups.len()
                || written.queues.len() != d.queues.len();
            d = written;
        }
        let watched = apply_decisions(&mut self.store, &d);
        self.feed(&watched);
        d
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

/// Fails when a kept snapshot and one rebuilt from the same objects differ in what a session
/// reads.
fn check_same(kept: &Snapshot, rebuilt: &Snapshot) -> Result<(), ClusterError> {
    let (a, b) = (kept.scheduling_state(), rebuilt.scheduling_state());
    if a == b {
        return Ok(());
    }
    let first = a
        .lines()
        .zip(b.lines())
        .find(|(x, y)| x != y)
        .map(|(x, y)| format!("kept: {x}\nrebuilt: {y}"))
        .unwrap_or_else(|| "the two differ in length".to_string());
    Err(ClusterError::SnapshotsDiffer(first))
}
