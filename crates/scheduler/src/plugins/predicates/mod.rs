//! `predicates`: the Kubernetes filters Volcano wraps, in kube-scheduler's order: pod count,
//! cordon, node selector and required node affinity, taints and tolerations, host ports,
//! volumes, pod topology spread, inter-pod affinity.
//!
//! Resource fit is not here: allocate checks requests against node idle itself, as in Volcano.
//! Each filter that depends on where other pods are keeps its own per-session index, updated by
//! every placement and eviction the session makes (including those a statement later undoes),
//! so pods placed earlier in the same session count exactly like running ones.

pub(super) mod inter_pod_affinity;
mod node;
mod node_ports;
pub(super) mod topology_spread;
mod volumes;

pub use node::{node_affinity_matches, term_matches, tolerates_all};

use std::cell::RefCell;

use crate::conf::Arguments;
use crate::fit::FitReason;
use crate::framework::Plugin;
use crate::model::{NodeId, NodeSet, Snapshot, TaskId};

/// One of kube-scheduler's filters as the predicates plugin runs it, with the session state it
/// keeps.
#[allow(unused_variables)]
trait Filter: Send {
    /// Checks on the task before any node (kube-scheduler's PreFilter): an error keeps the task
    /// off every node.
    fn pre_filter(&self, s: &Snapshot, t: TaskId) -> Result<(), FitReason> {
        Ok(())
    }
    /// Whether the filter may fail `t` on some node now; `false` lets the node scan skip it
    /// for `t`. Asked again after every placement or eviction of the session.
    fn concerns(&self, s: &Snapshot, t: TaskId) -> bool {
        true
    }
    /// Whether `t` may run on `n`. Must cost next to nothing for a task the filter does not
    /// concern: it runs for every task on every node.
    fn filter(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Result<(), FitReason>;
    /// Takes out of `nodes` nodes where [`Filter::filter`] surely fails for `t`, found
    /// faster than node by node; asked only for a task the filter concerns.
    fn narrow(&self, s: &Snapshot, t: TaskId, nodes: &mut NodeSet) {}
    /// `t` was placed on its node in the session.
    fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {}
    /// `t`'s placement was undone, or `t` is being evicted.
    fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {}
    /// The session is closing: write what the session's decisions need into the snapshot.
    fn on_session_close(&mut self, s: &mut Snapshot) {}
}

/// The predicates plugin.
pub struct Predicates {
    node_affinity: bool,
    taint_toleration: bool,
    /// The filters that depend on more than the node itself, in kube-scheduler's order.
    filters: Vec<Box<dyn Filter>>,
    /// Placements and evictions seen in the session, so [`Concerned`] knows when it is stale.
    generation: u64,
    /// The filters that concern the task last asked about: a scan asks about one task on
    /// many nodes, and most tasks concern no filter, so each node costs one comparison.
    concerned: RefCell<Option<Concerned>>,
}

/// Which filters concern one task, as of one generation.
struct Concerned {
    task: TaskId,
    generation: u64,
    filters: Vec<usize>,
}

impl Predicates {
    /// Reads the `predicate.*Enable` arguments (each filter on unless turned off, as in
    /// Volcano) and builds the enabled filters' indexes over the session's snapshot.
    pub fn new(args: &Arguments, s: &Snapshot) -> Self {
        let mut filters: Vec<Box<dyn Filter>> = Vec::new();
        if args.bool_or("predicate.NodePortsEnable", true) {
            filters.push(Box::new(node_ports::NodePorts::new(s)));
        }
        let volumes = volumes::Enabled {
            limits: args.bool_or("predicate.NodeVolumeLimitsEnable", true),
            binding: args.bool_or("predicate.VolumeBindingEnable", true),
            zone: args.bool_or("predicate.VolumeZoneEnable", true),
        };
        if volumes.any() {
            filters.push(Box::new(volumes::Volumes::new(volumes, s)));
        }
        if args.bool_or("predicate.PodTopologySpreadEnable", true) {
            filters.push(Box::new(topology_spread::TopologySpread::new(args, s)));
        }
        if args.bool_or("predicate.PodAffinityEnable", true) {
            filters.push(Box::new(inter_pod_affinity::InterPodAffinity::new(s)));
        }
        Predicates {
            node_affinity: args.bool_or("predicate.NodeAffinityEnable", true),
            taint_toleration: args.bool_or("predicate.TaintTolerationEnable", true),
            filters,
            generation: 0,
            concerned: RefCell::new(None),
        }
    }
}

impl Predicates {
    /// Runs `f` over the indexes of the filters concerning `t` now.
    fn with_concerned<R>(&self, s: &Snapshot, t: TaskId, f: impl FnOnce(&[usize]) -> R) -> R {
        let mut concerned = self.concerned.borrow_mut();
        let fresh = concerned
            .as_ref()
            .is_some_and(|c| c.task == t && c.generation == self.generation);
        if !fresh {
            *concerned = Some(Concerned {
                task: t,
                generation: self.generation,
                filters: (0..self.filters.len())
                    .filter(|&i| self.filters[i].concerns(s, t))
                    .collect(),
            });
        }
        f(concerned.as_ref().map_or(&[], |c| &c.filters))
    }
}

impl Plugin for Predicates {
    fn name(&self) -> &'static str {
        "predicates"
    }

    fn checks_nodes(&self) -> bool {
        true
    }

    fn pre_predicate(&self, s: &Snapshot, t: TaskId) -> Option<Result<(), FitReason>> {
        Some(self.filters.iter().try_for_each(|f| f.pre_filter(s, t)))
    }

    fn predicate(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Option<Result<(), FitReason>> {
        if s.node_pod_room(n) <= 0 {
            return Some(Err(FitReason::resolvable("node(s) pod number exceeded")));
        }
        let pod = &s.task(t).pod;
        // No cordon and no taint to tolerate: only the pod's own node constraints can fail
        // here, and a pod without any passes without reading the node.
        if !s.node_plain(n) || (self.node_affinity && node::has_node_constraints(pod)) {
            let checked = node::check_node(
                pod,
                &s.node(n).node,
                self.node_affinity,
                self.taint_toleration,
            );
            if checked.is_err() {
                return Some(checked);
            }
        }
        Some(self.with_concerned(s, t, |filters| {
            filters
                .iter()
                .try_for_each(|&i| self.filters[i].filter(s, t, n))
        }))
    }

    fn narrow_nodes(&self, s: &Snapshot, t: TaskId, nodes: &mut NodeSet) {
        self.with_concerned(s, t, |filters| {
            for &i in filters {
                self.filters[i].narrow(s, t, nodes);
            }
        });
    }

    fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        self.generation += 1;
        for f in &mut self.filters {
            f.on_allocate(s, t);
        }
    }

    fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        self.generation += 1;
        for f in &mut self.filters {
            f.on_deallocate(s, t);
        }
    }

    fn on_session_close(&mut self, s: &mut Snapshot, _session_uid: &str) {
        for f in &mut self.filters {
            f.on_session_close(s);
        }
    }
}
