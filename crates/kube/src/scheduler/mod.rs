//! `volcano scheduler`: watchers feed the cache, a session runs every schedule period while
//! this replica leads, and its decisions are written back.

pub mod conf;
pub mod writes;

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::{Api, PostParams};
use kube::{Client, Error as KubeError};
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, MissedTickBehavior};
use volcano_api::Objects;
use volcano_api::keys;
use volcano_api::scheduling::Queue;
use volcano_scheduler::cache::{
    BuildError, CacheOptions, SchedulerCache, build_snapshot, implicit_queue,
};
use volcano_scheduler::framework::{Session, SessionOptions};
use volcano_scheduler::model::Snapshot;

use crate::cache::{Changed, ClusterCache, Kind};
use crate::events::EventSink;
use crate::leader::Leadership;
use crate::metrics::{ON_CLOSE, ON_OPEN, SchedulerMetrics, label, ms};
use crate::reflect;
use crate::serve::Readiness;
use crate::{RuntimeError, Stop};
use conf::ConfSource;
use writes::Writer;

/// The kinds the scheduler reads.
pub const SCHEDULER_KINDS: [Kind; 5] = [
    Kind::Pod,
    Kind::Node,
    Kind::PodGroup,
    Kind::Queue,
    Kind::PriorityClass,
];

/// Objects a snapshot may leave out, one at a time, before the session is given up.
const MAX_EXCLUDED: usize = 64;

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

/// The scheduler's run: its cache, its configuration, its writer.
pub struct SchedulerRuntime {
    opts: SchedulerOptions,
    cache: ClusterCache,
    /// The snapshot kept current from the cache's journal, so a session costs what changed.
    snapshots: SchedulerCache,
    writer: Writer,
    metrics: SchedulerMetrics,
    sessions: u64,
}

impl SchedulerRuntime {
    /// A scheduler writing through `client`.
    pub fn new(client: Client, opts: SchedulerOptions, metrics: SchedulerMetrics) -> Self {
        let events = EventSink::start(client.clone(), "volcano-scheduler", &opts.identity);
        let writer = Writer {
            client,
            concurrency: opts.bind_concurrency.max(1),
            events,
            metrics: metrics.clone(),
            gone_queues: BTreeMap::new(),
        };
        let snapshots = SchedulerCache::new(CacheOptions {
            scheduler_names: opts.scheduler_names.clone(),
            default_queue: opts.default_queue.clone(),
        });
        SchedulerRuntime {
            opts,
            cache: ClusterCache::journaling(),
            snapshots,
            writer,
            metrics,
            sessions: 0,
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
        let watchers = reflect::watch(&self.writer.client, &SCHEDULER_KINDS, &tx);
        drop(tx);
        let mut ticker = tokio::time::interval(self.opts.schedule_period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut queues_ensured = false;
        loop {
            tokio::select! {
                u = rx.recv() => {
                    let Some(u) = u else { break };
                    self.cache.apply(u);
                    while let Ok(u) = rx.try_recv() {
                        self.cache.apply(u);
                    }
                }
                _ = ticker.tick() => {
                    if !self.cache.synced(&SCHEDULER_KINDS) {
                        continue;
                    }
                    ready.set_ready();
                    if !leader.is_leader() {
                        self.metrics.sessions_standby.inc();
                        continue;
                    }
                    if !queues_ensured {
                        queues_ensured = self.ensure_queues().await;
                    }
                    self.opts.conf.reload();
                    self.session().await;
                }
                _ = stop.changed() => break,
            }
        }
        for w in watchers {
            w.abort();
        }
        Ok(())
    }

    /// Creates the root and default queues if missing, as Volcano's scheduler does at start.
    async fn ensure_queues(&self) -> bool {
        let api: Api<Queue> = Api::all(self.writer.client.clone());
        let mut ok = true;
        for name in [keys::ROOT_QUEUE, self.opts.default_queue.as_str()] {
            if self
                .cache
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

    /// One session: snapshot, actions, writes, metrics.
    pub async fn session(&mut self) {
        let started = Instant::now();
        let cache_opts = CacheOptions {
            scheduler_names: self.opts.scheduler_names.clone(),
            default_queue: self.opts.default_queue.clone(),
        };
        let Some(snap) = self.take_snapshot(&cache_opts) else {
            return;
        };
        let snapshot_took = started.elapsed();
        self.sessions += 1;
        let conf = self.opts.conf.conf().clone();
        let opts = SessionOptions {
            uid: format!("{}-{}", self.opts.identity, self.sessions),
            now: Some(
                volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    volcano_api::k8s_openapi::jiff::Timestamp::now(),
                ),
            ),
            percentage_nodes_to_find: self.opts.percentage_nodes_to_find,
        };
        let metrics = self.metrics.clone();
        // The session is pure computation: off the async threads, so watches keep flowing.
        let decided = tokio::task::spawn_blocking(move || {
            let t = std::time::Instant::now();
            let mut ssn =
                Session::open_observed(snap, &conf, opts, &mut metrics.plugin_timer(ON_OPEN));
            metrics
                .open_session_ms
                .observe(ms(snapshot_took + t.elapsed()));
            for action in &conf.actions {
                let t = std::time::Instant::now();
                volcano_scheduler::actions::run(action, &mut ssn);
                metrics
                    .action_latency_ms
                    .get_or_create(&label("action", action.clone()))
                    .observe(ms(t.elapsed()));
            }
            ssn.close_observed(&mut metrics.plugin_timer(ON_CLOSE))
        })
        .await;
        let d = match decided {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %e, "a session failed; the next one starts from a fresh snapshot");
                return;
            }
        };
        // Recorded against the objects as the session saw them, before its writes land.
        self.metrics
            .record_session(&d, self.cache.objects(), started.elapsed());
        let written = self.writer.write(&d, &mut self.cache).await;
        if written.bound + written.evicted > 0 || written.bind_failures > 0 {
            tracing::info!(
                bound = written.bound,
                bind_failures = written.bind_failures,
                evicted = written.evicted,
                "session {}",
                self.sessions
            );
        }
    }

    /// The session's snapshot: the kept one, brought up to date with the cache's journal;
    /// or, while the implicit queues are missing or an object cannot be read, one built from
    /// all objects that leaves the unreadable ones out.
    fn take_snapshot(&mut self, cache_opts: &CacheOptions) -> Option<Snapshot> {
        for c in self.cache.take_journal() {
            if let Changed::Pod(None, Some(p)) = &c {
                self.metrics.pod_watched(p, &self.opts.scheduler_names);
            }
            follow(&mut self.snapshots, &c);
        }
        let objs = self.cache.objects();
        let has_queues = [keys::ROOT_QUEUE, self.opts.default_queue.as_str()]
            .iter()
            .all(|n| {
                objs.queues
                    .iter()
                    .any(|q| q.metadata.name.as_deref() == Some(*n))
            });
        if has_queues {
            let before = self.snapshots.stats();
            if let Ok(snap) = self.snapshots.snapshot(objs) {
                let source = if self.snapshots.stats().kept > before.kept {
                    "kept"
                } else {
                    "rebuilt"
                };
                self.metrics
                    .snapshots
                    .get_or_create(&label("source", source))
                    .inc();
                return Some(snap);
            }
        }
        self.snapshots.invalidate();
        self.metrics
            .snapshots
            .get_or_create(&label("source", "rebuilt"))
            .inc();
        match snapshot(objs, cache_opts) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "session skipped: no snapshot could be taken");
                None
            }
        }
    }
}

/// Tells the scheduler cache of one change to the objects.
fn follow(snapshots: &mut SchedulerCache, c: &Changed) {
    match c {
        Changed::Pod(old, new) => snapshots.pod_changed(old.as_deref(), new.as_deref()),
        Changed::PodGroup(old, new) => {
            snapshots.pod_group_changed(old.as_deref(), new.as_deref());
        }
        Changed::Queue(old, new) => snapshots.queue_changed(old.as_deref(), new.as_deref()),
        Changed::Node(old, new) => snapshots.node_changed(old.as_deref(), new.as_deref()),
        Changed::PriorityClass => snapshots.priority_class_changed(),
        Changed::Job(..) | Changed::Command(_) | Changed::Other => {}
    }
}

/// A snapshot of `objs`, leaving out (with a warning naming it) any object the scheduler
/// cannot read, so one bad object never stops scheduling for everyone else. The implicit
/// root and default queues are added when the cluster has not got them yet.
pub fn snapshot(objs: &Objects, opts: &CacheOptions) -> Result<Snapshot, BuildError> {
    let needs_queues = [keys::ROOT_QUEUE, opts.default_queue.as_str()]
        .iter()
        .any(|n| {
            !objs
                .queues
                .iter()
                .any(|q| q.metadata.name.as_deref() == Some(*n))
        });
    let first = if needs_queues {
        None
    } else {
        match build_snapshot(objs, opts) {
            Ok(s) => return Ok(s),
            Err(e) => Some(e),
        }
    };
    let mut owned = objs.clone();
    for name in [keys::ROOT_QUEUE, opts.default_queue.as_str()] {
        if !owned
            .queues
            .iter()
            .any(|q| q.metadata.name.as_deref() == Some(name))
        {
            owned.queues.push(implicit_queue(name));
        }
    }
    let mut last = first;
    for _ in 0..MAX_EXCLUDED {
        if let Some(e) = &last {
            tracing::warn!(error = %e, "object left out of scheduling");
            if !exclude(&mut owned, &e.object) {
                break;
            }
        }
        match build_snapshot(&owned, opts) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| BuildError {
        object: String::new(),
        field: String::new(),
        message: "no snapshot".to_string(),
    }))
}

/// Removes the object a [`BuildError`] names (`Kind ns/name` or `Kind name`); whether it did.
fn exclude(objs: &mut Objects, object: &str) -> bool {
    let Some((kind, rest)) = object.split_once(' ') else {
        return false;
    };
    let (ns, name) = rest.split_once('/').unwrap_or(("", rest));
    let is = |m: &volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        m.name.as_deref() == Some(name) && (ns.is_empty() || m.namespace.as_deref() == Some(ns))
    };
    let before = (
        objs.pods.len(),
        objs.nodes.len(),
        objs.pod_groups.len(),
        objs.queues.len(),
    );
    match kind {
        "Pod" => objs.pods.retain(|p| !is(&p.metadata)),
        "Node" => objs.nodes.retain(|n| !is(&n.metadata)),
        "PodGroup" => objs.pod_groups.retain(|p| !is(&p.metadata)),
        "Queue" => objs.queues.retain(|q| !is(&q.metadata)),
        _ => return false,
    }
    before
        != (
            objs.pods.len(),
            objs.nodes.len(),
            objs.pod_groups.len(),
            objs.queues.len(),
        )
}

/// Waits for `stop` to become true.
pub async fn stopped(stop: &mut watch::Receiver<bool>) {
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            return;
        }
    }
}
