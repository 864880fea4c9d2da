//! The object store: a sans-IO, in-memory Kubernetes storage layer.
//!
//! Objects are JSON values keyed by kind, namespace and name. Every write takes the next value
//! of one global resourceVersion, stamps it into `metadata.resourceVersion` and records a
//! [`Revision`] in a bounded [`History`] that watches resume from. The store reads no clock and
//! does no IO: the time of a write comes in [`WriteOptions`], and the revisions a write produced
//! are collected with [`Store::take_revisions`] by whoever publishes them (the `shared` module).
//!
//! It is the local control plane's etcd, not `volcano_api::store::ObjectStore`: it keeps every
//! served kind as JSON (fields no Rust type models included) with resourceVersions and history,
//! while the typed store is what a client of this server (the kube runtime of `volcano up`)
//! builds from its watches.
//!
//! Semantics follow the Kubernetes API server where a client can observe them: optimistic
//! concurrency on resourceVersion, no-op writes that do not bump it, status subresources,
//! `generateName`, generation bumps on spec changes, namespace existence, namespace deletion
//! and ownerReference garbage collection. A pod bound to a node and not finished is deleted
//! gracefully: marked with `deletionTimestamp` until its kubelet deletes it with grace 0. Other
//! deletions are immediate (finalizers are not waited for); the garbage collector deletes pods
//! gracefully too, namespace deletion removes them at once.

mod admission;
pub mod convert;
pub mod defaults;
pub mod fields;
pub mod graceful;
pub mod history;
pub mod meta;
pub mod patch;
pub mod schema_check;
pub mod selector;
pub mod validate;
mod write;

#[cfg(test)]
mod orphans_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod volume_tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

pub use history::{ChangeType, History, Revision};
pub use patch::PatchType;
pub use selector::Selectors;

use crate::error::ApiError;
use crate::kinds::{self, KINDS, KindInfo};

/// Namespaces every cluster starts with.
pub const INITIAL_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "volcano-system"];

/// How a store is set up.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// How many revisions watches can resume from.
    pub watch_history: usize,
    /// Seed of uids and generated names.
    pub uid_seed: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            watch_history: 10_000,
            // "volcano" in ASCII.
            uid_seed: 0x0076_6f6c_6361_6e6f,
        }
    }
}

/// The circumstances of one write.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Wall-clock time of the write, seconds since the epoch (for timestamps the server sets).
    pub now: i64,
    /// Compute and validate the result without storing it (`?dryRun=All`).
    pub dry_run: bool,
}

/// Which part of an object an update or patch may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main resource: everything but `status` for kinds with a status subresource.
    Main,
    /// The `status` subresource: only `status`.
    Status,
}

/// Preconditions of a delete (`DeleteOptions.preconditions`).
#[derive(Debug, Clone, Default)]
pub struct Preconditions {
    /// The object must have this uid.
    pub uid: Option<String>,
    /// The object must have this resourceVersion.
    pub resource_version: Option<String>,
}

/// How to delete (`DeleteOptions`).
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// What the object must be.
    pub preconditions: Preconditions,
    /// `gracePeriodSeconds`: how long a bound, running pod may take to stop before it is gone;
    /// None takes the pod's `terminationGracePeriodSeconds`, 0 deletes at once.
    pub grace_period_seconds: Option<i64>,
}

/// Key of an object within its kind: (namespace, name); namespace empty for cluster scope.
type Key = (String, String);

/// The in-memory store.
#[derive(Debug)]
pub struct Store {
    /// Objects per kind, indexed like [`KINDS`].
    objects: Vec<BTreeMap<Key, Arc<Value>>>,
    rv: u64,
    history: History,
    outbox: Vec<Arc<Revision>>,
    ids: meta::IdGen,
    /// Where the object with a uid lives.
    uids: HashMap<String, (usize, Key)>,
    /// Owner uid to the objects naming it in `ownerReferences`.
    dependents: HashMap<String, BTreeSet<(usize, Key)>>,
}

/// The namespace key of an object of `kind` addressed with `ns`.
fn scope(kind: &KindInfo, ns: Option<&str>) -> String {
    if kind.namespaced {
        ns.unwrap_or("").to_string()
    } else {
        String::new()
    }
}

impl Store {
    /// A store holding the initial namespaces, created at `now`.
    pub fn new(opts: StoreOptions, now: i64) -> Self {
        let mut store = Store {
            objects: KINDS.iter().map(|_| BTreeMap::new()).collect(),
            rv: 0,
            history: History::new(opts.watch_history),
            outbox: Vec::new(),
            ids: meta::IdGen::new(opts.uid_seed),
            uids: HashMap::new(),
            dependents: HashMap::new(),
        };
        let w = WriteOptions {
            now,
            dry_run: false,
        };
        for ns in INITIAL_NAMESPACES {
            let obj = serde_json::json!({"metadata": {"name": ns}});
            // Creating fixed, valid names in an empty store cannot fail; if it ever did, the
            // namespace would simply be missing and creates in it would say so.
            let _ = store.create(kinds::namespaces(), None, obj, &w);
        }
        // The queues Volcano's scheduler creates at start exist from the first moment, so a Job
        // submitted before the scheduler runs is admitted to `default` rather than refused.
        if let Some(queues) = kinds::find("queues") {
            for (name, reclaimable) in [("root", false), ("default", true)] {
                let obj = serde_json::json!({"metadata": {"name": name},
                    "spec": {"weight": 1, "reclaimable": reclaimable}});
                let _ = store.create(queues, None, obj, &w);
            }
        }
        // Nobody can watch a store before it exists; the history still has these changes.
        store.outbox.clear();
        store
    }

    /// The newest resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// One object.
    pub fn get(
        &self,
        kind: &'static KindInfo,
        ns: Option<&str>,
        name: &str,
    ) -> Result<Arc<Value>, ApiError> {
        self.stored(kind, ns, name)
            .map(|o| convert::to_view(kind, &o))
    }

    /// One object as stored (for kinds served from another's storage, in that form).
    fn stored(
        &self,
        kind: &'static KindInfo,
        ns: Option<&str>,
        name: &str,
    ) -> Result<Arc<Value>, ApiError> {
        self.objects[convert::storage(kind).index()]
            .get(&(scope(kind, ns), name.to_string()))
            .cloned()
            .ok_or_else(|| ApiError::not_found(kind, name))
    }

    /// The selected objects of a kind, in one namespace or all (`ns` None), ordered by
    /// namespace and name, with the resourceVersion they are current at.
    pub fn list(
        &self,
        kind: &'static KindInfo,
        ns: Option<&str>,
        selectors: &Selectors,
    ) -> (Vec<Arc<Value>>, u64) {
        let map = &self.objects[convert::storage(kind).index()];
        let objects: Box<dyn Iterator<Item = &Arc<Value>>> = match ns.filter(|_| kind.namespaced) {
            Some(ns) => Box::new(
                map.range((ns.to_string(), String::new())..)
                    .take_while(move |((n, _), _)| n == ns)
                    .map(|(_, v)| v),
            ),
            None => Box::new(map.values()),
        };
        let items = objects
            .map(|v| convert::to_view(kind, v))
            .filter(|v| selectors.matches(v))
            .collect();
        (items, self.rv)
    }

    /// Whether a namespace exists.
    pub fn namespace_exists(&self, ns: &str) -> bool {
        self.objects[kinds::namespaces().index()].contains_key(&(String::new(), ns.to_string()))
    }

    /// Every revision after `rv`, or 410 Gone when the history no longer reaches back to it.
    pub fn revisions_since(&self, rv: u64) -> Result<Vec<Arc<Revision>>, ApiError> {
        self.history.since(rv)
    }

    /// The revisions made since the last call, oldest first, for publishing to watchers.
    pub fn take_revisions(&mut self) -> Vec<Arc<Revision>> {
        std::mem::take(&mut self.outbox)
    }

    /// Stores `object` (already stamped, in storage form) under its key and records the
    /// revision.
    fn commit(
        &mut self,
        kind: &'static KindInfo,
        key: Key,
        object: Value,
        change: ChangeType,
        old: Option<Arc<Value>>,
    ) -> Arc<Value> {
        let kind = convert::storage(kind);
        let idx = kind.index();
        if let Some(old) = &old {
            self.unindex(idx, &key, old);
        }
        let object = Arc::new(object);
        if change == ChangeType::Deleted {
            self.objects[idx].remove(&key);
        } else {
            self.index(idx, &key, &object);
            self.objects[idx].insert(key, object.clone());
        }
        let revision = Arc::new(Revision {
            rv: self.rv,
            kind,
            change,
            object: object.clone(),
            old,
        });
        self.history.push(revision.clone());
        self.outbox.push(revision);
        object
    }

    fn index(&mut self, idx: usize, key: &Key, object: &Value) {
        let uid = meta::meta_str(object, "uid");
        if !uid.is_empty() {
            self.uids.insert(uid.to_string(), (idx, key.clone()));
        }
        for owner in meta::owner_uids(object) {
            self.dependents
                .entry(owner)
                .or_default()
                .insert((idx, key.clone()));
        }
    }

    fn unindex(&mut self, idx: usize, key: &Key, object: &Value) {
        self.uids.remove(meta::meta_str(object, "uid"));
        for owner in meta::owner_uids(object) {
            if let Some(set) = self.dependents.get_mut(&owner) {
                set.remove(&(idx, key.clone()));
                if set.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
    }

    /// The next resourceVersion, as stamped into objects.
    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }
}
