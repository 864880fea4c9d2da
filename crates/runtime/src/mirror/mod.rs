//! The objects the scheduler and the controllers read, kept current from watch events.
//!
//! The mirror holds the objects as the sans-IO crates take them ([`Objects`]), with an index
//! per kind so a watch event costs a lookup, not a scan. Writes this process made are applied
//! here as soon as the API server accepts them ("assumed"), so the next session or turn sees
//! them before their watch event arrives; a watch event older than what the mirror holds is
//! ignored, by resourceVersion. So is a write's answer older than the deletion the watch told
//! of meanwhile: a controller turn's answers reach the mirror when the turn ends, and a pod it
//! created may be gone by then.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use kube::runtime::watcher;
use volcano_api::batch::Job;
use volcano_api::bus::Command;
use volcano_api::cronjob::CronJob;
use volcano_api::flow::{JobFlow, JobTemplate};
use volcano_api::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use volcano_api::k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod,
};
use volcano_api::k8s_openapi::api::scheduling::v1::PriorityClass;
use volcano_api::k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_api::store::Stored;
use volcano_api::topology::HyperNode;
use volcano_api::{NamespacedName, ObjectKind, ObjectRef, ObjectStore, Objects, WatchEvent};

/// An object's identity in the mirror; the namespace is empty for cluster-scoped kinds.
pub type Key = NamespacedName;

/// A watch event of one kind, as the watchers deliver it to the loop that owns the mirror.
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
    /// Namespaces.
    Namespace(watcher::Event<Namespace>),
    /// PersistentVolumes.
    PersistentVolume(watcher::Event<PersistentVolume>),
    /// PersistentVolumeClaims.
    PersistentVolumeClaim(watcher::Event<PersistentVolumeClaim>),
    /// StorageClasses.
    StorageClass(watcher::Event<StorageClass>),
    /// CSINodes.
    CSINode(watcher::Event<CSINode>),
    /// ReplicaSets.
    ReplicaSet(watcher::Event<ReplicaSet>),
    /// StatefulSets.
    StatefulSet(watcher::Event<StatefulSet>),
    /// Deployments.
    Deployment(watcher::Event<Deployment>),
    /// Volcano CronJobs.
    CronJob(watcher::Event<CronJob>),
    /// JobFlows.
    JobFlow(watcher::Event<JobFlow>),
    /// JobTemplates.
    JobTemplate(watcher::Event<JobTemplate>),
    /// HyperNodes.
    HyperNode(watcher::Event<HyperNode>),
}

/// The kinds the mirror can hold: every kind volcano-rs reads.
pub type Kind = ObjectKind;

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
            Update::Namespace(_) => Kind::Namespace,
            Update::PersistentVolume(_) => Kind::PersistentVolume,
            Update::PersistentVolumeClaim(_) => Kind::PersistentVolumeClaim,
            Update::StorageClass(_) => Kind::StorageClass,
            Update::CSINode(_) => Kind::CSINode,
            Update::ReplicaSet(_) => Kind::ReplicaSet,
            Update::StatefulSet(_) => Kind::StatefulSet,
            Update::Deployment(_) => Kind::Deployment,
            Update::CronJob(_) => Kind::CronJob,
            Update::JobFlow(_) => Kind::JobFlow,
            Update::JobTemplate(_) => Kind::JobTemplate,
            Update::HyperNode(_) => Kind::HyperNode,
        }
    }
}

/// A resourceVersion as a number, when it is one (it is for every API server in practice;
/// an opaque one disables the staleness check, never the update).
fn rv_number(meta: &ObjectMeta) -> Option<u64> {
    meta.resource_version.as_deref()?.parse().ok()
}

/// The cluster as this process knows it: the one indexed store, fed by watch events.
#[derive(Debug, Default)]
pub struct ClusterMirror {
    store: ObjectStore,
    /// The changes not taken yet, when journaling: moved here, not copied.
    journal: Option<Vec<WatchEvent>>,
    /// Per kind, the keys seen since a relist began, to find what went away while the watch
    /// was down.
    relisting: BTreeMap<Kind, HashSet<Key>>,
    synced: BTreeSet<Kind>,
    deleted: Tombstones,
}

/// How many deletions the mirror remembers: far more than happen while a write is in flight.
const TOMBSTONES: usize = 16_384;

/// The objects deleted lately, each with the resourceVersion of its deletion, so that an
/// answer to a write made before it (older) does not bring the object back.
#[derive(Debug, Default)]
struct Tombstones {
    versions: HashMap<Kind, HashMap<Key, u64>>,
    order: VecDeque<(Kind, Key)>,
}

impl Tombstones {
    fn bury(&mut self, kind: Kind, key: Key, version: u64) {
        let of_kind = self.versions.entry(kind).or_default();
        if of_kind.insert(key.clone(), version).is_none() {
            self.order.push_back((kind, key));
        }
        while self.order.len() > TOMBSTONES {
            if let Some((kind, key)) = self.order.pop_front()
                && let Some(of_kind) = self.versions.get_mut(&kind)
            {
                of_kind.remove(&key);
            }
        }
    }

    /// Whether an object of `version` is no newer than its deletion (one made again under
    /// the same name is newer).
    fn buries(&self, kind: Kind, key: &Key, version: u64) -> bool {
        self.versions
            .get(&kind)
            .and_then(|of_kind| of_kind.get(key))
            .is_some_and(|&deleted| version <= deleted)
    }
}

impl ClusterMirror {
    /// The objects, for a snapshot or a controller view.
    pub fn objects(&self) -> &Objects {
        self.store.objects()
    }

    /// The indexed store, for a controller view.
    pub fn indexed(&self) -> &ObjectStore {
        &self.store
    }

    /// Whether every kind in `kinds` has been listed once.
    pub fn synced(&self, kinds: &[Kind]) -> bool {
        kinds.iter().all(|k| self.synced.contains(k))
    }

    /// Applies one watch event; the changes it made (none when journaling: they go to the
    /// journal).
    pub fn apply(&mut self, update: Update) -> Vec<WatchEvent> {
        let changes = self.apply_now(update);
        self.journal_all(changes)
    }

    /// The changes, unless journaling: then they are moved to the journal.
    fn journal_all(&mut self, changes: Vec<WatchEvent>) -> Vec<WatchEvent> {
        match self.journal.as_mut() {
            Some(j) => {
                j.extend(changes);
                Vec::new()
            }
            None => changes,
        }
    }

    /// [`ClusterMirror::journal_all`] of one change.
    fn journal_one(&mut self, change: Option<WatchEvent>) -> Option<WatchEvent> {
        match (self.journal.as_mut(), change) {
            (Some(j), Some(c)) => {
                j.push(c);
                None
            }
            (_, c) => c,
        }
    }

    fn apply_now(&mut self, update: Update) -> Vec<WatchEvent> {
        match update {
            Update::Pod(ev) => self.take(Kind::Pod, ev),
            Update::Node(ev) => self.take(Kind::Node, ev),
            Update::PodGroup(ev) => self.take(Kind::PodGroup, ev),
            Update::Queue(ev) => self.take(Kind::Queue, ev),
            Update::Job(ev) => self.take(Kind::Job, ev),
            Update::PriorityClass(ev) => self.take(Kind::PriorityClass, ev),
            Update::Command(ev) => self.take(Kind::Command, ev),
            Update::Namespace(ev) => self.take(Kind::Namespace, ev),
            Update::PersistentVolume(ev) => self.take(Kind::PersistentVolume, ev),
            Update::PersistentVolumeClaim(ev) => self.take(Kind::PersistentVolumeClaim, ev),
            Update::StorageClass(ev) => self.take(Kind::StorageClass, ev),
            Update::CSINode(ev) => self.take(Kind::CSINode, ev),
            Update::ReplicaSet(ev) => self.take(Kind::ReplicaSet, ev),
            Update::StatefulSet(ev) => self.take(Kind::StatefulSet, ev),
            Update::Deployment(ev) => self.take(Kind::Deployment, ev),
            Update::CronJob(ev) => self.take(Kind::CronJob, ev),
            Update::JobFlow(ev) => self.take(Kind::JobFlow, ev),
            Update::JobTemplate(ev) => self.take(Kind::JobTemplate, ev),
            Update::HyperNode(ev) => self.take(Kind::HyperNode, ev),
        }
    }

    fn take<K: Stored>(&mut self, kind: Kind, ev: watcher::Event<K>) -> Vec<WatchEvent> {
        match ev {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                if let Some(seen) = self.relisting.get_mut(&kind) {
                    seen.insert(o.key());
                }
                self.upsert(kind, o).into_iter().collect()
            }
            watcher::Event::Delete(o) => {
                if let Some(version) = rv_number(o.meta()) {
                    self.deleted.bury(kind, o.key(), version);
                }
                self.store.delete::<K>(&o.key()).into_iter().collect()
            }
            watcher::Event::Init => {
                self.relisting.insert(kind, HashSet::new());
                Vec::new()
            }
            watcher::Event::InitDone => {
                self.synced.insert(kind);
                let Some(seen) = self.relisting.remove(&kind) else {
                    return Vec::new();
                };
                self.store.delete_where::<K>(|o| !seen.contains(&o.key()))
            }
        }
    }

    /// Inserts or replaces; `None` when the mirror already holds this version or a newer one,
    /// or saw the object deleted at this version or later.
    fn upsert<K: Stored>(&mut self, kind: Kind, obj: K) -> Option<WatchEvent> {
        if let Some(new) = rv_number(obj.meta())
            && self.deleted.buries(kind, &obj.key(), new)
        {
            return None;
        }
        if let Some(held) = self.store.get::<K>(&obj.key())
            && let (Some(new), Some(old)) = (rv_number(obj.meta()), rv_number(held.meta()))
            && new <= old
        {
            return None;
        }
        Some(self.store.upsert(obj))
    }

    /// A mirror that keeps a journal of its changes, for a follower that takes them in
    /// batches (the scheduler's incremental snapshot). Its methods then return no changes.
    pub fn journaling() -> Self {
        ClusterMirror {
            journal: Some(Vec::new()),
            ..ClusterMirror::default()
        }
    }

    /// The changes made since the last call, oldest first; empty when not journaling.
    pub fn take_journal(&mut self) -> Vec<WatchEvent> {
        self.journal
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// A pod by key.
    pub fn pod(&self, key: &Key) -> Option<&Pod> {
        self.store.get(key)
    }

    /// A PodGroup by key.
    pub fn pod_group(&self, key: &Key) -> Option<&PodGroup> {
        self.store.get(key)
    }

    /// The uid of an object, if cached.
    pub fn uid_of(&self, object: &ObjectRef) -> Option<String> {
        let key = &object.key;
        let meta = match object.kind {
            ObjectKind::Pod => self.store.get::<Pod>(key)?.meta(),
            ObjectKind::PodGroup => self.store.get::<PodGroup>(key)?.meta(),
            ObjectKind::Job => self.store.get::<Job>(key)?.meta(),
            ObjectKind::Queue => self.store.get::<Queue>(key)?.meta(),
            ObjectKind::Command => self.store.get::<Command>(key)?.meta(),
            ObjectKind::Node => self.store.get::<Node>(key)?.meta(),
            ObjectKind::PriorityClass => self.store.get::<PriorityClass>(key)?.meta(),
            ObjectKind::Namespace => self.store.get::<Namespace>(key)?.meta(),
            ObjectKind::PersistentVolume => self.store.get::<PersistentVolume>(key)?.meta(),
            ObjectKind::PersistentVolumeClaim => {
                self.store.get::<PersistentVolumeClaim>(key)?.meta()
            }
            ObjectKind::StorageClass => self.store.get::<StorageClass>(key)?.meta(),
            ObjectKind::CSINode => self.store.get::<CSINode>(key)?.meta(),
            ObjectKind::ReplicaSet => self.store.get::<ReplicaSet>(key)?.meta(),
            ObjectKind::StatefulSet => self.store.get::<StatefulSet>(key)?.meta(),
            ObjectKind::Deployment => self.store.get::<Deployment>(key)?.meta(),
            ObjectKind::CronJob => self.store.get::<CronJob>(key)?.meta(),
            ObjectKind::JobFlow => self.store.get::<JobFlow>(key)?.meta(),
            ObjectKind::JobTemplate => self.store.get::<JobTemplate>(key)?.meta(),
            ObjectKind::HyperNode => self.store.get::<HyperNode>(key)?.meta(),
        };
        meta.uid.clone()
    }

    /// Records a write this process made to a pod, before its watch event arrives. The
    /// resourceVersion is kept, so the watch event (newer) replaces it.
    pub fn assume_pod(&mut self, key: &Key, change: impl FnOnce(&mut Pod)) -> Option<WatchEvent> {
        let c = self.store.modify(key, change);
        self.journal_one(c)
    }

    /// [`ClusterMirror::assume_pod`] for a PodGroup.
    pub fn assume_pod_group(
        &mut self,
        key: &Key,
        change: impl FnOnce(&mut PodGroup),
    ) -> Option<WatchEvent> {
        let c = self.store.modify(key, change);
        self.journal_one(c)
    }

    /// [`ClusterMirror::assume_pod`] for a queue.
    pub fn assume_queue(
        &mut self,
        name: &str,
        change: impl FnOnce(&mut Queue),
    ) -> Option<WatchEvent> {
        let c = self.store.modify(&NamespacedName::cluster(name), change);
        self.journal_one(c)
    }

    /// Takes an object the API server returned from a write as if it had been watched.
    pub fn accept(&mut self, update: Update) -> Vec<WatchEvent> {
        self.apply(update)
    }
}

#[cfg(test)]
mod tests;
