//! The queues the rules look up, kept current by a watch: a review reads memory, never the API
//! server, so it answers in microseconds and an API server under load is not asked twice.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use kube::Client;
use kube::runtime::watcher;
use tokio::sync::mpsc;
use volcano_api::scheduling::Queue;
use volcano_controllers::admission::AdmissionView;

use crate::Stop;
use crate::mirror::{Kind, Update};
use crate::reflect::{PodView, UPDATE_CHANNEL, watch};
use crate::serve::Readiness;

/// The queues by name.
#[derive(Debug, Clone, Default)]
pub struct QueueMirror(Arc<RwLock<BTreeMap<String, Queue>>>);

impl QueueMirror {
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Queue>> {
        // A panic mid-update leaves a map that is still a map: serve it.
        self.0.write().unwrap_or_else(|p| p.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Queue>> {
        self.0.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies one watch event; a relist replaces the whole map once it is complete.
    fn apply(
        &self,
        event: watcher::Event<Queue>,
        relist: &mut Option<BTreeMap<String, Queue>>,
    ) -> bool {
        let name = |q: &Queue| q.metadata.name.clone().unwrap_or_default();
        match event {
            watcher::Event::Init => *relist = Some(BTreeMap::new()),
            watcher::Event::InitApply(q) => {
                if let Some(r) = relist.as_mut() {
                    r.insert(name(&q), q);
                }
            }
            watcher::Event::InitDone => {
                if let Some(r) = relist.take() {
                    *self.write() = r;
                }
                return true;
            }
            watcher::Event::Apply(q) => {
                self.write().insert(name(&q), q);
            }
            watcher::Event::Delete(q) => {
                self.write().remove(&name(&q));
            }
        }
        false
    }

    /// Keeps the mirror current until `stop`; `ready` is set once the first list is in.
    pub async fn run(self, client: Client, ready: Readiness, mut stop: Stop) {
        let (tx, mut rx) = mpsc::channel(UPDATE_CHANNEL);
        let watchers = watch(&client, &[Kind::Queue], PodView::Full, &tx);
        drop(tx);
        let mut relist = None;
        loop {
            tokio::select! {
                update = rx.recv() => match update {
                    Some(Update::Queue(ev)) => {
                        if self.apply(ev, &mut relist) {
                            ready.set_ready();
                        }
                    }
                    Some(_) => {}
                    None => break,
                },
                _ = stop.changed() => break,
            }
        }
        for w in watchers {
            w.abort();
        }
    }
}

impl AdmissionView for QueueMirror {
    fn queue(&self, name: &str) -> Option<Queue> {
        self.read().get(name).cloned()
    }

    fn queues(&self) -> Vec<Queue> {
        self.read().values().cloned().collect()
    }
}
