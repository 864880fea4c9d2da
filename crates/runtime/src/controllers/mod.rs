//! `volcano controller-manager`: watchers feed the mirror and the controllers; while this
//! replica leads, the controllers' work is taken turn by turn and its changes written.

pub mod changes;
pub mod hypernode_config;
#[cfg(test)]
mod run_tests;
mod turn;

use std::time::{Duration, SystemTime};

use kube::Client;
use kube::runtime::watcher;
use tokio::sync::mpsc;
use volcano_controllers::admission::default_job;
use volcano_controllers::change::Change;
use volcano_controllers::manager::{ControllerManager, ManagerOptions};
use volcano_controllers::time::Instant as CtlInstant;
use volcano_controllers::view::ClusterView;

use crate::events::EventSink;
use crate::leader::Leadership;
use crate::metrics::{ControllerMetrics, label};
use crate::mirror::{ClusterMirror, Kind, Update};
use crate::reflect;
use crate::serve::Readiness;
use crate::{RuntimeError, Stop};
use hypernode_config::{CONFIG_PERIOD, ControllerConfigMap};
use turn::{TurnDone, TurnsInFlight, Written};
use volcano_api::WatchEvent;

/// What the controller-manager keeps of each pod: from its watch, and from what the API server
/// gives back for a pod it created or patched. The two must agree, since the mirror takes no
/// watch event of a version it already holds.
pub(crate) const POD_VIEW: reflect::PodView = reflect::PodView::Controllers;

/// The kinds the controllers read: ReplicaSets and StatefulSets size their pods' PodGroups;
/// CronJobs and JobFlows create Jobs, JobFlows from JobTemplates; nodes' labels make
/// HyperNodes, whose node counts are kept.
pub const CONTROLLER_KINDS: [Kind; 13] = [
    Kind::Job,
    Kind::Pod,
    Kind::PodGroup,
    Kind::Queue,
    Kind::Command,
    Kind::PriorityClass,
    Kind::ReplicaSet,
    Kind::StatefulSet,
    Kind::CronJob,
    Kind::JobFlow,
    Kind::JobTemplate,
    Kind::Node,
    Kind::HyperNode,
];

/// Turns whose writes are in flight at once (Volcano's controllers run several workers): one
/// turn's API round trips never hold up another's, and the loop goes on taking watch events and
/// starting turns while writes are in flight, so a Job created while another Job's pods are
/// being written gets its PodGroup at once, not after that turn. A key is never in two turns
/// at once (the work queues hand it out again only when it is done, its writes then in the
/// mirror), so no turn decides from a state its own key's earlier turn is still changing.
const TURNS_IN_FLIGHT: usize = 64;

/// How long the loop sleeps when no work is due and nothing is watched.
const IDLE: Duration = Duration::from_secs(1);

/// The present, as the controllers take it.
fn now() -> CtlInstant {
    CtlInstant(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default(),
    )
}

/// The controllers' run.
pub struct ControllerRuntime {
    client: Client,
    manager: ControllerManager,
    mirror: ClusterMirror,
    events: EventSink,
    metrics: ControllerMetrics,
    listed: bool,
    /// When the per-queue PodGroup counts were last written.
    queues_recorded: Option<std::time::Instant>,
    /// Where the HyperNode controller's configuration is read, if it runs with one.
    hyper_node_config: Option<ControllerConfigMap>,
    /// When that configuration was last read, and what was found (to log only a change).
    config_read: Option<(std::time::Instant, Result<Option<String>, String>)>,
}

/// How often the per-queue PodGroup counts are written.
const QUEUE_METRICS_PERIOD: Duration = Duration::from_secs(1);

impl ControllerRuntime {
    /// Controllers writing through `client`.
    pub fn new(
        client: Client,
        opts: ManagerOptions,
        identity: &str,
        metrics: ControllerMetrics,
    ) -> Self {
        let events = EventSink::start(client.clone(), "volcano-controllers", identity);
        ControllerRuntime {
            client,
            manager: ControllerManager::new(opts),
            mirror: ClusterMirror::default(),
            events,
            metrics,
            listed: false,
            queues_recorded: None,
            hyper_node_config: None,
            config_read: None,
        }
    }

    /// Whether a bare pod of ours gets a PodGroup object (on unless turned off): off, it is
    /// left to the scheduler's shadow PodGroup.
    pub fn with_bare_pod_groups(mut self, on: bool) -> Self {
        self.manager.set_bare_pod_groups(on);
        self
    }

    /// Runs the HyperNode controller too: node counts always, label discovery as `config`'s
    /// ConfigMap says (read again every few seconds).
    pub fn with_hyper_node_controller(mut self, config: Option<ControllerConfigMap>) -> Self {
        self.manager.run_hyper_node_controller(None);
        self.hyper_node_config = config;
        self
    }

    /// Reads the HyperNode controller's configuration when it is due, and hands a changed one
    /// to the controller. A configuration that does not parse is logged, naming the field,
    /// and the one in force stays, as Volcano keeps running on a bad ConfigMap.
    async fn reload_config(&mut self) {
        let Some(cm) = &self.hyper_node_config else {
            return;
        };
        if self
            .config_read
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < CONFIG_PERIOD)
        {
            return;
        }
        let found = cm.read(&self.client).await.map_err(|e| e.to_string());
        let changed = self
            .config_read
            .as_ref()
            .is_none_or(|(_, was)| *was != found);
        if changed {
            match &found {
                Ok(text) => match hypernode_config::parse(text.as_deref().unwrap_or_default()) {
                    Ok(discovery) => {
                        tracing::info!(
                            configmap = %format!("{}/{}", cm.namespace, cm.name),
                            label_discovery = discovery.is_some(),
                            "HyperNode controller configuration loaded"
                        );
                        self.manager.run_hyper_node_controller(discovery);
                    }
                    Err(e) => tracing::error!(
                        configmap = %format!("{}/{}", cm.namespace, cm.name),
                        error = %e,
                        "invalid HyperNode discovery configuration; the one in force stays"
                    ),
                },
                Err(e) => tracing::warn!(
                    configmap = %format!("{}/{}", cm.namespace, cm.name),
                    error = %e,
                    "cannot read the HyperNode controller's configuration"
                ),
            }
        }
        self.config_read = Some((std::time::Instant::now(), found));
    }

    fn take(&mut self, mut u: Update) {
        // Volcano fills a Job's defaults in its admission webhook. Where none ran (a cluster
        // without one), the controllers apply the same defaults to what they read, so a Job
        // written without `minAvailable` or task names still runs as it would under Volcano.
        if let Update::Job(watcher::Event::Apply(j) | watcher::Event::InitApply(j)) = &mut u {
            default_job(j);
        }
        let changed = self.mirror.apply(u);
        self.observe(&changed);
    }

    fn observe(&mut self, changed: &[WatchEvent]) {
        // Before the first full listing the manager starts from `relist`, not from events.
        if !self.listed {
            return;
        }
        let view = ClusterView::new(self.mirror.indexed());
        for c in changed {
            match c {
                WatchEvent::Job(Some(old), Some(new)) => self.metrics.job_changed(old, new),
                WatchEvent::Pod(None, Some(pod)) => {
                    self.metrics.pod_created(pod, self.mirror.objects());
                }
                _ => {}
            }
            self.manager.observe(c, &view);
        }
    }

    /// Runs until `stop` fires.
    pub async fn run(
        mut self,
        leader: Leadership,
        ready: Readiness,
        mut stop: Stop,
    ) -> Result<(), RuntimeError> {
        let (tx, mut rx) = mpsc::channel(reflect::UPDATE_CHANNEL);
        let watchers = reflect::watch(&self.client, &CONTROLLER_KINDS, POD_VIEW, &tx);
        drop(tx);
        let mut in_flight = TurnsInFlight::new(
            self.client.clone(),
            self.events.clone(),
            self.metrics.clone(),
        );
        loop {
            while let Ok(u) = rx.try_recv() {
                self.take(u);
            }
            if !self.listed && self.mirror.synced(&CONTROLLER_KINDS) {
                self.manager
                    .relist(&ClusterView::new(self.mirror.indexed()));
                self.listed = true;
                ready.set_ready();
            }
            let leads = self.listed && leader.is_leader();
            if leads {
                self.reload_config().await;
                self.start_turns(&mut in_flight);
                self.record_queues();
            }
            // Work that is due but cannot start (every turn's place taken, or not leading)
            // waits for a turn to finish or the next look, not a timer that has passed.
            let wait = if leads && in_flight.len() < TURNS_IN_FLIGHT {
                self.manager
                    .next_due()
                    .map(|due| due.since(now()))
                    .unwrap_or(IDLE)
                    .min(IDLE)
            } else {
                IDLE
            };
            tokio::select! {
                u = rx.recv() => match u {
                    Some(u) => self.take(u),
                    None => break,
                },
                Some(done) = in_flight.next(), if !in_flight.is_empty() => {
                    self.finish_turn(done);
                }
                _ = tokio::time::sleep(wait) => {}
                _ = stop.changed() => break,
            }
            if *stop.borrow() {
                break;
            }
        }
        // Writes still in flight are dropped with `in_flight`, as a stopped process's are: the
        // lease is given up at once, and the next leader takes over from what the cluster
        // holds, without this one writing beside it.
        for w in watchers {
            w.abort();
        }
        Ok(())
    }

    /// Starts turns of due work while fewer than [`TURNS_IN_FLIGHT`] are in flight.
    fn start_turns(&mut self, in_flight: &mut TurnsInFlight) {
        while in_flight.len() < TURNS_IN_FLIGHT {
            let t = now();
            let work = {
                let view = ClusterView::new(self.mirror.indexed());
                self.manager.next(&view, t)
            };
            let Some(work) = work else { break };
            self.metrics.turns.inc();
            let uids: Vec<Option<String>> = work
                .changes
                .iter()
                .map(|c| match c {
                    Change::Event(e) => self.mirror.uid_of(&e.object),
                    _ => None,
                })
                .collect();
            in_flight.start(work.key, work.changes, uids);
        }
    }

    /// Takes a finished turn: what the API server returned goes into the mirror and to the
    /// controllers, and its key is handed out again as its outcome says.
    fn finish_turn(&mut self, (key, written, updates): TurnDone) {
        for u in updates {
            self.take(u);
        }
        match written {
            Written::All => self.manager.finish(&key, true, now()),
            Written::Failed => self.manager.finish(&key, false, now()),
            Written::Refused(r) => self.manager.refused(&key, &r, now()),
        }
    }

    /// Writes the per-queue PodGroup counts (at most once a period: counting every PodGroup is
    /// linear in their number) and the work queues' depths.
    fn record_queues(&mut self) {
        if self
            .queues_recorded
            .is_none_or(|t| t.elapsed() >= QUEUE_METRICS_PERIOD)
        {
            self.metrics.record_queues(self.mirror.objects());
            self.queues_recorded = Some(std::time::Instant::now());
        }
        let stats = self.manager.stats();
        for (name, n) in [
            ("job", stats.jobs),
            ("queue", stats.queues),
            ("podgroup", stats.pod_groups),
            ("command", stats.commands),
            ("cronjob", stats.cron_jobs),
        ] {
            self.metrics
                .queue_depth
                .get_or_create(&label("controller", name))
                .set(n as i64);
        }
    }
}
