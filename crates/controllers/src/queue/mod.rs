//! The queue controller: moves `status.state` through Open, Closing and Closed as Commands
//! ask, and writes nothing else. PodGroup counts per queue are computed on read
//! ([`pod_group_counts`]) for metrics and tools, never stored in the Queue.

use std::collections::{BTreeMap, VecDeque};

use volcano_api::bus::BusAction;
use volcano_api::event::{Event, EventType};
use volcano_api::keys;
use volcano_api::scheduling::{PodGroup, Queue, phase as pg_phase, queue_state};
use volcano_api::{ObjectKind, ObjectRef};

use crate::change::Change;
use crate::time::Instant;
use crate::view::{ClusterView, pod_group_queue};
use crate::workqueue::{Retry, RetryPolicy, WorkQueue};

pub mod state;

/// Number of a queue's PodGroups in each phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PhaseCounts {
    /// Pending (not admitted).
    pub pending: u32,
    /// Inqueue (admitted, not yet running).
    pub inqueue: u32,
    /// Running.
    pub running: u32,
    /// Unknown.
    pub unknown: u32,
    /// Completed.
    pub completed: u32,
}

/// PodGroups per queue and phase, from the PodGroups themselves.
pub fn pod_group_counts(view: &ClusterView<'_>) -> BTreeMap<String, PhaseCounts> {
    let mut out: BTreeMap<String, PhaseCounts> = view
        .queues()
        .iter()
        .map(|q| {
            (
                q.metadata.name.clone().unwrap_or_default(),
                PhaseCounts::default(),
            )
        })
        .collect();
    for pg in &view.objects().pod_groups {
        let c = out.entry(pod_group_queue(pg).to_string()).or_default();
        match pg.status.as_ref().map_or("", |s| s.phase.as_str()) {
            pg_phase::INQUEUE => c.inqueue += 1,
            pg_phase::RUNNING => c.running += 1,
            pg_phase::UNKNOWN => c.unknown += 1,
            pg_phase::COMPLETED => c.completed += 1,
            _ => c.pending += 1,
        }
    }
    out
}

/// The queue controller.
pub struct QueueController {
    queue: WorkQueue<String>,
    actions: BTreeMap<String, VecDeque<BusAction>>,
    in_flight: BTreeMap<String, BusAction>,
}

/// One turn of the queue controller: the changes for one queue.
#[derive(Debug)]
pub struct QueueWork {
    /// The queue.
    pub name: String,
    /// What to change.
    pub changes: Vec<Change>,
}

fn state_of(q: &Queue) -> &str {
    q.status.as_ref().map_or("", |s| s.state.as_str())
}

fn closed_by_parent(q: &Queue) -> bool {
    q.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::CLOSED_BY_PARENT))
        .is_some_and(|v| v == "true")
}

fn parent_of(q: &Queue) -> &str {
    &q.spec.parent
}

impl QueueController {
    /// A controller with nothing queued.
    pub fn new(retry: RetryPolicy) -> Self {
        QueueController {
            queue: WorkQueue::new(retry),
            actions: BTreeMap::new(),
            in_flight: BTreeMap::new(),
        }
    }

    /// Entries in the work queue (one per queue at most).
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// The longest the work queue has been.
    pub fn peak_queue_len(&self) -> usize {
        self.queue.peak_len()
    }

    /// When the next retry is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        self.queue.next_ready_at()
    }

    /// Queues a sync of `name`.
    pub fn sync(&mut self, name: &str) {
        self.queue.add(name.to_string());
    }

    /// Queues an action (open or close) for `name`; the same action waiting already is not
    /// repeated.
    pub fn act(&mut self, name: &str, action: BusAction) {
        let list = self.actions.entry(name.to_string()).or_default();
        if list.back() != Some(&action) {
            list.push_back(action);
        }
        self.queue.add(name.to_string());
    }

    /// A queue was added or changed: new queues and new parents need a sync.
    pub fn on_queue(&mut self, old: Option<&Queue>, new: Option<&Queue>) {
        match (old, new) {
            (None, Some(q)) => self.sync(q.metadata.name.as_deref().unwrap_or_default()),
            (Some(o), Some(n)) if o.spec.parent != n.spec.parent => {
                self.sync(n.metadata.name.as_deref().unwrap_or_default());
            }
            (Some(o), None) => {
                self.actions
                    .remove(o.metadata.name.as_deref().unwrap_or_default());
            }
            _ => {}
        }
    }

    /// A PodGroup came, went or changed phase: its queue may finish closing.
    pub fn on_pod_group(&mut self, old: Option<&PodGroup>, new: Option<&PodGroup>) {
        let phase = |pg: Option<&PodGroup>| {
            pg.and_then(|p| p.status.as_ref())
                .map(|s| s.phase.clone())
                .unwrap_or_default()
        };
        let moved = old.is_none() || new.is_none() || phase(old) != phase(new);
        if let Some(pg) = new.or(old).filter(|_| moved) {
            self.sync(pod_group_queue(pg));
        }
    }

    /// Takes the next queue that is due and reconciles it.
    pub fn next(&mut self, view: &ClusterView<'_>, now: Instant) -> Option<QueueWork> {
        loop {
            let name = self.queue.pop(now)?;
            let action = self
                .actions
                .get_mut(&name)
                .and_then(VecDeque::pop_front)
                .unwrap_or(BusAction::SyncQueue);
            let Some(q) = view.queue(&name) else {
                self.actions.remove(&name);
                self.queue.forget(&name);
                self.queue.done(&name);
                continue;
            };
            self.in_flight.insert(name.clone(), action);
            return Some(QueueWork {
                changes: self.reconcile(q, action, view),
                name,
            });
        }
    }

    fn reconcile(&mut self, q: &Queue, action: BusAction, view: &ClusterView<'_>) -> Vec<Change> {
        let name = q.metadata.name.clone().unwrap_or_default();
        let mut changes = Vec::new();
        if parent_of(q).is_empty() && name != keys::ROOT_QUEUE {
            changes.push(Change::PatchQueueParent {
                name: name.clone(),
                parent: keys::ROOT_QUEUE.to_string(),
            });
        }
        let refuse = |message: String| {
            Change::Event(Event {
                object: ObjectRef::of(ObjectKind::Queue, &q.metadata),
                type_: EventType::Warning,
                reason: "CommandRefused".to_string(),
                message,
            })
        };
        if action == BusAction::CloseQueue && name == keys::ROOT_QUEUE {
            changes.push(refuse("the root queue cannot be closed".to_string()));
            return changes;
        }
        if action == BusAction::OpenQueue
            && let Some(parent) = view.queue(parent_of(q))
            && matches!(state_of(parent), queue_state::CLOSED | queue_state::CLOSING)
        {
            changes.push(refuse(format!(
                "queue {name} cannot be opened while its parent {} is {}",
                parent_of(q),
                state_of(parent)
            )));
            return changes;
        }
        let has_pod_groups = !view.pod_groups_in_queue(&name).is_empty();
        let current = state_of(q);
        let next = state::next_state(current, action, has_pod_groups);
        if next != current {
            changes.push(Change::PatchQueueState {
                name: name.clone(),
                state: next.to_string(),
            });
        }
        if action == BusAction::OpenQueue && closed_by_parent(q) {
            changes.push(Change::PatchQueueAnnotations {
                name: name.clone(),
                annotations: BTreeMap::from([(keys::CLOSED_BY_PARENT.to_string(), None)]),
            });
        }
        self.propagate(&name, next, view, &mut changes);
        changes
    }

    /// A closing or closed queue closes its open children (marking them closed by it); an
    /// opened queue re-opens the children it closed.
    fn propagate(
        &mut self,
        name: &str,
        state: &str,
        view: &ClusterView<'_>,
        changes: &mut Vec<Change>,
    ) {
        let closing = matches!(state, queue_state::CLOSED | queue_state::CLOSING);
        for child in view.queues().iter().filter(|c| parent_of(c) == name) {
            let child_name = child.metadata.name.as_deref().unwrap_or_default();
            let child_open = matches!(state_of(child), "" | queue_state::OPEN);
            if closing && child_open {
                changes.push(Change::PatchQueueAnnotations {
                    name: child_name.to_string(),
                    annotations: BTreeMap::from([(
                        keys::CLOSED_BY_PARENT.to_string(),
                        Some("true".to_string()),
                    )]),
                });
                self.act(child_name, BusAction::CloseQueue);
            } else if state == queue_state::OPEN && closed_by_parent(child) {
                self.act(child_name, BusAction::OpenQueue);
            }
        }
    }

    /// Reports how a turn's changes went. A failed turn is retried with backoff, its action
    /// first; after the retry budget the queue's waiting actions are dropped with a warning.
    pub fn finish(&mut self, name: &str, ok: bool, now: Instant) {
        let key = name.to_string();
        let action = self.in_flight.remove(name);
        if ok {
            self.queue.forget(&key);
            self.queue.done(&key);
            if self.actions.get(name).is_some_and(|a| !a.is_empty()) {
                self.queue.add(key);
            }
            return;
        }
        if let Some(a) = action.filter(|a| *a != BusAction::SyncQueue) {
            // The command's action is not lost with the failed write: it goes first next time.
            self.actions.entry(key.clone()).or_default().push_front(a);
        }
        // The retry is already scheduled; adding the key now would skip its backoff.
        if let Retry::GaveUp { attempts } = self.queue.retry(key.clone(), now) {
            self.actions.remove(name);
            tracing::warn!(queue = name, attempts, "gave up reconciling the queue");
        }
        self.queue.done(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volcano_api::Objects;
    use volcano_api::scheduling::QueueSpec;

    #[test]
    fn a_failed_close_backs_off_and_is_given_up() {
        let mut objects = Objects::default();
        objects.queues.push(Queue::new("q", QueueSpec::default()));
        let store = volcano_api::ObjectStore::new(objects);
        let view = ClusterView::new(&store);
        let mut qc = QueueController::new(RetryPolicy::default());
        qc.act("q", BusAction::CloseQueue);
        let now = Instant::default();
        let w = qc.next(&view, now).expect("the close is due");
        assert!(
            w.changes
                .iter()
                .any(|c| matches!(c, Change::PatchQueueState { state, .. } if state == "Closed"))
        );
        qc.finish("q", false, now);
        assert!(
            qc.next(&view, now).is_none(),
            "the retry waits for its backoff"
        );
        let mut at = now;
        let mut turns = 1;
        while let Some(at_next) = qc.next_due() {
            at = at_next.max(at);
            let Some(_) = qc.next(&view, at) else { break };
            qc.finish("q", false, at);
            turns += 1;
            assert!(turns < 100, "gives up after its retry budget");
        }
        assert_eq!(turns, 16, "the first try and 15 retries");
        assert_eq!(qc.queue_len(), 0);
    }
}
