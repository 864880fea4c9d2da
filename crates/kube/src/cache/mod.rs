//! The objects the scheduler and the controllers read, kept current from watch events.
//!
//! The cache holds the objects as the sans-IO crates take them ([`Objects`]), with an index
//! per kind so a watch event costs a lookup, not a scan. Writes this process made are applied
//! here as soon as the API server accepts them ("assumed"), so the next session or turn sees
//! them before their watch event arrives; a watch event older than what the cache holds is
//! ignored, by resourceVersion.

use std::collections::HashMap;

use kube::Resource;
use kube::runtime::watcher;
use volcano_api::Objects;
use volcano_api::batch::Job;
use volcano_api::bus::Command;
use volcano_api::k8s_openapi::api::core::v1::{Node, Pod};
use volcano_api::k8s_openapi::api::scheduling::v1::PriorityClass;
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_controllers::manager::Watch;

/// `(namespace, name)`; the namespace is empty for cluster-scoped kinds.
pub type Key = (String, String);

/// A decision's `namespace/name` as a key (no namespace means `default`, as the scheduler's
/// cache reads a pod without one).
pub fn split_key(k: &str) -> Key {
    match k.split_once('/') {
        Some((ns, n)) => (ns.to_string(), n.to_string()),
        None => ("default".to_string(), k.to_string()),
    }
}

/// The key of an object.
pub fn key_of<K: Resource>(obj: &K) -> Key {
    let m = obj.meta();
    (
        m.namespace.clone().unwrap_or_default(),
        m.name.clone().unwrap_or_default(),
    )
}

/// A watch event of one kind, as the watchers deliver it to the loop that owns the cache.
// Pods dominate the size; boxing would add an allocation to every watch event, and updates
// are moved once, through a bounded channel.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Update {
    /// Pods.
    Pod(watcher::Event<Pod>),
    /// Nodes.
    Node(watcher::Event<Node>),
    /// PodGroups.
    PodGroup(watcher::Event<PodGroup>),
    /// Queues.
    Queue(watcher::Event<Queue>),
    /// Volcano Jobs.
    Job(watcher::Event<Job>),
    /// Priority classes.
    PriorityClass(watcher::Event<PriorityClass>),
    /// Bus Commands.
    Command(watcher::Event<Command>),
}

/// The kinds the cache can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Pods.
    Pod,
    /// Nodes.
    Node,
    /// PodGroups.
    PodGroup,
    /// Queues.
    Queue,
    /// Volcano Jobs.
    Job,
    /// Priority classes.
    PriorityClass,
    /// Bus Commands.
    Command,
}

impl Update {
    /// The kind this update is about.
    pub fn kind(&self) -> Kind {
        match self {
            Update::Pod(_) => Kind::Pod,
            Update::Node(_) => Kind::Node,
            Update::PodGroup(_) => Kind::PodGroup,
            Update::Queue(_) => Kind::Queue,
            Update::Job(_) => Kind::Job,
            Update::PriorityClass(_) => Kind::PriorityClass,
            Update::Command(_) => Kind::Command,
        }
    }
}

/// What changed in the cache, with the objects before and after, for the controllers.
#[derive(Debug, Clone)]
pub enum Changed {
    /// A Job.
    Job(Option<Box<Job>>, Option<Box<Job>>),
    /// A pod.
    Pod(Option<Box<Pod>>, Option<Box<Pod>>),
    /// A PodGroup.
    PodGroup(Option<Box<PodGroup>>, Option<Box<PodGroup>>),
    /// A queue.
    Queue(Option<Box<Queue>>, Option<Box<Queue>>),
    /// A Command appeared.
    Command(Box<Command>),
    /// A node, for the scheduler.
    Node(Option<Box<Node>>, Option<Box<Node>>),
    /// A priority class was created, changed or deleted.
    PriorityClass,
    /// Something nobody follows (a Command deleted or changed).
    Other,
}

impl Changed {
    /// As the controllers take it; `None` for what they do not watch.
    pub fn as_watch(&self) -> Option<Watch<'_>> {
        Some(match self {
            Changed::Job(o, n) => Watch::Job {
                old: o.as_deref(),
                new: n.as_deref(),
            },
            Changed::Pod(o, n) => Watch::Pod {
                old: o.as_deref(),
                new: n.as_deref(),
            },
            Changed::PodGroup(o, n) => Watch::PodGroup {
                old: o.as_deref(),
                new: n.as_deref(),
            },
            Changed::Queue(o, n) => Watch::Queue {
                old: o.as_deref(),
                new: n.as_deref(),
            },
            Changed::Command(c) => Watch::Command(c),
            Changed::Node(..) | Changed::PriorityClass | Changed::Other => return None,
        })
    }
}

/// One kind's objects: a vector (as [`Objects`] holds them) and where each key sits in it.
#[derive(Debug, Default)]
struct Indexed {
    index: HashMap<Key, usize>,
    /// Keys seen during a relist, to find what went away while the watch was down.
    relisting: Option<Vec<Key>>,
}

/// A resourceVersion as a number, when it is one (it is for every API server in practice;
/// an opaque one disables the staleness check, never the update).
fn rv_number<K: Resource>(obj: &K) -> Option<u64> {
    obj.meta().resource_version.as_deref()?.parse().ok()
}

impl Indexed {
    /// Inserts or replaces; `None` when the cache already holds this version or a newer one.
    fn upsert<K: Resource + Clone>(&mut self, vec: &mut Vec<K>, obj: K) -> Option<(Option<K>, K)> {
        let key = key_of(&obj);
        if let Some(seen) = self.relisting.as_mut() {
            seen.push(key.clone());
        }
        match self.index.get(&key) {
            Some(&i) => {
                let held = &vec[i];
                if let (Some(new), Some(old)) = (rv_number(&obj), rv_number(held))
                    && new <= old
                {
                    return None;
                }
                let old = std::mem::replace(&mut vec[i], obj.clone());
                Some((Some(old), obj))
            }
            None => {
                self.index.insert(key, vec.len());
                vec.push(obj.clone());
                Some((None, obj))
            }
        }
    }

    /// Removes by key; the object removed, if it was there.
    fn remove<K: Resource>(&mut self, vec: &mut Vec<K>, key: &Key) -> Option<K> {
        let i = self.index.remove(key)?;
        let gone = vec.swap_remove(i);
        if let Some(moved) = vec.get(i) {
            self.index.insert(key_of(moved), i);
        }
        Some(gone)
    }

    fn get_mut<'v, K>(&self, vec: &'v mut [K], key: &Key) -> Option<&'v mut K> {
        self.index.get(key).and_then(|&i| vec.get_mut(i))
    }

    fn get<'v, K>(&self, vec: &'v [K], key: &Key) -> Option<&'v K> {
        self.index.get(key).and_then(|&i| vec.get(i))
    }

    /// Applies one watch event, returning (old, new) pairs of what changed.
    fn apply<K: Resource + Clone>(
        &mut self,
        vec: &mut Vec<K>,
        ev: watcher::Event<K>,
    ) -> Vec<(Option<K>, Option<K>)> {
        match ev {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => self
                .upsert(vec, o)
                .map(|(old, new)| (old, Some(new)))
                .into_iter()
                .collect(),
            watcher::Event::Delete(o) => self
                .remove(vec, &key_of(&o))
                .map(|old| (Some(old), None))
                .into_iter()
                .collect(),
            watcher::Event::Init => {
                self.relisting = Some(Vec::new());
                Vec::new()
            }
            watcher::Event::InitDone => {
                let Some(seen) = self.relisting.take() else {
                    return Vec::new();
                };
                let seen: std::collections::HashSet<Key> = seen.into_iter().collect();
                let gone: Vec<Key> = self
                    .index
                    .keys()
                    .filter(|k| !seen.contains(*k))
                    .cloned()
                    .collect();
                gone.iter()
                    .filter_map(|k| self.remove(vec, k))
                    .map(|old| (Some(old), None))
                    .collect()
            }
        }
    }
}

/// The cluster as this process knows it.
#[derive(Debug, Default)]
pub struct ClusterCache {
    objects: Objects,
    pods: Indexed,
    nodes: Indexed,
    pod_groups: Indexed,
    queues: Indexed,
    jobs: Indexed,
    priority_classes: Indexed,
    commands: Indexed,
    synced: std::collections::BTreeSet<Kind>,
    /// Every change made since the last [`ClusterCache::take_journal`], when journaling.
    journal: Option<Vec<Changed>>,
}

fn boxed<K>(pair: (Option<K>, Option<K>)) -> (Option<Box<K>>, Option<Box<K>>) {
    (pair.0.map(Box::new), pair.1.map(Box::new))
}

impl ClusterCache {
    /// The objects, for a snapshot or a controller view.
    pub fn objects(&self) -> &Objects {
        &self.objects
    }

    /// Whether every kind in `kinds` has been listed once.
    pub fn synced(&self, kinds: &[Kind]) -> bool {
        kinds.iter().all(|k| self.synced.contains(k))
    }

    /// Applies one watch event.
    pub fn apply(&mut self, update: Update) -> Vec<Changed> {
        let kind = update.kind();
        let o = &mut self.objects;
        let changed: Vec<Changed> = match update {
            Update::Pod(ev) => {
                if matches!(ev, watcher::Event::InitDone) {
                    self.synced.insert(kind);
                }
                self.pods
                    .apply(&mut o.pods, ev)
                    .into_iter()
                    .map(|p| {
                        let (a, b) = boxed(p);
                        Changed::Pod(a, b)
                    })
                    .collect()
            }
            Update::Node(ev) => {
                if matches!(ev, watcher::Event::InitDone) {
                    self.synced.insert(kind);
                }
                self.nodes
                    .apply(&mut o.nodes, ev)
                    .into_iter()
                    .map(|p| {
                        let (a, b) = boxed(p);
                        Changed::Node(a, b)
                    })
                    .collect()
            }
            Update::PodGroup(ev) => {
                if matches!(ev, watcher::Event::InitDone) {
                    self.synced.insert(kind);
                }
                self.pod_groups
                    .apply(&mut o.pod_groups, ev)
                    .into_iter()
                    .map(|p| {
                        let (a, b) = boxed(p);
                        Changed::PodGroup(a, b)
                    })
                    .collect()
            }
            Update::Queue(ev) => {
                if matches!(ev, watcher::Event::InitDone) {
                    self.synced.insert(kind);
                }
                self.queues
                    .apply(&mut o.queues, ev)
                    .into_iter()
                    .map(|p| {
                        let (a, b) = boxed(p);
                        Changed::Queue(a, b)
                    })
                    .collect()
            }
            Update::Job(ev) => {
                if matches!(ev, watcher::Event::InitDone) {
                    self.synced.insert(kind);
                }
                self.jobs
                    .apply(&mut o.jobs, ev)
                    .into_iter()
                    .map(|p| {
                        let (a, b) = boxed(p);
                        Changed::Job(a, b)
                    })
                    .collect()
            }
            Update::PriorityClass(ev) => {
                if matches!(ev, watcher::Event::InitDone) {
                    self.synced.insert(kind);
                }
                self.priority_classes
                    .apply(&mut o.priority_classes, ev)
                    .into_iter()
                    .map(|_| Changed::PriorityClass)
                    .collect()
            }
            Update::Command(ev) => {
                if matches!(ev, watcher::Event::InitDone) {
                    self.synced.insert(kind);
                }
                self.commands
                    .apply(&mut o.commands, ev)
                    .into_iter()
                    .map(|(old, new)| match (old, new) {
                        (None, Some(c)) => Changed::Command(Box::new(c)),
                        _ => Changed::Other,
                    })
                    .collect()
            }
        };
        self.record(&changed);
        changed
    }

    /// A cache that also keeps a journal of its changes, for a follower that takes them in
    /// batches (the scheduler's incremental snapshot).
    pub fn journaling() -> Self {
        ClusterCache {
            journal: Some(Vec::new()),
            ..ClusterCache::default()
        }
    }

    /// The changes made since the last call, oldest first; empty when not journaling.
    pub fn take_journal(&mut self) -> Vec<Changed> {
        self.journal
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn record(&mut self, changed: &[Changed]) {
        if let Some(journal) = self.journal.as_mut() {
            journal.extend(changed.iter().cloned());
        }
    }

    fn recorded(&mut self, changed: Changed) -> Changed {
        self.record(std::slice::from_ref(&changed));
        changed
    }

    /// A pod by key.
    pub fn pod(&self, key: &Key) -> Option<&Pod> {
        self.pods.get(&self.objects.pods, key)
    }

    /// A PodGroup by key.
    pub fn pod_group(&self, key: &Key) -> Option<&PodGroup> {
        self.pod_groups.get(&self.objects.pod_groups, key)
    }

    /// The uid of the object an event names (`Kind/ns/name` or `Kind/name`), if cached.
    pub fn uid_of(&self, object: &str) -> Option<String> {
        let (kind, ns, name) = crate::events::parse_object(object)?;
        let key = (ns.unwrap_or_default().to_string(), name.to_string());
        let o = &self.objects;
        let meta = match kind {
            "Pod" => &self.pods.get(&o.pods, &key)?.metadata,
            "PodGroup" => &self.pod_groups.get(&o.pod_groups, &key)?.metadata,
            "Job" => &self.jobs.get(&o.jobs, &key)?.metadata,
            "Queue" => &self.queues.get(&o.queues, &key)?.metadata,
            "Command" => &self.commands.get(&o.commands, &key)?.metadata,
            _ => return None,
        };
        meta.uid.clone()
    }

    /// Records a write this process made to a pod, before its watch event arrives. The
    /// resourceVersion is kept, so the watch event (newer) replaces it.
    pub fn assume_pod(&mut self, key: &Key, change: impl FnOnce(&mut Pod)) -> Option<Changed> {
        let pod = self.pods.get_mut(&mut self.objects.pods, key)?;
        let old = pod.clone();
        change(pod);
        let changed = Changed::Pod(Some(Box::new(old)), Some(Box::new(pod.clone())));
        Some(self.recorded(changed))
    }

    /// [`ClusterCache::assume_pod`] for a PodGroup.
    pub fn assume_pod_group(
        &mut self,
        key: &Key,
        change: impl FnOnce(&mut PodGroup),
    ) -> Option<Changed> {
        let pg = self.pod_groups.get_mut(&mut self.objects.pod_groups, key)?;
        let old = pg.clone();
        change(pg);
        let changed = Changed::PodGroup(Some(Box::new(old)), Some(Box::new(pg.clone())));
        Some(self.recorded(changed))
    }

    /// [`ClusterCache::assume_pod`] for a queue.
    pub fn assume_queue(&mut self, name: &str, change: impl FnOnce(&mut Queue)) -> Option<Changed> {
        let key = (String::new(), name.to_string());
        let q = self.queues.get_mut(&mut self.objects.queues, &key)?;
        let old = q.clone();
        change(q);
        let changed = Changed::Queue(Some(Box::new(old)), Some(Box::new(q.clone())));
        Some(self.recorded(changed))
    }

    /// Takes an object the API server returned from a write as if it had been watched.
    pub fn accept(&mut self, update: Update) -> Vec<Changed> {
        self.apply(update)
    }
}

#[cfg(test)]
mod tests;
