//! The store shared between the HTTP server, the simulated kubelets and tests, with watches.
//!
//! [`SharedStore`] puts the sans-IO [`Store`] behind a mutex, gives it a clock, and publishes
//! every [`Revision`] on a bounded broadcast channel. A [`Watch`] is taken under the same lock as
//! the writes, so it starts exactly where its backlog (history or current objects) ends: no
//! revision is missed or seen twice. Nothing awaits while holding the lock; watchers read the
//! channel after it is released.
//!
//! A watch yields [`StreamEvent`]s: a revision as one watcher sees it, in the version it asked
//! for and through its selectors: one event of the stream `?watch=true` serves (the `http`
//! module frames it as a JSON line, or a table row). A client such as the kube runtime turns
//! each event it receives into a `volcano_api::WatchEvent` of its own typed
//! `volcano_api::store::ObjectStore`: that store is a client's view, this one the server's.
//!
//! A watcher that falls more than `watch_buffer` revisions behind is dropped (its stream ends),
//! as the Kubernetes API server drops slow watchers; clients then watch again or relist. This
//! bounds the memory a stuck client can hold.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::broadcast::{self, error::RecvError};

use crate::error::ApiError;
use crate::kinds::{self, KindInfo};
use crate::store::{
    ChangeType, DeleteOptions, Part, PatchType, Revision, Selectors, Store, StoreOptions,
    WriteOptions, convert,
};
use crate::time::unix_now;

/// A wall clock: seconds since the Unix epoch.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// How a shared store is set up.
#[derive(Debug, Clone)]
pub struct SharedOptions {
    /// Options of the store itself.
    pub store: StoreOptions,
    /// How many revisions a watcher may fall behind before it is dropped.
    pub watch_buffer: usize,
}

impl Default for SharedOptions {
    fn default() -> Self {
        SharedOptions {
            store: StoreOptions::default(),
            watch_buffer: 4096,
        }
    }
}

struct Inner {
    store: Mutex<Store>,
    revisions: broadcast::Sender<Arc<Revision>>,
    clock: Clock,
}

/// A handle on the store; clones share it.
#[derive(Clone)]
pub struct SharedStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("resource_version", &self.resource_version())
            .finish()
    }
}

/// The objects of a list and the resourceVersion they are current at.
#[derive(Debug, Clone)]
pub struct ObjectList {
    /// The objects, ordered by namespace and name.
    pub items: Vec<Value>,
    /// The store's resourceVersion at the time of the list; a watch from it misses nothing.
    pub resource_version: u64,
}

/// Resolves a resource name (`pods`, `jobs.batch.volcano.sh`) to its kind.
fn kind_of(resource: &str) -> Result<&'static KindInfo, ApiError> {
    kinds::find(resource).ok_or_else(ApiError::no_route)
}

impl SharedStore {
    /// A new store on the system clock.
    pub fn new(opts: SharedOptions) -> Self {
        Self::with_clock(opts, Arc::new(unix_now))
    }

    /// A new store whose writes are timestamped by `clock`.
    pub fn with_clock(opts: SharedOptions, clock: Clock) -> Self {
        let (revisions, _) = broadcast::channel(opts.watch_buffer.max(1));
        let store = Store::new(opts.store, clock());
        SharedStore {
            inner: Arc::new(Inner {
                store: Mutex::new(store),
                revisions,
                clock,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        // A panic while holding the lock cannot leave a half-written object: writes build the
        // new object first and insert it in one step. So a poisoned lock is still usable.
        self.inner.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current time by the store's clock.
    pub fn now(&self) -> i64 {
        (self.inner.clock)()
    }

    /// Runs a read on the store.
    pub fn read<T>(&self, f: impl FnOnce(&Store) -> T) -> T {
        f(&self.lock())
    }

    /// Runs writes on the store and publishes the revisions they made to watchers.
    pub fn write<T>(
        &self,
        dry_run: bool,
        f: impl FnOnce(&mut Store, &WriteOptions) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let w = WriteOptions {
            now: self.now(),
            dry_run,
        };
        let mut store = self.lock();
        let result = f(&mut store, &w);
        for revision in store.take_revisions() {
            // No receiver is not an error: nobody is watching.
            let _ = self.inner.revisions.send(revision);
        }
        result
    }

    /// The newest resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.read(Store::resource_version)
    }

    /// One object.
    pub fn get(&self, resource: &str, ns: Option<&str>, name: &str) -> Result<Value, ApiError> {
        let kind = kind_of(resource)?;
        self.read(|s| s.get(kind, ns, name)).map(|v| (*v).clone())
    }

    /// The selected objects of a kind in a namespace, or in all (`ns` None).
    pub fn list(
        &self,
        resource: &str,
        ns: Option<&str>,
        selectors: &Selectors,
    ) -> Result<ObjectList, ApiError> {
        let kind = kind_of(resource)?;
        let (items, rv) = self.read(|s| s.list(kind, ns, selectors));
        Ok(ObjectList {
            items: items.iter().map(|v| (**v).clone()).collect(),
            resource_version: rv,
        })
    }

    /// Creates an object (in `ns`, else the object's namespace, else `default`).
    pub fn create(
        &self,
        resource: &str,
        ns: Option<&str>,
        object: Value,
    ) -> Result<Value, ApiError> {
        let kind = kind_of(resource)?;
        self.write(false, |s, w| s.create(kind, ns, object, w))
            .map(|v| (*v).clone())
    }

    /// Replaces an object; its status is kept for kinds with a status subresource.
    pub fn update(
        &self,
        resource: &str,
        ns: Option<&str>,
        name: &str,
        object: Value,
    ) -> Result<Value, ApiError> {
        let kind = kind_of(resource)?;
        self.write(false, |s, w| {
            s.update(kind, ns, name, object, Part::Main, w)
        })
        .map(|v| (*v).clone())
    }

    /// Replaces the status of an object.
    pub fn update_status(
        &self,
        resource: &str,
        ns: Option<&str>,
        name: &str,
        object: Value,
    ) -> Result<Value, ApiError> {
        let kind = kind_of(resource)?;
        self.write(false, |s, w| {
            s.update(kind, ns, name, object, Part::Status, w)
        })
        .map(|v| (*v).clone())
    }

    /// Patches an object (its status is kept for kinds with a status subresource).
    pub fn patch(
        &self,
        resource: &str,
        ns: Option<&str>,
        name: &str,
        patch_type: PatchType,
        patch: &Value,
    ) -> Result<Value, ApiError> {
        let kind = kind_of(resource)?;
        self.write(false, |s, w| {
            s.patch(kind, ns, name, patch_type, patch, Part::Main, w)
        })
        .map(|v| (*v).clone())
    }

    /// Patches the status of an object.
    pub fn patch_status(
        &self,
        resource: &str,
        ns: Option<&str>,
        name: &str,
        patch_type: PatchType,
        patch: &Value,
    ) -> Result<Value, ApiError> {
        let kind = kind_of(resource)?;
        self.write(false, |s, w| {
            s.patch(kind, ns, name, patch_type, patch, Part::Status, w)
        })
        .map(|v| (*v).clone())
    }

    /// Deletes an object with its dependents; returns its last state. A bound, running pod is
    /// only marked for deletion until its kubelet confirms (see [`Store::delete`]).
    pub fn delete(&self, resource: &str, ns: Option<&str>, name: &str) -> Result<Value, ApiError> {
        let kind = kind_of(resource)?;
        self.write(false, |s, w| {
            s.delete(kind, ns, name, &DeleteOptions::default(), w)
        })
        .map(|v| (*v).clone())
    }

    /// Binds a pod to a node.
    pub fn bind(&self, ns: &str, name: &str, node: &str) -> Result<Value, ApiError> {
        let binding = serde_json::json!({"target": {"kind": "Node", "name": node}});
        self.write(false, |s, w| s.bind(ns, name, &binding, w))
            .map(|v| (*v).clone())
    }

    /// Evicts (deletes, gracefully) a pod.
    pub fn evict(&self, ns: &str, name: &str) -> Result<(), ApiError> {
        self.write(false, |s, w| {
            s.evict(ns, name, &DeleteOptions::default(), w)
        })
    }

    /// Watches a kind in a namespace or all, from a resourceVersion (revisions after it), or from
    /// now with every current object first as `Added` (`from` None).
    pub fn watch(
        &self,
        resource: &str,
        ns: Option<&str>,
        selectors: Selectors,
        from: Option<u64>,
    ) -> Result<Watch, ApiError> {
        self.watch_kind(kind_of(resource)?, ns, selectors, from)
    }

    /// [`SharedStore::watch`] for a resolved kind.
    pub fn watch_kind(
        &self,
        kind: &'static KindInfo,
        ns: Option<&str>,
        selectors: Selectors,
        from: Option<u64>,
    ) -> Result<Watch, ApiError> {
        let store = self.lock();
        let mut watch = Watch {
            kind,
            ns: ns.filter(|_| kind.namespaced).map(str::to_string),
            selectors,
            backlog: VecDeque::new(),
            rx: self.inner.revisions.subscribe(),
            seen: store.resource_version(),
        };
        match from {
            Some(rv) => {
                for revision in store.revisions_since(rv)? {
                    if let Some(event) = watch.filter(&revision) {
                        watch.backlog.push_back(event);
                    }
                }
            }
            None => {
                let (items, _) = store.list(kind, watch.ns.as_deref(), &watch.selectors);
                watch
                    .backlog
                    .extend(items.into_iter().map(|object| StreamEvent {
                        change: ChangeType::Added,
                        object,
                    }));
            }
        }
        Ok(watch)
    }
}

/// One event of a watch stream: a revision as one watch sees it (Kubernetes' `watch.Event`).
#[derive(Debug, Clone)]
pub struct StreamEvent {
    /// What happened, as seen through the watch's selectors.
    pub change: ChangeType,
    /// The object after the change (for deletions, its last state).
    pub object: Arc<Value>,
}

/// A watch stream: the revisions of one kind, filtered by namespace and selectors.
pub struct Watch {
    kind: &'static KindInfo,
    ns: Option<String>,
    selectors: Selectors,
    backlog: VecDeque<StreamEvent>,
    rx: broadcast::Receiver<Arc<Revision>>,
    seen: u64,
}

impl Watch {
    /// The next event; None when the watch ended because the watcher fell too far behind (or
    /// the store is gone). Cancel-safe.
    pub async fn next(&mut self) -> Option<StreamEvent> {
        if let Some(event) = self.backlog.pop_front() {
            return Some(event);
        }
        loop {
            match self.rx.recv().await {
                Ok(revision) => {
                    self.seen = self.seen.max(revision.rv);
                    if let Some(event) = self.filter(&revision) {
                        return Some(event);
                    }
                }
                Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => return None,
            }
        }
    }

    /// Events taken at the start (history or current objects) not yet returned.
    pub fn backlog_len(&self) -> usize {
        self.backlog.len()
    }

    /// The resourceVersion up to which every revision has been considered; what a bookmark
    /// says.
    pub fn resource_version(&self) -> u64 {
        self.seen
    }

    /// The event a revision is for this watch: selectors apply to the object before and after,
    /// so an object that stops matching is seen deleted and one that starts matching added.
    fn filter(&self, revision: &Revision) -> Option<StreamEvent> {
        if !std::ptr::eq(revision.kind, convert::storage(self.kind)) {
            return None;
        }
        if self
            .ns
            .as_deref()
            .is_some_and(|ns| ns != revision.namespace())
        {
            return None;
        }
        let object = convert::to_view(self.kind, &revision.object);
        let now = self.selectors.matches(&object);
        let before = match (&revision.old, revision.change) {
            (Some(old), ChangeType::Modified) => {
                self.selectors.matches(&convert::to_view(self.kind, old))
            }
            _ => now,
        };
        let kind = match (revision.change, before, now) {
            (ChangeType::Modified, true, true) => ChangeType::Modified,
            (ChangeType::Modified, false, true) => ChangeType::Added,
            (ChangeType::Modified, true, false) => ChangeType::Deleted,
            (c, _, true) => c,
            _ => return None,
        };
        Some(StreamEvent {
            change: kind,
            object,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn watches_filter_convert_and_follow_selectors() {
        let store = SharedStore::new(SharedOptions::default());
        let rv = store.resource_version();
        let mut events_api = store
            .watch(
                "events.events.k8s.io",
                Some("default"),
                Selectors::default(),
                Some(rv),
            )
            .unwrap();
        let web = Selectors::parse(Some("app=web"), None).unwrap();
        let mut pods = store.watch("pods", None, web, Some(rv)).unwrap();
        let event =
            json!({"metadata": {"name": "e"}, "message": "m", "involvedObject": {"name": "p"}});
        store.create("events", Some("default"), event).unwrap();
        let pod = json!({"metadata": {"name": "p", "labels": {"app": "web"}}, "spec": {}});
        store.create("pods", Some("default"), pod).unwrap();
        let relabel = json!({"metadata": {"labels": {"app": "db"}}});
        store
            .patch("pods", Some("default"), "p", PatchType::Merge, &relabel)
            .unwrap();

        let e = events_api.next().await.unwrap();
        assert_eq!(
            (e.change, e.object["note"].clone()),
            (ChangeType::Added, json!("m"))
        );
        let added = pods.next().await.unwrap();
        assert_eq!(added.change, ChangeType::Added);
        let left = pods.next().await.unwrap();
        assert_eq!(left.change, ChangeType::Deleted);
        assert_eq!(left.object["metadata"]["labels"]["app"], "db");
        assert_eq!(pods.resource_version(), store.resource_version());
    }

    #[tokio::test]
    async fn a_watcher_that_falls_behind_is_dropped() {
        let store = SharedStore::new(SharedOptions {
            watch_buffer: 2,
            ..SharedOptions::default()
        });
        let mut w = store
            .watch("configmaps", None, Selectors::default(), None)
            .unwrap();
        for i in 0..5 {
            let cm = json!({"metadata": {"name": format!("c{i}")}});
            store.create("configmaps", Some("default"), cm).unwrap();
        }
        assert!(w.next().await.is_none());
    }
}
