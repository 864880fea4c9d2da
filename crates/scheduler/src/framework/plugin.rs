//! The plugin interface. Every extension point returns `None` when the plugin does not
//! implement it, which is how the dispatchers tell "not registered" from "abstain".

use std::cmp::Ordering;

use crate::conf::PluginFlags;
use crate::fit::FitReason;
use crate::model::{DomainId, DomainTotals, JobId, NodeId, NodeSet, QueueId, Snapshot, TaskId};
use crate::resource::Resource;

/// A plugin's vote on a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vote {
    /// For.
    Permit,
    /// No opinion.
    Abstain,
    /// Against.
    Reject,
}

/// A vote with the reason behind a rejection, for the "why is my job pending" report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The vote.
    pub vote: Vote,
    /// Why, when rejecting.
    pub reason: Option<String>,
}

impl Verdict {
    /// A permit.
    pub fn permit() -> Self {
        Verdict {
            vote: Vote::Permit,
            reason: None,
        }
    }

    /// A rejection with its reason.
    pub fn reject(reason: impl Into<String>) -> Self {
        Verdict {
            vote: Vote::Reject,
            reason: Some(reason.into()),
        }
    }
}

/// A share-keeping plugin's view of one queue.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueShare {
    /// What the queue should get when the cluster is contended.
    pub deserved: Resource,
    /// The most the queue may hold now.
    pub real_capability: Resource,
    /// `allocated` + Σ request of pending tasks.
    pub request: Resource,
    /// Reserved by admitted jobs and not yet used.
    pub inqueue: Resource,
    /// max over deserved dimensions of allocated/deserved.
    pub share: f64,
}

/// Victims evicted together: one pod, or pods of one gang that may only go all at once.
pub type EvictionUnit = Vec<TaskId>;

/// A scheduling plugin. Queries take the snapshot read-only; event handlers keep the plugin's
/// own accounting in step with every allocation and deallocation, including those a statement
/// later undoes.
#[allow(unused_variables)]
pub trait Plugin: Send {
    /// The plugin's configuration name.
    fn name(&self) -> &'static str;

    /// Job order: `Less` means `l` goes first; `Equal` lets the next plugin decide.
    fn job_order(&self, s: &Snapshot, l: JobId, r: JobId) -> Option<Ordering> {
        None
    }
    /// Queue order.
    fn queue_order(&self, s: &Snapshot, l: QueueId, r: QueueId) -> Option<Ordering> {
        None
    }
    /// Task order within a job.
    fn task_order(&self, s: &Snapshot, l: TaskId, r: TaskId) -> Option<Ordering> {
        None
    }
    /// Checks on a task before any node is considered.
    fn pre_predicate(&self, s: &Snapshot, t: TaskId) -> Option<Result<(), FitReason>> {
        None
    }
    /// Whether `t` may run on `n`. A plugin implementing this must say so in
    /// [`Plugin::checks_nodes`], or the node scan never asks it.
    fn predicate(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Option<Result<(), FitReason>> {
        None
    }
    /// Takes out of `nodes` nodes where [`Plugin::predicate`] surely fails for `t`, when the
    /// plugin can find them faster than node by node (a closed topology domain, a used
    /// port). The node scan then skips them.
    fn narrow_nodes(&self, s: &Snapshot, t: TaskId, nodes: &mut NodeSet) {}
    /// Whether the plugin has a node predicate (the node scan asks only those that do).
    fn checks_nodes(&self) -> bool {
        false
    }
    /// Score of `n` for `t`; scores of all plugins are summed.
    fn node_order(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Option<f64> {
        None
    }
    /// Adds scores that need every candidate node at once (normalised ones) to `scores`,
    /// which is parallel to `nodes`.
    fn batch_node_order(&self, s: &Snapshot, t: TaskId, nodes: &[NodeId], scores: &mut [f64]) {}
    /// Whether the plugin scores nodes at all (lets allocate skip scoring when none does).
    fn scores_nodes(&self) -> bool {
        false
    }
    /// Score of network domain `d` (with its current `totals`) for job `j`'s gang, whose
    /// tasks ask `request` in all; scores of all plugins with `enabledHyperNodeOrder` are
    /// summed, and the gang goes to the best domain of the lowest tier where it fits.
    fn hyper_node_order(
        &self,
        s: &Snapshot,
        j: JobId,
        request: &Resource,
        d: DomainId,
        totals: &DomainTotals,
    ) -> Option<f64> {
        None
    }
    /// Whether the plugin narrows a gang with a hard network topology to the domains its tier
    /// allows (Volcano's hypernode gradient); switched off by `enabledHyperNodeGradient: false`.
    fn hyper_node_gradient(&self) -> bool {
        false
    }
    /// Whether the job has enough to be dispatched.
    fn job_ready(&self, s: &Snapshot, j: JobId) -> Option<bool> {
        None
    }
    /// Whether the job's partial placement should be kept (reserved) in this session.
    fn job_pipelined(&self, s: &Snapshot, j: JobId) -> Option<Vote> {
        None
    }
    /// Whether the job may be admitted (enqueue).
    fn job_enqueueable(&self, s: &Snapshot, j: JobId) -> Option<Verdict> {
        None
    }
    /// Called when a job is admitted.
    fn job_enqueued(&mut self, s: &Snapshot, j: JobId) {}
    /// Whether the job wants more resources (preempt/reclaim).
    fn job_starving(&self, s: &Snapshot, j: JobId) -> Option<bool> {
        None
    }
    /// Whether the job may be scheduled at all: `Some(Err((reason, message)))` when not.
    fn job_valid(&self, s: &Snapshot, j: JobId) -> Option<Result<(), (String, String)>> {
        None
    }
    /// Which of `candidates` (running tasks, in the order given) `preemptor` may preempt;
    /// `None` abstains. The order of the answer is kept.
    fn preemptable(
        &self,
        s: &Snapshot,
        preemptor: TaskId,
        candidates: &[TaskId],
    ) -> Option<Vec<TaskId>> {
        None
    }
    /// Which of `candidates` (running tasks of other queues) `reclaimer` may reclaim; `None`
    /// abstains.
    fn reclaimable(
        &self,
        s: &Snapshot,
        reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> Option<Vec<TaskId>> {
        None
    }
    /// Whether the plugin keeps queues' deserved shares (`proportion`, `capacity`): its
    /// `reclaimable` answer then bounds every reclaim, whichever tier decides.
    fn keeps_queue_shares(&self) -> bool {
        false
    }
    /// Whether `victim` must never be evicted, whatever the tiers chose. Asked of every
    /// plugin with the eviction's extension point on (`enablePreemptable` or
    /// `enableReclaimable`), not only of the tier that chose, so a rule such as
    /// `conformance`'s holds even when an earlier tier abstains and a later one decides.
    fn protects_victim(&self, s: &Snapshot, victim: TaskId) -> bool {
        false
    }
    /// The tiers' `victims` (in eviction order, protected ones already left out) as the
    /// eviction units this plugin's rule allows, in eviction order; victims in no unit are
    /// spared. `None` leaves one unit per victim. Asked whatever the tiers chose, as
    /// [`Plugin::protects_victim`] is; the first plugin in tier order that answers decides.
    fn victim_units(&self, s: &Snapshot, victims: &[TaskId]) -> Option<Vec<EvictionUnit>> {
        None
    }
    /// Whether queue `q` may reclaim resources for task `t`.
    fn preemptive(&self, s: &Snapshot, q: QueueId, t: TaskId) -> Option<bool> {
        None
    }
    /// Order of victims' queues for a preemptor in `preemptor_queue`: `Less` means victims
    /// of `l` are evicted first.
    fn victim_queue_order(
        &self,
        s: &Snapshot,
        l: QueueId,
        r: QueueId,
        preemptor_queue: QueueId,
    ) -> Option<Ordering> {
        None
    }
    /// The plugin's view of queue `q` for metrics (`proportion`, `capacity`); never consulted
    /// for a decision.
    fn queue_share(&self, s: &Snapshot, q: QueueId) -> Option<QueueShare> {
        None
    }
    /// The job's share for metrics (`drf`); never consulted for a decision.
    fn job_share(&self, s: &Snapshot, j: JobId) -> Option<f64> {
        None
    }
    /// Whether the queue already has all it deserves.
    fn overused(&self, s: &Snapshot, q: QueueId) -> Option<bool> {
        None
    }
    /// Whether the queue may take the task: `Some(Err(reason))` when not.
    fn allocatable(&self, s: &Snapshot, q: QueueId, t: TaskId) -> Option<Result<(), String>> {
        None
    }
    /// The task was placed (allocated or pipelined) in the session.
    fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {}
    /// The GPU devices of `n` that `t` should take (indices); the first plugin in tier order
    /// that answers decides, otherwise best fit does.
    fn gpu_devices(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Option<Vec<u8>> {
        None
    }
    /// The task's placement was undone, or the task is being evicted.
    fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {}
    /// Last word before decisions are collected (gang writes PodGroup conditions here).
    fn on_session_close(&mut self, s: &mut Snapshot, session_uid: &str) {}
}

/// A plugin as configured in a tier.
pub struct PluginSlot {
    /// Which extension points are on.
    pub flags: PluginFlags,
    /// The plugin.
    pub plugin: Box<dyn Plugin>,
}
