//! The one indexed object store: the cluster as the simulator and the kube runtime hold it
//! (the local control plane keeps its own, with resourceVersions and watch history).
//!
//! Every change goes through [`ObjectStore::upsert`] (or [`ObjectStore::create`]),
//! [`ObjectStore::modify`], [`ObjectStore::delete`] (or [`ObjectStore::delete_where`]) or
//! [`ObjectStore::reset`], each returning the owned [`WatchEvent`]s it caused, and (when
//! journaling) keeping a copy for a follower that takes them in batches: the scheduler's
//! incremental snapshot. Lookups by identity cost a hash probe; the controllers' queries (a
//! Job's pods, a queue's PodGroups) are kept as indexes, so a controller turn borrows them
//! instead of re-indexing the cluster.
//!
//! A deletion moves the last object of its kind into the gap (constant time), unless the store
//! was made with [`ObjectStore::keeping_order`]: then objects keep the order they arrived in
//! and removal shifts what follows (the simulator's choice, since [`Objects`]' order breaks
//! the scheduler's and the controllers' ties and its output must not depend on deletions).
//! A namespaced object stored without a namespace is stored in `default`, as the API server
//! defaults it, so every reader finds it under one identity.

mod event;
mod index;

pub use event::WatchEvent;
pub use index::{Index, owning_job, pod_group_queue};

use std::borrow::Borrow;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::batch::Job;
use crate::bus::Command;
use crate::cronjob::CronJob;
use crate::flow::{JobFlow, JobTemplate};
use crate::object_ref::{NamespacedName, ObjectKind};
use crate::scenario::Objects;
use crate::scheduling::{PodGroup, Queue};
use crate::topology::HyperNode;

/// A kind the store holds.
pub trait Stored: Clone {
    /// How the store holds one: the object itself, or for pods an `Arc`, shared with the
    /// scheduler's cache (no second copy of every pod) and copied on change only while shared.
    type Held: Clone + Borrow<Self>;
    /// Its kind.
    const KIND: ObjectKind;
    /// The object as the store holds it.
    fn hold(self) -> Self::Held;
    /// A held object, to change (copied first if it is shared).
    fn held_mut(held: &mut Self::Held) -> &mut Self;
    /// Its metadata.
    fn meta(&self) -> &ObjectMeta;
    /// Its metadata, to change.
    fn meta_mut(&mut self) -> &mut ObjectMeta;
    /// Its identity.
    fn key(&self) -> NamespacedName {
        NamespacedName::of_kind(Self::KIND, self.meta())
    }
    /// The group the controllers find it under (a pod under its Job, a PodGroup under its
    /// queue), for the kinds that have one.
    fn group(&self) -> Option<NamespacedName> {
        None
    }
    /// The list of this kind in `objects`.
    fn list(objects: &Objects) -> &[Self::Held];
    /// The list and the index of this kind in `store`, to change.
    fn parts(store: &mut ObjectStore) -> (&mut Vec<Self::Held>, &mut Index);
    /// The index of this kind.
    fn index(store: &ObjectStore) -> &Index;
    /// The watch event of a change from `old` to `new`.
    fn event(old: Option<Self::Held>, new: Option<Self::Held>) -> WatchEvent;
}

macro_rules! stored {
    ($ty:ty, $kind:ident, $field:ident $(, $group:path)?) => {
        impl Stored for $ty {
            type Held = Self;
            const KIND: ObjectKind = ObjectKind::$kind;
            fn hold(self) -> Self {
                self
            }
            fn held_mut(held: &mut Self) -> &mut Self {
                held
            }
            $(fn group(&self) -> Option<NamespacedName> {
                $group(self)
            })?
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
            fn list(objects: &Objects) -> &[Self] {
                &objects.$field
            }
            fn parts(store: &mut ObjectStore) -> (&mut Vec<Self>, &mut Index) {
                (&mut store.objects.$field, &mut store.indexes.$field)
            }
            fn index(store: &ObjectStore) -> &Index {
                &store.indexes.$field
            }
            fn event(old: Option<Self>, new: Option<Self>) -> WatchEvent {
                WatchEvent::$kind(old.map(Box::new), new.map(Box::new))
            }
        }
    };
}

/// Pods are held shared (see [`Stored::Held`]).
impl Stored for Pod {
    type Held = Arc<Pod>;
    const KIND: ObjectKind = ObjectKind::Pod;
    fn hold(self) -> Arc<Pod> {
        Arc::new(self)
    }
    fn held_mut(held: &mut Arc<Pod>) -> &mut Pod {
        Arc::make_mut(held)
    }
    fn group(&self) -> Option<NamespacedName> {
        index::owning_job_key(self)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
    fn list(objects: &Objects) -> &[Arc<Pod>] {
        &objects.pods
    }
    fn parts(store: &mut ObjectStore) -> (&mut Vec<Arc<Pod>>, &mut Index) {
        (&mut store.objects.pods, &mut store.indexes.pods)
    }
    fn index(store: &ObjectStore) -> &Index {
        &store.indexes.pods
    }
    fn event(old: Option<Arc<Pod>>, new: Option<Arc<Pod>>) -> WatchEvent {
        WatchEvent::Pod(old, new)
    }
}
stored!(Node, Node, nodes);
stored!(PodGroup, PodGroup, pod_groups, index::queue_group_key);
stored!(Queue, Queue, queues);
stored!(Job, Job, jobs);
stored!(PriorityClass, PriorityClass, priority_classes);
stored!(Command, Command, commands);
stored!(Namespace, Namespace, namespaces);
stored!(PersistentVolume, PersistentVolume, persistent_volumes);
stored!(
    PersistentVolumeClaim,
    PersistentVolumeClaim,
    persistent_volume_claims
);
stored!(StorageClass, StorageClass, storage_classes);
stored!(CSINode, CSINode, csi_nodes);
stored!(ReplicaSet, ReplicaSet, replica_sets);
stored!(StatefulSet, StatefulSet, stateful_sets);
stored!(Deployment, Deployment, deployments);
stored!(CronJob, CronJob, cron_jobs);
stored!(JobFlow, JobFlow, job_flows);
stored!(JobTemplate, JobTemplate, job_templates);
stored!(HyperNode, HyperNode, hyper_nodes);

/// One index per kind.
#[derive(Debug, Clone, Default)]
struct Indexes {
    pods: Index,
    nodes: Index,
    pod_groups: Index,
    queues: Index,
    jobs: Index,
    priority_classes: Index,
    commands: Index,
    namespaces: Index,
    persistent_volumes: Index,
    persistent_volume_claims: Index,
    storage_classes: Index,
    csi_nodes: Index,
    replica_sets: Index,
    stateful_sets: Index,
    deployments: Index,
    cron_jobs: Index,
    job_flows: Index,
    job_templates: Index,
    hyper_nodes: Index,
}

/// The objects, indexed (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct ObjectStore {
    objects: Objects,
    indexes: Indexes,
    /// Every event since the last [`ObjectStore::take_journal`], when journaling.
    journal: Option<Vec<WatchEvent>>,
    /// Removal keeps the order of what is left.
    keep_order: bool,
}

impl ObjectStore {
    /// A store holding `objects`, in their order. Two objects of one identity (kind,
    /// namespace, name) are one object, as applying them in turn would leave it: the later's
    /// content in the earlier's place. (A scenario's loader refuses such duplicates with an
    /// error naming both; other sources, a trace or a test, may still hand them over.)
    pub fn new(objects: Objects) -> Self {
        let mut store = ObjectStore {
            objects,
            ..Default::default()
        };
        store.reindex_all();
        store
    }

    /// The same store, keeping a journal of its events from now on.
    pub fn journaling(mut self) -> Self {
        self.journal = Some(Vec::new());
        self
    }

    /// The same store, keeping the objects' order through deletions (each then costs a shift
    /// of what follows).
    pub fn keeping_order(mut self) -> Self {
        self.keep_order = true;
        self
    }

    /// The objects, in order.
    pub fn objects(&self) -> &Objects {
        &self.objects
    }

    /// Takes the objects out, leaving the store empty.
    pub fn into_objects(self) -> Objects {
        self.objects
    }

    /// The events since the last call, oldest first; empty when not journaling.
    pub fn take_journal(&mut self) -> Vec<WatchEvent> {
        self.journal
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// An object by identity.
    pub fn get<K: Stored>(&self, key: &NamespacedName) -> Option<&K> {
        K::index(self)
            .position(key)
            .and_then(|i| K::list(&self.objects).get(i))
            .map(Borrow::borrow)
    }

    /// Where an object sits in its kind's list.
    pub fn position<K: Stored>(&self, key: &NamespacedName) -> Option<usize> {
        K::index(self).position(key)
    }

    /// Whether an object of this kind and identity is held.
    pub fn contains<K: Stored>(&self, key: &NamespacedName) -> bool {
        K::index(self).position(key).is_some()
    }

    /// The pods a Job owns, in the store's order.
    pub fn pods_of_job(&self, namespace: &str, job: &str) -> Vec<&Pod> {
        self.in_order::<Pod>(self.indexes.pods.owned_by(namespace, job))
    }

    /// The PodGroups of a queue, in the store's order.
    pub fn pod_groups_in_queue(&self, queue: &str) -> Vec<&PodGroup> {
        self.in_order::<PodGroup>(self.indexes.pod_groups.owned_by("", queue))
    }

    /// The objects of kind `K` at `positions`, in the store's order.
    fn in_order<K: Stored>(&self, positions: impl Iterator<Item = usize>) -> Vec<&K> {
        let mut at: Vec<usize> = positions.collect();
        at.sort_unstable();
        let list = K::list(&self.objects);
        at.into_iter()
            .filter_map(|i| list.get(i))
            .map(Borrow::borrow)
            .collect()
    }

    fn record(&mut self, event: &WatchEvent) {
        if let Some(journal) = self.journal.as_mut() {
            journal.push(event.clone());
        }
    }

    /// Creates `obj`, or replaces the object of its identity; the event.
    pub fn upsert<K: Stored>(&mut self, obj: K) -> WatchEvent {
        let mut obj = obj.hold();
        if K::KIND.namespaced() && obj.borrow().meta().namespace.is_none() {
            K::held_mut(&mut obj).meta_mut().namespace =
                Some(crate::object_ref::DEFAULT_NAMESPACE.to_string());
        }
        let key = obj.borrow().key();
        let (list, index) = K::parts(self);
        let event = match index.position(&key) {
            Some(i) => {
                index.forget::<K>(list[i].borrow());
                let old = std::mem::replace(&mut list[i], obj.clone());
                index.remember::<K>(key, i, list[i].borrow());
                K::event(Some(old), Some(obj))
            }
            None => {
                index.remember::<K>(key, list.len(), obj.borrow());
                list.push(obj.clone());
                K::event(None, Some(obj))
            }
        };
        self.record(&event);
        event
    }

    /// Creates `obj` unless its identity is taken (as a create answered AlreadyExists
    /// changes nothing); the event, if it was created.
    pub fn create<K: Stored>(&mut self, obj: K) -> Option<WatchEvent> {
        if self.contains::<K>(&obj.key()) {
            return None;
        }
        Some(self.upsert(obj))
    }

    /// Changes an object in place; the event, or `None` when it is not held. The change
    /// must keep the object's identity.
    pub fn modify<K: Stored>(
        &mut self,
        key: &NamespacedName,
        change: impl FnOnce(&mut K),
    ) -> Option<WatchEvent> {
        let (list, index) = K::parts(self);
        let i = index.position(key)?;
        let old = list[i].clone();
        index.forget::<K>(old.borrow());
        change(K::held_mut(&mut list[i]));
        // Under its identity after the change, should the change have renamed it.
        let now: &K = list[i].borrow();
        index.remember(now.key(), i, now);
        let event = K::event(Some(old), Some(list[i].clone()));
        self.record(&event);
        Some(event)
    }

    /// Deletes an object; the event, or `None` when it is not held.
    pub fn delete<K: Stored>(&mut self, key: &NamespacedName) -> Option<WatchEvent> {
        let keep_order = self.keep_order;
        let (list, index) = K::parts(self);
        let i = index.position(key)?;
        index.forget::<K>(list[i].borrow());
        let gone = if keep_order {
            let gone = list.remove(i);
            index.shifted::<K>(list, i);
            gone
        } else {
            let gone = list.swap_remove(i);
            if let Some(moved) = list.get(i) {
                index.moved::<K>(moved.borrow(), i);
            }
            gone
        };
        let event = K::event(Some(gone), None);
        self.record(&event);
        Some(event)
    }

    /// Deletes every object of this kind that `doomed` picks; their events, in order.
    pub fn delete_where<K: Stored>(&mut self, doomed: impl Fn(&K) -> bool) -> Vec<WatchEvent> {
        let (list, index) = K::parts(self);
        let (gone, kept): (Vec<K::Held>, Vec<K::Held>) = std::mem::take(list)
            .into_iter()
            .partition(|o| doomed(o.borrow()));
        *list = kept;
        if gone.is_empty() {
            return Vec::new();
        }
        index.rebuild::<K>(list);
        let events: Vec<WatchEvent> = gone.into_iter().map(|o| K::event(Some(o), None)).collect();
        for e in &events {
            self.record(e);
        }
        events
    }

    /// Replaces every object of this kind with `objs`, as a relist does: the events of what
    /// was added, changed (by `same` judged different) or went away.
    pub fn reset<K: Stored>(
        &mut self,
        objs: Vec<K>,
        same: impl Fn(&K, &K) -> bool,
    ) -> Vec<WatchEvent> {
        let listed: HashSet<NamespacedName> = objs.iter().map(Stored::key).collect();
        let mut events = self.delete_where::<K>(|o| !listed.contains(&o.key()));
        for obj in objs {
            let unchanged = self
                .get::<K>(&obj.key())
                .is_some_and(|held| same(held, &obj));
            if !unchanged {
                events.push(self.upsert(obj));
            }
        }
        events
    }

    fn reindex_all(&mut self) {
        let o = &mut self.objects;
        let ix = &mut self.indexes;
        reindex::<Pod>(&mut o.pods, &mut ix.pods);
        reindex::<Node>(&mut o.nodes, &mut ix.nodes);
        reindex::<PodGroup>(&mut o.pod_groups, &mut ix.pod_groups);
        reindex::<Queue>(&mut o.queues, &mut ix.queues);
        reindex::<Job>(&mut o.jobs, &mut ix.jobs);
        reindex::<PriorityClass>(&mut o.priority_classes, &mut ix.priority_classes);
        reindex::<Command>(&mut o.commands, &mut ix.commands);
        reindex::<Namespace>(&mut o.namespaces, &mut ix.namespaces);
        reindex::<PersistentVolume>(&mut o.persistent_volumes, &mut ix.persistent_volumes);
        reindex::<PersistentVolumeClaim>(
            &mut o.persistent_volume_claims,
            &mut ix.persistent_volume_claims,
        );
        reindex::<StorageClass>(&mut o.storage_classes, &mut ix.storage_classes);
        reindex::<CSINode>(&mut o.csi_nodes, &mut ix.csi_nodes);
        reindex::<ReplicaSet>(&mut o.replica_sets, &mut ix.replica_sets);
        reindex::<StatefulSet>(&mut o.stateful_sets, &mut ix.stateful_sets);
        reindex::<Deployment>(&mut o.deployments, &mut ix.deployments);
        reindex::<CronJob>(&mut o.cron_jobs, &mut ix.cron_jobs);
        reindex::<JobFlow>(&mut o.job_flows, &mut ix.job_flows);
        reindex::<JobTemplate>(&mut o.job_templates, &mut ix.job_templates);
        reindex::<HyperNode>(&mut o.hyper_nodes, &mut ix.hyper_nodes);
    }
}

/// Indexes one kind's list from scratch, first folding objects of one identity into one (see
/// [`ObjectStore::new`]). The index counts the identities, so a list without duplicates (the
/// usual case) is walked once.
fn reindex<K: Stored>(list: &mut Vec<K::Held>, index: &mut Index) {
    index.rebuild::<K>(list);
    if index.len() == list.len() {
        return;
    }
    let mut at: HashMap<NamespacedName, usize> = HashMap::with_capacity(index.len());
    let mut kept: Vec<K::Held> = Vec::with_capacity(index.len());
    for obj in std::mem::take(list) {
        match at.entry(obj.borrow().key()) {
            Entry::Occupied(e) => kept[*e.get()] = obj,
            Entry::Vacant(e) => {
                e.insert(kept.len());
                kept.push(obj);
            }
        }
    }
    *list = kept;
    index.rebuild::<K>(list);
}

#[cfg(test)]
mod tests;
