//! The injector: one seeded random stream the cluster consults at each controller write,
//! each batch of watch events and each session's writes, so a run with faults repeats
//! exactly from its seed.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use volcano_controllers::time::Instant;
use volcano_scheduler::framework::{Decisions, Unwritten};

use super::plan::{FaultPlan, Rate};
use volcano_api::{NamespacedName, WatchEvent};

/// How many faults of each kind a run injected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultCounts {
    /// Controller crashes (each followed by a restart from a fresh list).
    pub controller_crashes: u64,
    /// Sessions whose writes were cut short by a scheduler crash.
    pub scheduler_crashes: u64,
    /// Controller writes refused with a conflict.
    pub conflicts: u64,
    /// Binds refused.
    pub bind_failures: u64,
    /// Scheduler status writes refused.
    pub status_failures: u64,
    /// Watch events delivered twice.
    pub duplicated_watch_events: u64,
    /// Batches of watch events delivered out of order.
    pub reordered_batches: u64,
    /// Nodes deleted.
    pub nodes_vanished: u64,
    /// Nodes shrunk below their pods' requests.
    pub nodes_shrunk: u64,
    /// Pods bound by another scheduler.
    pub foreign_pods: u64,
}

/// What becomes of one controller write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFate {
    /// The API server takes it.
    Apply,
    /// Refused with a conflict: the turn fails and is retried.
    Conflict,
    /// The controllers crash before sending it.
    Crash,
}

/// What became of one of the scheduler's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    /// The API server took it.
    Taken,
    /// Refused.
    Refused,
    /// Never sent: the scheduler crashed first.
    Lost,
}

impl WriteFate {
    /// A crash taken as applied: the controllers are not to crash again yet.
    pub fn without_crash(self) -> WriteFate {
        match self {
            WriteFate::Crash => WriteFate::Apply,
            other => other,
        }
    }
}

/// The seeded source of every fault of a run.
#[derive(Debug)]
pub struct Faults {
    plan: FaultPlan,
    rng: StdRng,
    now: Instant,
    /// What was injected so far.
    pub counts: FaultCounts,
}

impl Faults {
    /// An injector for `plan`.
    pub fn new(plan: FaultPlan) -> Self {
        Faults {
            rng: StdRng::seed_from_u64(plan.seed),
            plan,
            now: Instant::default(),
            counts: FaultCounts::default(),
        }
    }

    /// The plan.
    pub fn plan(&self) -> &FaultPlan {
        &self.plan
    }

    /// Tells the injector the time: faults stop at the end of the window.
    pub fn set_now(&mut self, now: Instant) {
        self.now = now;
    }

    /// Whether faults still happen now.
    pub fn active(&self) -> bool {
        self.now.0 < self.plan.window
    }

    fn roll(&mut self, rate: Rate) -> bool {
        self.active() && rate.0 > 0 && self.rng.random_range(0..Rate::ONE) < rate.0
    }

    /// A uniform draw in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n.max(1))
    }

    /// A uniform instant within the window.
    pub fn instant_in_window(&mut self) -> Instant {
        let ms = u64::try_from(self.plan.window.as_millis()).unwrap_or(u64::MAX);
        Instant(Duration::from_millis(self.rng.random_range(0..ms.max(1))))
    }

    /// What becomes of a controller's write.
    pub fn controller_write(&mut self) -> WriteFate {
        if self.roll(self.plan.controller_crash) {
            self.counts.controller_crashes += 1;
            WriteFate::Crash
        } else if self.roll(self.plan.conflict) {
            self.counts.conflicts += 1;
            WriteFate::Conflict
        } else {
            WriteFate::Apply
        }
    }

    /// A batch of watch events as the controllers receive it: some delivered twice, and the
    /// batch interleaved at random, each object's own events staying in order.
    pub fn deliver(&mut self, watched: Vec<WatchEvent>) -> Vec<WatchEvent> {
        if !self.active() || watched.is_empty() {
            return watched;
        }
        let mut streams: BTreeMap<String, VecDeque<WatchEvent>> = BTreeMap::new();
        for w in watched {
            let twice = self.roll(self.plan.duplicate_watch);
            let stream = streams.entry(object_of(&w)).or_default();
            if twice {
                self.counts.duplicated_watch_events += 1;
                stream.push_back(w.clone());
            }
            stream.push_back(w);
        }
        let mut streams: Vec<VecDeque<WatchEvent>> = streams.into_values().collect();
        let reorder = self.plan.reorder_watch && streams.len() > 1;
        if reorder {
            self.counts.reordered_batches += 1;
        }
        let mut out = Vec::new();
        while !streams.is_empty() {
            let i = if reorder {
                self.below(streams.len())
            } else {
                0
            };
            if let Some(w) = streams[i].pop_front() {
                out.push(w);
            }
            if streams[i].is_empty() {
                streams.remove(i);
            }
        }
        out
    }

    /// The part of a session's decisions that reaches the API server, written in the order
    /// the scheduler writes them (binds, evictions, PodGroup status, queue `allocated`, events):
    /// binds and status writes fail at their rates, and a crash stops the writes at a random
    /// point. Events are kept only for what was written, as the scheduler records them.
    pub fn cut(&mut self, d: &Decisions) -> Decisions {
        let changed_groups = d.pod_groups.iter().filter(|u| u.changed).count();
        let changed_queues = d.queues.iter().filter(|q| q.changed).count();
        let writes = d.binds.len() + d.evictions.len() + changed_groups + changed_queues;
        let crash_at = if writes > 0 && self.roll(self.plan.scheduler_crash) {
            self.counts.scheduler_crashes += 1;
            Some(self.below(writes + 1))
        } else {
            None
        };
        let mut slot = 0usize;
        let mut write = |faults: &mut Faults, rate: Rate| {
            let lost = crash_at.is_some_and(|c| slot >= c);
            slot += 1;
            if lost {
                Write::Lost
            } else if faults.roll(rate) {
                Write::Refused
            } else {
                Write::Taken
            }
        };

        let mut out = Decisions {
            eviction_reasons: d.eviction_reasons.clone(),
            pipelined: d.pipelined.clone(),
            unschedulable: d.unschedulable.clone(),
            out_of_sync_nodes: d.out_of_sync_nodes.clone(),
            ..Default::default()
        };
        for b in &d.binds {
            match write(self, self.plan.bind_failure) {
                Write::Taken => out.binds.push(b.clone()),
                Write::Refused => self.counts.bind_failures += 1,
                Write::Lost => {}
            }
        }
        let bound: BTreeSet<&NamespacedName> = out.binds.iter().map(|(p, _)| p).collect();
        out.gpu_devices = d
            .gpu_devices
            .iter()
            .filter(|(p, _)| bound.contains(p))
            .cloned()
            .collect();
        let mut unwritten = Unwritten::default();
        for p in &d.evictions {
            match write(self, Rate(0)) {
                Write::Taken => out.evictions.push(p.clone()),
                Write::Refused | Write::Lost => {
                    unwritten.evictions.insert(p.clone());
                }
            }
        }
        if unwritten.evictions.is_empty() {
            out.nominated = d.nominated.clone();
        }
        for u in &d.pod_groups {
            let fate = if u.changed {
                write(self, self.plan.status_failure)
            } else {
                Write::Taken
            };
            match fate {
                Write::Taken => out.pod_groups.push(u.clone()),
                Write::Refused | Write::Lost => {
                    self.counts.status_failures += u64::from(fate == Write::Refused);
                    unwritten.pod_groups.insert(u.key.clone());
                }
            }
        }
        for q in &d.queues {
            let fate = if q.changed {
                write(self, self.plan.status_failure)
            } else {
                Write::Taken
            };
            match fate {
                Write::Taken => out.queues.push(q.clone()),
                Write::Refused => self.counts.status_failures += 1,
                Write::Lost => {}
            }
        }
        // Waiting pods' conditions, then events, go last: a crash anywhere before them loses
        // them all (neither takes a roll, so the fault sequence of a seed stays as it was).
        if crash_at.is_none() {
            out.pod_conditions = d.pod_conditions.clone();
            out.events = d.events_after_writes(&unwritten).cloned().collect();
        }
        out
    }
}

/// `Kind/ns/name` of what a watch event is about: one watch stream keeps its order.
fn object_of(w: &WatchEvent) -> String {
    fn meta_key(
        kind: &str,
        m: &volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) -> String {
        format!(
            "{kind}/{}/{}",
            m.namespace.as_deref().unwrap_or_default(),
            m.name.as_deref().unwrap_or_default()
        )
    }
    match w {
        WatchEvent::Job(o, n) => n
            .as_ref()
            .or(o.as_ref())
            .map(|j| meta_key("Job", &j.metadata)),
        WatchEvent::Pod(o, n) => n
            .as_ref()
            .or(o.as_ref())
            .map(|p| meta_key("Pod", &p.metadata)),
        WatchEvent::PodGroup(o, n) => n
            .as_ref()
            .or(o.as_ref())
            .map(|g| meta_key("PodGroup", &g.metadata)),
        WatchEvent::Queue(o, n) => n
            .as_ref()
            .or(o.as_ref())
            .map(|q| meta_key("Queue", &q.metadata)),
        WatchEvent::Command(o, n) => n
            .as_ref()
            .or(o.as_ref())
            .map(|c| meta_key("Command", &c.metadata)),
        WatchEvent::Node(o, n) => n
            .as_ref()
            .or(o.as_ref())
            .map(|c| meta_key("Node", &c.metadata)),
        WatchEvent::PriorityClass(o, n) => n
            .as_ref()
            .or(o.as_ref())
            .map(|c| meta_key("PriorityClass", &c.metadata)),
        WatchEvent::Namespace(..)
        | WatchEvent::PersistentVolume(..)
        | WatchEvent::PersistentVolumeClaim(..)
        | WatchEvent::StorageClass(..)
        | WatchEvent::CSINode(..)
        | WatchEvent::HyperNode(..)
        | WatchEvent::ReplicaSet(..)
        | WatchEvent::StatefulSet(..)
        | WatchEvent::Deployment(..)
        | WatchEvent::CronJob(..)
        | WatchEvent::JobFlow(..)
        | WatchEvent::JobTemplate(..) => w
            .object()
            .map(|r| format!("{}/{}/{}", r.kind, r.key.namespace, r.key.name)),
    }
    .unwrap_or_default()
}
