//! `volcano scheduler`: watchers feed the mirror; while this replica leads, a session runs as
//! soon as a change may give it work (at most one per [`MIN_SESSION_GAP`]) and at least every
//! schedule period, and its decisions are written back off the loop.

mod arrivals;
pub mod conf;
pub mod wake;
mod withhold;
pub mod writes;

use std::time::Duration;

use kube::api::{Api, PostParams};
use kube::{Client, Error as KubeError};
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, MissedTickBehavior};
use volcano_api::WatchEvent;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use volcano_api::k8s_openapi::jiff::Timestamp;
use volcano_api::keys;
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_scheduler::cache::{CacheOptions, implicit_queue};
use volcano_scheduler::cycle::SchedulingCycle;
use volcano_scheduler::framework::Decisions;
use volcano_scheduler::framework::SessionOptions;
use volcano_scheduler::framework::close::SCHEDULED;
use volcano_scheduler::model::PgPhase;
use writes::Outcome;

use crate::events::EventSink;
use crate::leader::Leadership;
use crate::metrics::{SchedulerMetrics, label};
use crate::mirror::{ClusterMirror, Kind};
use crate::reflect;
use crate::serve::Readiness;
use crate::{RuntimeError, Stop};
use arrivals::ArrivingGangs;
use conf::ConfSource;
use withhold::Withheld;
use writes::Writer;

/// The kinds the scheduler reads: namespaces answer pod affinity's `namespaceSelector`, the
/// storage kinds the volume filters and binder, HyperNodes the network-topology placement.
pub const SCHEDULER_KINDS: [Kind; 11] = [
    Kind::Pod,
    Kind::Node,
    Kind::PodGroup,
    Kind::Queue,
    Kind::PriorityClass,
    Kind::Namespace,
    Kind::PersistentVolume,
    Kind::PersistentVolumeClaim,
    Kind::StorageClass,
    Kind::CSINode,
    Kind::HyperNode,
];

/// Settings of the scheduler.
#[derive(Debug)]
pub struct SchedulerOptions {
    /// Pods naming one of these schedulers are ours.
    pub scheduler_names: Vec<String>,
    /// Queue of PodGroups that name none.
    pub default_queue: String,
    /// Time between sessions.
    pub schedule_period: Duration,
    /// The configuration.
    pub conf: ConfSource,
    /// Volcano's `--percentage-nodes-to-find`.
    pub percentage_nodes_to_find: Option<u8>,
    /// Binds and evictions in flight at most.
    pub bind_concurrency: usize,
    /// This replica's name, for events.
    pub identity: String,
}

/// The shortest time between the end of one session and the start of the next that new work
/// starts (twice the last session's time when that is longer): arrivals within it are taken
/// by one session, so a stream of pods costs a session per batch, not per pod.
pub const MIN_SESSION_GAP: Duration = Duration::from_millis(10);

/// Watch events applied to the mirror between two hand-overs of its journal to the cycle.
const JOURNAL_PAGE: usize = 256;

/// The scheduler's run: its mirror, its configuration, its writer.
pub struct SchedulerRuntime {
    opts: SchedulerOptions,
    mirror: ClusterMirror,
    /// The scheduling cycle, following the mirror's journal, so a session costs what changed.
    cycle: SchedulingCycle,
    writer: Writer,
    outcomes: mpsc::UnboundedReceiver<Outcome>,
    metrics: SchedulerMetrics,
    sessions: u64,
    /// A change since the last session may give a session work.
    work: bool,
    /// Gangs short of pods whose pods are still arriving: not told yet that they are short.
    arriving: ArrivingGangs,
}

impl SchedulerRuntime {
    /// A scheduler writing through `client`.
    pub fn new(client: Client, opts: SchedulerOptions, metrics: SchedulerMetrics) -> Self {
        let events = EventSink::start(client.clone(), "volcano-scheduler", &opts.identity);
        let (writer, outcomes) = Writer::start(
            client,
            opts.bind_concurrency.max(1),
            events,
            metrics.clone(),
        );
        let cycle = SchedulingCycle::new(CacheOptions {
            scheduler_names: opts.scheduler_names.clone(),
            default_queue: opts.default_queue.clone(),
            // A bare pod is scheduled at once whether or not a controller-manager makes it a
            // PodGroup object (ours with `--pod-groups-for-bare-pods`, Volcano's): the object
            // takes the shadow's place when it comes.
            shadow_pod_groups: true,
        });
        let period = opts.schedule_period;
        SchedulerRuntime {
            opts,
            mirror: ClusterMirror::journaling(),
            cycle,
            writer,
            outcomes,
            metrics,
            sessions: 0,
            work: false,
            arriving: ArrivingGangs::new(period),
        }
    }

    /// Runs until `stop` fires: watches, and schedules every period while `leader` holds.
    pub async fn run(
        mut self,
        leader: Leadership,
        ready: Readiness,
        mut stop: Stop,
    ) -> Result<(), RuntimeError> {
        let (tx, mut rx) = mpsc::channel(reflect::UPDATE_CHANNEL);
        let watchers = reflect::watch(
            self.writer.client(),
            &SCHEDULER_KINDS,
            reflect::PodView::Scheduler,
            &tx,
        );
        drop(tx);
        let mut ticker = tokio::time::interval(self.opts.schedule_period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut queues_ensured = false;
        let mut next_allowed = Instant::now();
        loop {
            let mut due = false;
            let mut tick = false;
            tokio::select! {
                u = rx.recv() => {
                    let Some(u) = u else { break };
                    self.mirror.apply(u);
                    let mut applied = 1;
                    while let Ok(u) = rx.try_recv() {
                        self.mirror.apply(u);
                        applied += 1;
                        // The journal holds a second copy of each object until followed: a
                        // full channel (a relist) is followed in pages, not held twice.
                        if applied % JOURNAL_PAGE == 0 {
                            self.follow_journal(true);
                        }
                    }
                    self.follow_journal(true);
                }
                o = self.outcomes.recv() => {
                    if let Some(o) = o {
                        self.writer.settle(o, &mut self.mirror);
                    }
                    while let Ok(o) = self.outcomes.try_recv() {
                        self.writer.settle(o, &mut self.mirror);
                    }
                    // What a failed write put back is decided again on the period's tick,
                    // which is the retry's backoff.
                    self.follow_journal(false);
                }
                _ = ticker.tick() => {
                    due = true;
                    tick = true;
                }
                _ = tokio::time::sleep_until(next_allowed), if self.work => due = true,
                _ = stop.changed() => break,
            }
            if !due || !self.mirror.synced(&SCHEDULER_KINDS) {
                continue;
            }
            ready.set_ready();
            if !leader.is_leader() {
                self.metrics.sessions_standby.inc();
                self.work = false;
                continue;
            }
            if !queues_ensured {
                queues_ensured = self.ensure_queues().await;
            }
            self.opts.conf.reload();
            let started = Instant::now();
            self.session(tick).await;
            // A session started by new work waits for the gap, or for twice as long as the
            // last session took: at most a third of a core goes to sessions however fast work
            // arrives, and arrivals meanwhile are taken by one session.
            next_allowed = Instant::now() + MIN_SESSION_GAP.max(started.elapsed() * 2);
        }
        for w in watchers {
            w.abort();
        }
        Ok(())
    }

    /// Creates the root and default queues if missing, as Volcano's scheduler does at start.
    async fn ensure_queues(&self) -> bool {
        let api: Api<Queue> = Api::all(self.writer.client().clone());
        let mut ok = true;
        for name in [keys::ROOT_QUEUE, self.opts.default_queue.as_str()] {
            if self
                .mirror
                .objects()
                .queues
                .iter()
                .any(|q| q.metadata.name.as_deref() == Some(name))
            {
                continue;
            }
            match api
                .create(&PostParams::default(), &implicit_queue(name))
                .await
            {
                Ok(_) => tracing::info!(queue = name, "created queue"),
                Err(KubeError::Api(s)) if s.code == 409 => {}
                Err(e) => {
                    ok = false;
                    tracing::warn!(queue = name, error = %e, "could not create queue");
                }
            }
        }
        ok
    }

    /// Hands what the mirror changed to the scheduling cycle, as it arrives (a standby follows
    /// too, so its journal never grows and it leads with a current snapshot). With `wakes`, a
    /// change that may give a session work starts one soon.
    fn follow_journal(&mut self, wakes: bool) {
        for e in self.mirror.take_journal() {
            if let WatchEvent::Pod(None, Some(p)) = &e {
                self.metrics.pod_watched(p, &self.opts.scheduler_names);
            }
            self.cycle.follow(&e);
            let joins_a_short_gang = self.joins_a_gang_still_short(&e);
            if wakes && !self.work {
                self.work = wake::opens_work(&e) && !self.awaits_its_pod(&e) && !joins_a_short_gang;
            }
        }
    }

    /// Whether `e` is a new pod whose gang still lacks pods its controller is making (a
    /// Volcano Job's pods come one by one): a session for it could only tell the gang it is
    /// short, then tell it again once it is whole, two status writes and events per pod more
    /// than a gang seen whole costs, which under load slowed the API server. The pod that
    /// completes the gang starts the session; the period's tick still runs one meanwhile.
    /// Its arrival is noted either way ([`ArrivingGangs`]).
    fn joins_a_gang_still_short(&mut self, e: &WatchEvent) -> bool {
        let WatchEvent::Pod(None, Some(p)) = e else {
            return false;
        };
        let Some(gang) = self.cycle.gang_key(p) else {
            return false;
        };
        let short = self.cycle.gang_short_of_pods(&gang);
        if short || self.arriving.any() {
            self.arriving.pod_arrived(gang, short, Instant::now());
        }
        short
    }

    /// Whether `e` is a bare pod's new PodGroup whose pod does not name it yet: the pod's
    /// annotation, on its way, starts the session (see [`wake::made_for_pod`]).
    fn awaits_its_pod(&self, e: &WatchEvent) -> bool {
        match e {
            WatchEvent::PodGroup(None, Some(pg)) => self.pod_group_awaits_its_pod(pg),
            _ => false,
        }
    }

    /// Whether `pg` was made for a bare pod that does not name it yet.
    fn pod_group_awaits_its_pod(&self, pg: &PodGroup) -> bool {
        let Some(pod) = wake::made_for_pod(pg) else {
            return false;
        };
        let ns = pg.metadata.namespace.clone().unwrap_or_default();
        self.mirror
            .pod(&volcano_api::NamespacedName::new(ns, pod))
            .is_some_and(|p| !wake::names(p, pg))
    }

    /// Holds back (in `withheld`) PodGroup status writes that the next moment makes moot, so
    /// a new gang costs one status write, not two or three, and returns whether a session
    /// should follow at once:
    /// - a gang this session allocated says `Inqueue` and ready; the next session, which
    ///   follows at once (true is returned), sees its binds assumed and writes `Running`;
    /// - a bare pod's PodGroup enqueued before its pod names it (a session started by other
    ///   work): the pod's annotation, on its way, starts the session that allocates it.
    fn settling(&self, d: &Decisions, session: &str, withheld: &mut Withheld) -> bool {
        let mut follow_up = false;
        for u in d.pod_groups.iter().filter(|u| u.changed) {
            if u.status.phase != PgPhase::Inqueue.as_str() || withheld.holds_pod_group(&u.key) {
                continue;
            }
            let allocated_now =
                u.status.conditions.iter().any(|c| {
                    c.type_ == SCHEDULED && c.status == "True" && c.transition_id == session
                });
            let awaits_its_pod = || {
                self.mirror
                    .pod_group(&u.key)
                    .is_some_and(|pg| self.pod_group_awaits_its_pod(pg))
            };
            if allocated_now || awaits_its_pod() {
                follow_up |= allocated_now;
                withheld.pod_group(u.key.clone());
            }
        }
        follow_up
    }

    /// One session: the cycle's snapshot, its actions off the async threads, the writes, the
    /// metrics. Only a session of the period's tick (`tick`) tells waiting pods why they wait
    /// (their `PodScheduled=False` condition and `FailedScheduling` event): one that new work
    /// started may see a gang whose pods are still being created, and a pod placed a moment
    /// later should not have been told it waits, nor cost a write. Queues' `allocated`, for
    /// people and monitoring and moved by every bind, is written on the tick too. What is held
    /// back is decided anew by a later session ([`Withheld`]).
    pub async fn session(&mut self, tick: bool) {
        let started = Instant::now();
        self.work = false;
        self.writer.reassert(&mut self.mirror);
        self.follow_journal(false);
        let prepared = match self.cycle.prepare(self.mirror.objects()) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "session skipped: no snapshot could be taken");
                return;
            }
        };
        for e in &prepared.left_out {
            tracing::warn!(error = %e, "object left out of scheduling");
        }
        self.metrics
            .snapshots
            .get_or_create(&label("source", prepared.source.as_str()))
            .inc();
        let snapshot_took = started.elapsed();
        self.sessions += 1;
        let conf = self.opts.conf.conf().clone();
        let uid = format!("{}-{}", self.opts.identity, self.sessions);
        let opts = SessionOptions {
            uid: uid.clone(),
            now: Some(Time(Timestamp::now())),
            percentage_nodes_to_find: self.opts.percentage_nodes_to_find,
        };
        let metrics = self.metrics.clone();
        // The session is pure computation: off the async threads, so watches keep flowing.
        let decided = tokio::task::spawn_blocking(move || {
            let mut observer = metrics.session_observer(snapshot_took);
            prepared.run(&conf, opts, &mut observer)
        })
        .await;
        let mut d = match decided {
            Ok(d) => d,
            Err(e) => {
                self.cycle.invalidate();
                tracing::error!(error = %e, "a session failed; the next one starts from a fresh snapshot");
                return;
            }
        };
        // Recorded against the objects as the session saw them, before its writes land.
        self.metrics
            .record_session(&d, self.mirror.indexed(), started.elapsed(), tick);
        let mut withheld = Withheld::default();
        if !tick {
            withheld.until_tick();
        }
        let (mirror, cycle) = (&self.mirror, &self.cycle);
        let holds_phase = |pg: &_, phase: &str| {
            mirror
                .pod_group(pg)
                .and_then(|pg| pg.status.as_ref())
                .is_some_and(|s| s.phase == phase)
        };
        self.arriving
            .withhold(&d, Instant::now(), holds_phase, &mut withheld);
        if self.settling(&d, &uid, &mut withheld) {
            self.work = true;
        }
        withheld.take_out(&mut d, |pod| {
            mirror.pod(pod).and_then(|p| cycle.gang_key(p))
        });
        self.writer.dispatch(&d, &mut self.mirror);
        // The session's own assumptions wake nothing: they are what it decided.
        self.follow_journal(false);
        let written = self.writer.take_written();
        if written.bound + written.evicted > 0 || written.bind_failures > 0 {
            tracing::info!(
                bound = written.bound,
                bind_failures = written.bind_failures,
                evicted = written.evicted,
                in_flight = self.writer.in_flight(),
                "written before session {}",
                self.sessions
            );
        }
    }
}

/// Waits for `stop` to become true.
pub async fn stopped(stop: &mut watch::Receiver<bool>) {
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            return;
        }
    }
}
