//! A scheduling session: the snapshot, the configured tiers of plugins, and the operations
//! actions use to place tasks.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use thiserror::Error;
use volcano_api::k8s_openapi;

use super::plugin::{Plugin, PluginSlot};
use super::statement::Statement;
use crate::conf::{ActionKind, PluginOption, SchedulerConf};
use crate::model::{JobId, NodeId, Snapshot, TaskId, TaskStatus};

/// Why a session could not run.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SessionError {
    /// The snapshot and the configuration disagree in a way no action can work with.
    #[error("{0}")]
    Invalid(String),
}

/// Makes the plugin one entry of a tier configures, over the session's snapshot; `None`
/// leaves it out.
pub type PluginBuilder<'a> = dyn FnMut(&PluginOption, &Snapshot) -> Option<Box<dyn Plugin>> + 'a;

/// What a session needs besides the snapshot and configuration.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Session UID, written into PodGroup conditions as `transitionID`.
    pub uid: String,
    /// The time conditions carry as `lastTransitionTime` (the caller's clock: the scheduler
    /// reads none).
    pub now: Option<Time>,
    /// Volcano's `--percentage-nodes-to-find`: the share of nodes (1-100) a task's search
    /// stops at once that many fit; `None` for Volcano's adaptive default.
    pub percentage_nodes_to_find: Option<u8>,
}

/// One scheduling session.
pub struct Session {
    /// Session UID.
    pub uid: String,
    /// Time of the session.
    pub now: Option<Time>,
    /// See [`SessionOptions::percentage_nodes_to_find`].
    pub percentage_nodes_to_find: Option<u8>,
    /// The state actions work on.
    pub snap: Snapshot,
    /// The configuration in force.
    pub conf: SchedulerConf,
    pub(crate) tiers: Vec<Vec<PluginSlot>>,
    /// `(tier, slot)` of the enabled plugins with a node predicate, in tier order: the node
    /// scan asks only these.
    pub(crate) node_checks: Vec<(usize, usize)>,
    /// Tasks committed for binding, in order.
    pub(crate) binds: Vec<(TaskId, NodeId)>,
    /// Tasks committed for eviction, in order, with the reason naming who takes their place.
    pub(crate) evictions: Vec<(TaskId, String)>,
    /// Pipelined tasks nominated to the node their evictions freed.
    pub(crate) nominations: Vec<(TaskId, NodeId)>,
    /// The action running, for reporting.
    pub(crate) action: Option<ActionKind>,
    /// The action of every committed statement that evicted, in order (reporting only).
    pub(crate) eviction_transactions: Vec<String>,
}

impl Session {
    /// Opens a session over `snap` with the plugins `build` makes for each configured plugin,
    /// tier by tier (`None` leaves one out). The framework knows no plugin: callers open
    /// sessions through [`Session::open`], which the registry gives the plugins' code.
    pub fn with_plugins(
        mut snap: Snapshot,
        conf: &SchedulerConf,
        opts: SessionOptions,
        build: &mut PluginBuilder<'_>,
    ) -> Session {
        snap.build_node_table();
        snap.index_sub_groups();
        let mut tiers: Vec<Vec<PluginSlot>> = Vec::with_capacity(conf.tiers.len());
        for tier in &conf.tiers {
            let mut slots = Vec::with_capacity(tier.plugins.len());
            for opt in &tier.plugins {
                if let Some(plugin) = build(opt, &snap) {
                    slots.push(PluginSlot {
                        flags: opt.flags,
                        plugin,
                    });
                }
            }
            tiers.push(slots);
        }
        let node_checks = tiers
            .iter()
            .enumerate()
            .flat_map(|(ti, tier)| {
                tier.iter()
                    .enumerate()
                    .filter(|(_, s)| s.flags.predicate && s.plugin.checks_nodes())
                    .map(move |(si, _)| (ti, si))
            })
            .collect();
        Session {
            uid: opts.uid,
            now: opts.now,
            percentage_nodes_to_find: opts.percentage_nodes_to_find,
            snap,
            conf: conf.clone(),
            tiers,
            node_checks,
            binds: Vec::new(),
            evictions: Vec::new(),
            nominations: Vec::new(),
            action: None,
            eviction_transactions: Vec::new(),
        }
    }

    /// Tells every plugin that `t` was placed.
    pub(crate) fn fire_allocate(&mut self, t: TaskId) {
        for slot in self.tiers.iter_mut().flatten() {
            slot.plugin.on_allocate(&self.snap, t);
        }
    }

    /// Tells every plugin that `t`'s placement is gone.
    pub(crate) fn fire_deallocate(&mut self, t: TaskId) {
        for slot in self.tiers.iter_mut().flatten() {
            slot.plugin.on_deallocate(&self.snap, t);
        }
    }

    /// Chooses the GPU devices `t` takes on `n`, asking the plugins first.
    fn choose_devices(&mut self, t: TaskId, n: NodeId) {
        if self.snap.task(t).gpu.is_none() || self.snap.node(n).gpus.is_none() {
            return;
        }
        let chosen = self
            .tiers
            .iter()
            .flatten()
            .find_map(|slot| slot.plugin.gpu_devices(&self.snap, t, n))
            .unwrap_or_default();
        self.snap.task_mut(t).gpu_devices = chosen;
    }

    /// Allocates `t` on `n` inside a statement.
    pub fn stmt_allocate(&mut self, st: &mut Statement, t: TaskId, n: NodeId) {
        self.choose_devices(t, n);
        self.snap.place(t, n, TaskStatus::Allocated);
        self.snap.task_mut(t).last_tx_allocated = true;
        self.fire_allocate(t);
        st.push_allocate(t, n);
    }

    /// Pipelines `t` onto `n` inside a statement.
    pub fn stmt_pipeline(&mut self, st: &mut Statement, t: TaskId, n: NodeId) {
        self.stmt_pipeline_nominated(st, t, n, false);
    }

    /// Pipelines `t` onto `n`; with `eviction_occurred` the pod is nominated to `n` on commit,
    /// so the next session tries that node first.
    pub fn stmt_pipeline_nominated(
        &mut self,
        st: &mut Statement,
        t: TaskId,
        n: NodeId,
        eviction_occurred: bool,
    ) {
        self.choose_devices(t, n);
        self.snap.place(t, n, TaskStatus::Pipelined);
        self.snap.task_mut(t).last_tx_allocated = false;
        self.fire_allocate(t);
        st.push_pipeline(t, n, eviction_occurred);
    }

    /// Evicts `t` inside a statement; `reason` says who takes its place.
    pub fn stmt_evict(&mut self, st: &mut Statement, t: TaskId, reason: String) {
        let before = self.snap.task(t).status;
        self.snap.update_on_node(t, TaskStatus::Releasing);
        self.set_evicted_on_node(t, true);
        self.fire_deallocate(t);
        st.push_evict(t, before, reason);
    }

    /// Keeps the node's count of pods evicted in this session, which the pod-count predicate
    /// no longer counts (Volcano's predicates plugin drops an evicted pod from its node).
    fn set_evicted_on_node(&mut self, t: TaskId, evicted: bool) {
        if let Some(n) = self.snap.task(t).node {
            self.snap.set_evicted_in_session(n, evicted);
        }
    }

    /// Takes back the eviction of `t` from `st`, restoring the task and every plugin's
    /// accounting; the reason it carried is returned so the eviction can be redone.
    pub fn stmt_unevict(&mut self, st: &mut Statement, t: TaskId) -> Option<String> {
        let (before, reason) = st.remove_evict(t)?;
        self.unevict(t, before);
        Some(reason)
    }

    fn unevict(&mut self, t: TaskId, before: TaskStatus) {
        self.snap.update_on_node(t, before);
        self.set_evicted_on_node(t, false);
        self.fire_allocate(t);
    }

    /// Makes a statement's operations final: allocations are sent for binding, evictions are
    /// executed; pipelined tasks stay reserved in the session.
    pub fn commit(&mut self, st: Statement) {
        let evictions_before = self.evictions.len();
        for op in st.into_ops() {
            match op {
                super::statement::Op::Allocate { task, node } => self.dispatch(task, node),
                super::statement::Op::Evict { task, reason, .. } => {
                    self.evictions.push((task, reason));
                }
                super::statement::Op::Pipeline {
                    task,
                    node,
                    nominate,
                } => {
                    if nominate {
                        self.nominations.push((task, node));
                    }
                }
            }
        }
        if self.evictions.len() > evictions_before {
            let action = self.action.map_or("", ActionKind::name);
            self.eviction_transactions.push(action.to_string());
        }
    }

    /// Undoes a statement's operations in reverse order, restoring every plugin's accounting.
    pub fn discard(&mut self, st: Statement) {
        for op in st.into_ops().into_iter().rev() {
            match op {
                super::statement::Op::Allocate { task, .. }
                | super::statement::Op::Pipeline { task, .. } => {
                    self.snap.unplace(task, TaskStatus::Pending);
                    self.fire_deallocate(task);
                }
                super::statement::Op::Evict { task, before, .. } => {
                    self.unevict(task, before);
                }
            }
        }
    }

    /// Allocates `t` on `n` directly (backfill) and dispatches the job's allocated tasks once
    /// the job is ready.
    pub fn allocate(&mut self, t: TaskId, n: NodeId) {
        self.choose_devices(t, n);
        self.snap.place(t, n, TaskStatus::Allocated);
        self.snap.task_mut(t).last_tx_allocated = true;
        self.fire_allocate(t);
        let Some(job) = self.snap.task(t).job else {
            return;
        };
        if self.job_ready(job) {
            let allocated: Vec<(TaskId, NodeId)> = self
                .snap
                .job(job)
                .tasks
                .iter()
                .filter(|&&id| self.snap.task(id).status == TaskStatus::Allocated)
                .filter_map(|&id| self.snap.task(id).node.map(|n| (id, n)))
                .collect();
            for (id, node) in allocated {
                self.dispatch(id, node);
            }
        }
    }

    fn dispatch(&mut self, t: TaskId, n: NodeId) {
        self.snap.set_status(t, TaskStatus::Binding);
        self.binds.push((t, n));
    }

    /// Jobs in snapshot order.
    pub fn jobs(&self) -> Vec<JobId> {
        self.snap.job_ids().collect()
    }
}
