//! The HyperNode controller, as Volcano's `hyperNode-controller`: the `label` discovery source
//! makes the HyperNodes nodes' topology labels describe ([`label`], configured by [`config`]),
//! and every HyperNode's `status.nodeCount` is kept ([`sync`]).

pub mod config;
pub mod label;
pub mod sync;

#[cfg(test)]
mod tests;

use volcano_api::k8s_openapi::api::core::v1::Node;
use volcano_api::topology::HyperNode;

use crate::change::Change;
use crate::time::Instant;
use crate::view::ClusterView;
use crate::workqueue::{RetryPolicy, WorkQueue};

pub use config::{ConfigError, LabelDiscovery, NetworkTopologyConfig};

/// What a turn of the HyperNode controller does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HyperNodeKey {
    /// Make the discovered HyperNodes match the nodes' labels.
    Discovery,
    /// Write the node counts that changed.
    NodeCount,
}

/// One turn: the changes for one key.
#[derive(Debug)]
pub struct HyperNodeWork {
    /// What the turn does.
    pub key: HyperNodeKey,
    /// What to change.
    pub changes: Vec<Change>,
}

/// The HyperNode controller.
pub struct HyperNodeController {
    queue: WorkQueue<HyperNodeKey>,
    discovery: Option<LabelDiscovery>,
}

impl HyperNodeController {
    /// A controller with nothing queued; `discovery` is the label source, if configured.
    pub fn new(retry: RetryPolicy, discovery: Option<LabelDiscovery>) -> Self {
        HyperNodeController {
            queue: WorkQueue::new(retry),
            discovery,
        }
    }

    /// The label source in force.
    pub fn discovery(&self) -> Option<&LabelDiscovery> {
        self.discovery.as_ref()
    }

    /// A new configuration: discovery runs again with it. Turning the source off leaves the
    /// HyperNodes it made, as Volcano's stopped discoverer does.
    pub fn set_discovery(&mut self, discovery: Option<LabelDiscovery>) {
        if self.discovery != discovery {
            self.discovery = discovery;
            self.relist();
        }
    }

    /// Everything is looked at again (start, restart, new configuration).
    pub fn relist(&mut self) {
        if self.discovery.is_some() {
            self.queue.add(HyperNodeKey::Discovery);
        }
        self.queue.add(HyperNodeKey::NodeCount);
    }

    /// A node was added, changed or deleted. Only a change of labels matters (a heartbeat
    /// does not move a node between domains).
    pub fn on_node(&mut self, old: Option<&Node>, new: Option<&Node>) {
        let labels_of = |n: Option<&Node>| n.map(|n| n.metadata.labels.clone().unwrap_or_default());
        if old.is_some() && new.is_some() && labels_of(old) == labels_of(new) {
            return;
        }
        self.relist();
    }

    /// A HyperNode was added, changed or deleted: its count, and discovery (a discovered one
    /// deleted by hand is made again, as Volcano's discoverer does).
    pub fn on_hyper_node(&mut self, _old: Option<&HyperNode>, _new: Option<&HyperNode>) {
        self.relist();
    }

    /// Entries in the work queue.
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// When the next retry is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        self.queue.next_ready_at()
    }

    /// The next turn due at `now` that changes something.
    pub fn next(&mut self, view: &ClusterView<'_>, now: Instant) -> Option<HyperNodeWork> {
        while let Some(key) = self.queue.pop(now) {
            let objects = view.objects();
            let changes = match key {
                HyperNodeKey::Discovery => match &self.discovery {
                    Some(d) => {
                        let desired = label::discover(d, &objects.nodes, &objects.hyper_nodes);
                        sync::discovery_changes(&desired, &objects.hyper_nodes)
                    }
                    None => Vec::new(),
                },
                HyperNodeKey::NodeCount => {
                    sync::node_count_changes(&objects.hyper_nodes, &objects.nodes)
                }
            };
            if changes.is_empty() {
                self.finish(key, true, now);
                continue;
            }
            return Some(HyperNodeWork { key, changes });
        }
        None
    }

    /// Reports whether a turn's changes were made; a failed turn is retried with backoff.
    pub fn finish(&mut self, key: HyperNodeKey, ok: bool, now: Instant) {
        self.queue.done(&key);
        if ok {
            self.queue.forget(&key);
        } else {
            self.queue.retry(key, now);
        }
    }
}
