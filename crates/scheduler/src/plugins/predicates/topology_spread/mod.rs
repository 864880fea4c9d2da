//! PodTopologySpread's filter: `DoNotSchedule` constraints (and the cluster's default
//! constraints for pods without any), as kube-scheduler checks them.
//!
//! For each constraint, a node passes when `matching pods in its domain + (1 if the pod
//! matches the selector) − the smallest count over the constraint's domains ≤ maxSkew`. The
//! smallest count is 0 while fewer than `minDomains` domains exist. Only pods in the pod's own
//! namespace count, terminating ones not; only nodes that carry every topology key of the
//! pod's constraints form domains, and with `nodeAffinityPolicy: Honor` (the default) only those
//! passing the pod's node selector and required node affinity, with `nodeTaintsPolicy: Honor`
//! only those whose `NoSchedule`/`NoExecute` taints the pod tolerates. A node without the
//! topology key fails outright ("... (missing required label)", which preemption cannot
//! resolve); a skew too large fails in a way preemption may resolve.
//!
//! Arguments (of the `predicates` plugin):
//! - `predicate.PodTopologySpreadEnable` (default true);
//! - `podtopologyspread.defaultingType`: `System` (default) or `List`;
//! - `podtopologyspread.defaultConstraints`: the constraints `List` applies to pods that
//!   declare none (see [`constraints::Defaults::from_args`] for how their pods are selected).
//!
//! Pods placed earlier in the session count exactly like running ones: the counts follow
//! every placement and eviction (see [`counts`]).

pub(crate) mod constraints;
pub(crate) mod counts;
#[cfg(test)]
mod tests;
// The scorer's tests build their clusters with the same helpers.
#[cfg(test)]
pub(crate) use tests::{ZONE, labelled, node_id, snapshot, spread, task, zoned};

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use volcano_api::k8s_openapi;

use super::Filter;
use super::node::{has_node_constraints, node_affinity_matches, tolerates_all};
use crate::conf::Arguments;
use crate::fit::FitReason;
use crate::model::{NodeId, NodeSet, Snapshot, TaskId};
use constraints::{Constraint, DO_NOT_SCHEDULE, Defaults, Selector, constraints_of};
use counts::{EligibleId, SpreadCounts, TallyId, TopologyId};

/// kube-scheduler's reason for a node where the skew would grow too large.
pub(crate) const ERR_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
/// kube-scheduler's reason for a node without a constraint's topology key.
pub(crate) const ERR_MISSING_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// The nodes whose pods count for constraint `c` of `pod`, whose constraints name the
/// topology keys `keys`: those carrying every key, then filtered by the constraint's
/// inclusion policies.
pub(crate) fn eligible_nodes(
    counts: &mut SpreadCounts,
    s: &Snapshot,
    pod: &Pod,
    keys: &[&str],
    c: &Constraint,
) -> EligibleId {
    let affinity = c.honor_node_affinity && has_node_constraints(pod);
    let spec = pod.spec.as_ref();
    let tolerations = spec.and_then(|s| s.tolerations.as_deref()).unwrap_or(&[]);
    let mut key = format!("{keys:?}");
    if affinity {
        let selector = spec.and_then(|s| s.node_selector.as_ref());
        let required = spec
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            });
        key.push_str(&serde_json::to_string(&(selector, required)).unwrap_or_default());
    }
    key.push('|');
    if c.honor_taints {
        key.push_str(&serde_json::to_string(tolerations).unwrap_or_default());
    }
    counts.eligible(s, key, |n| {
        let node = &s.node(n).node;
        let labels = node.metadata.labels.as_ref();
        keys.iter()
            .all(|k| labels.is_some_and(|l| l.contains_key(*k)))
            && (!affinity || node_affinity_matches(pod, node))
            && (!c.honor_taints || {
                let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref());
                tolerates_all(
                    tolerations,
                    taints.unwrap_or(&[]),
                    &["NoSchedule", "NoExecute"],
                )
                .is_ok()
            })
    })
}

/// One constraint of a task, resolved to the index's ids.
#[derive(Debug, Clone, Copy)]
struct Check {
    topology: TopologyId,
    /// `None` when the selector counts no pod (absent or empty).
    tally: Option<TallyId>,
    max_skew: i64,
    self_match: i64,
    min_domains: i64,
}

/// A check with the smallest domain count of the current generation.
#[derive(Debug, Clone, Copy)]
struct Ready {
    check: Check,
    min: i64,
}

/// What the filter keeps between calls.
#[derive(Default)]
struct State {
    counts: SpreadCounts,
    /// Each checked task's constraints (they do not change within a session).
    checks: HashMap<TaskId, Arc<[Check]>>,
    /// The last task checked, with the generation its minimums were computed at.
    prepared: Option<(TaskId, u64, Vec<Ready>)>,
}

impl State {
    fn checks_of(&mut self, s: &Snapshot, t: TaskId, defaults: &Defaults) -> Arc<[Check]> {
        if let Some(c) = self.checks.get(&t) {
            return c.clone();
        }
        let task = s.task(t);
        let pod = &task.pod;
        let constraints = constraints_of(pod, DO_NOT_SCHEDULE, defaults);
        let keys: Vec<&str> = constraints
            .iter()
            .map(|c| c.topology_key.as_str())
            .collect();
        let checks: Arc<[Check]> = constraints
            .iter()
            .map(|c| {
                let topology = self.counts.topology(s, &c.topology_key);
                let tally = match &c.selector {
                    Selector::Match(sel) => {
                        let eligible = eligible_nodes(&mut self.counts, s, pod, &keys, c);
                        Some(
                            self.counts
                                .tally(s, &task.namespace, sel, topology, eligible),
                        )
                    }
                    Selector::Nothing | Selector::Everything => None,
                };
                Check {
                    topology,
                    tally,
                    max_skew: i64::from(c.max_skew),
                    self_match: i64::from(c.selector.matches(pod.metadata.labels.as_ref())),
                    min_domains: i64::from(c.min_domains),
                }
            })
            .collect();
        self.checks.insert(t, checks.clone());
        checks
    }

    fn prepare(&mut self, s: &Snapshot, t: TaskId, defaults: &Defaults) {
        if let Some((pt, generation, _)) = &self.prepared
            && *pt == t
            && *generation == self.counts.generation()
        {
            return;
        }
        let checks = self.checks_of(s, t, defaults);
        let ready = checks
            .iter()
            .map(|&check| {
                let min = match check.tally {
                    Some(id) => {
                        let (domains, min) = self.counts.min(id);
                        if i64::from(domains) < check.min_domains {
                            0
                        } else {
                            i64::from(min)
                        }
                    }
                    None => 0,
                };
                Ready { check, min }
            })
            .collect();
        self.prepared = Some((t, self.counts.generation(), ready));
    }
}

/// Matching pods counted by topology domain, for the constraints in play.
pub(super) struct TopologySpread {
    defaults: Defaults,
    state: RefCell<State>,
    /// The last task checked, when it has no constraint to check.
    unconstrained: Cell<Option<TaskId>>,
}

impl TopologySpread {
    /// Reads the plugin's arguments; the snapshot's pods are counted when a constraint first
    /// needs them.
    pub(super) fn new(args: &Arguments, _s: &Snapshot) -> Self {
        TopologySpread {
            defaults: Defaults::from_args(args),
            state: RefCell::new(State::default()),
            unconstrained: Cell::new(None),
        }
    }
}

impl Filter for TopologySpread {
    fn concerns(&self, s: &Snapshot, t: TaskId) -> bool {
        !self.defaults.is_empty() || constraints::declares_constraints(&s.task(t).pod)
    }

    fn filter(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Result<(), FitReason> {
        // The scan asks about one task on many nodes: answer a task without constraints
        // from one comparison.
        match self.unconstrained.get() {
            Some(u) if u == t => return Ok(()),
            _ if self.defaults.is_empty() && !constraints::declares_constraints(&s.task(t).pod) => {
                self.unconstrained.set(Some(t));
                return Ok(());
            }
            _ => {}
        }
        let mut state = self.state.borrow_mut();
        state.prepare(s, t, &self.defaults);
        let state = &*state;
        let Some((_, _, ready)) = &state.prepared else {
            return Ok(());
        };
        for r in ready {
            let Some(domain) = state.counts.domain_of(r.check.topology, n) else {
                return Err(FitReason::unresolvable(ERR_MISSING_LABEL));
            };
            let matching = r
                .check
                .tally
                .map_or(0, |id| i64::from(state.counts.count(id, domain)));
            if matching + r.check.self_match - r.min > r.check.max_skew {
                return Err(FitReason::resolvable(ERR_CONSTRAINTS_NOT_MATCH).depending_on_pods());
            }
        }
        Ok(())
    }

    fn narrow(&self, s: &Snapshot, t: TaskId, nodes: &mut NodeSet) {
        if self.defaults.is_empty() && !constraints::declares_constraints(&s.task(t).pod) {
            return;
        }
        let mut state = self.state.borrow_mut();
        state.prepare(s, t, &self.defaults);
        let state = &*state;
        let Some((_, _, ready)) = &state.prepared else {
            return;
        };
        for r in ready {
            let topology = r.check.topology;
            // A domain where one more pod would make the skew too large is closed whole.
            let closed: Vec<bool> = (0..state.counts.domains(topology) as u32)
                .map(|d| {
                    let matching = r
                        .check
                        .tally
                        .map_or(0, |id| i64::from(state.counts.count(id, d)));
                    matching + r.check.self_match - r.min > r.check.max_skew
                })
                .collect();
            nodes.retain(|n| {
                state
                    .counts
                    .domain_of(topology, n)
                    .is_some_and(|d| !closed.get(d as usize).copied().unwrap_or(false))
            });
        }
    }

    fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        self.state.get_mut().counts.on_allocate(s, t);
    }

    fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        self.state.get_mut().counts.on_deallocate(s, t);
    }
}
