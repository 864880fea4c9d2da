//! A session's decisions, written to the API server: GPU device annotations, then binds and
//! evictions with bounded concurrency, nominations, PodGroup status and queue `allocated`
//! where they changed. Every write that succeeds is assumed in the cache at once; one that
//! fails is reported and left out, so its task is simply pending again in the next session.

use std::collections::BTreeMap;

use kube::api::{Api, EvictParams, Patch, PatchParams, PostParams};
use kube::{Client, Error as KubeError};
use serde_json::json;
use volcano_api::event::{Event, EventType};
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use volcano_api::k8s_openapi::jiff::Timestamp;
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_scheduler::framework::{Decisions, Unwritten};
use volcano_scheduler::model::gpu;

use crate::cache::{ClusterCache, split_key};
use crate::events::EventSink;
use crate::metrics::SchedulerMetrics;

/// Where the writes go.
pub struct Writer {
    /// The API client.
    pub client: Client,
    /// Concurrent binds and evictions at most.
    pub concurrency: usize,
    /// Events.
    pub events: EventSink,
    /// Metrics.
    pub metrics: SchedulerMetrics,
}

/// What the writes did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Pods bound.
    pub bound: usize,
    /// Binds refused.
    pub bind_failures: usize,
    /// Pods evicted.
    pub evicted: usize,
    /// Status patches refused.
    pub status_failures: usize,
}

fn is_gone(e: &KubeError) -> bool {
    matches!(e, KubeError::Api(s) if s.code == 404)
}

impl Writer {
    fn pods(&self, ns: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), ns)
    }

    /// Writes `d`, updating `cache` with what the API server accepted.
    pub async fn write(&self, d: &Decisions, cache: &mut ClusterCache) -> Written {
        let mut w = Written::default();
        let mut unwritten = Unwritten::default();
        self.annotate_devices(d, cache).await;
        self.bind(d, cache, &mut w).await;
        self.evict(d, cache, &mut w, &mut unwritten).await;
        self.nominate(d, cache).await;
        self.pod_group_status(d, cache, &mut w, &mut unwritten)
            .await;
        self.queue_allocated(d, cache, &mut w).await;
        // Last, and only for what was written: a PodGroup whose status write failed is
        // decided again next session, and its event with it.
        for e in d.events_after_writes(&unwritten) {
            let uid = cache.uid_of(&e.object);
            self.events.send(e.clone(), uid);
        }
        w
    }

    async fn annotate_devices(&self, d: &Decisions, cache: &mut ClusterCache) {
        let jobs = d.gpu_devices.iter().map(|(k, ids)| {
            let key = split_key(k);
            let api = self.pods(&key.0);
            let ids = ids.clone();
            async move {
                let patch = json!({"metadata": {"annotations": {gpu::POD_VGPU_IDS: &ids}}});
                let r = api
                    .patch(&key.1, &PatchParams::default(), &Patch::Merge(&patch))
                    .await;
                (key, ids, r)
            }
        });
        let results = bounded(jobs, self.concurrency).await;
        for (key, ids, r) in results {
            match r {
                Ok(_) => {
                    cache.assume_pod(&key, |p| {
                        p.metadata
                            .annotations
                            .get_or_insert_with(Default::default)
                            .insert(gpu::POD_VGPU_IDS.to_string(), ids);
                    });
                }
                Err(e) => {
                    tracing::warn!(pod = %format!("{}/{}", key.0, key.1), error = %e, "could not record the pod's GPU devices")
                }
            }
        }
    }

    async fn bind(&self, d: &Decisions, cache: &mut ClusterCache, w: &mut Written) {
        let jobs = d.binds.iter().map(|(k, node)| {
            let key = split_key(k);
            let api = self.pods(&key.0);
            let node = node.clone();
            async move {
                let binding = json!({
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": key.1, "namespace": key.0},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                });
                let r: Result<serde_json::Value, KubeError> = api
                    .create_subresource("binding", &key.1, &PostParams::default(), &binding)
                    .await;
                (key, node, r)
            }
        });
        let results = bounded(jobs, self.concurrency).await;
        for (key, node, r) in results {
            let name = format!("{}/{}", key.0, key.1);
            match r {
                Ok(_) => {
                    w.bound += 1;
                    self.metrics.pods_bound.inc();
                    let uid = cache.pod(&key).and_then(|p| p.metadata.uid.clone());
                    cache.assume_pod(&key, |p| {
                        if let Some(spec) = p.spec.as_mut() {
                            spec.node_name = Some(node.clone());
                        }
                    });
                    self.events.send(
                        Event {
                            object: format!("Pod/{name}"),
                            type_: EventType::Normal,
                            reason: "Scheduled".to_string(),
                            message: format!("Successfully assigned {name} to {node}"),
                        },
                        uid,
                    );
                }
                Err(e) => {
                    w.bind_failures += 1;
                    self.metrics.bind_failures.inc();
                    tracing::warn!(pod = %name, node = %node, error = %e, "bind failed; the pod goes back to the queue");
                }
            }
        }
    }

    async fn evict(
        &self,
        d: &Decisions,
        cache: &mut ClusterCache,
        w: &mut Written,
        unwritten: &mut Unwritten,
    ) {
        let jobs = d.evictions.iter().map(|k| {
            let key = split_key(k);
            let api = self.pods(&key.0);
            async move {
                let r = api.evict(&key.1, &EvictParams::default()).await.map(|_| ());
                (key, r)
            }
        });
        let results = bounded(jobs, self.concurrency).await;
        for (key, r) in results {
            let name = format!("{}/{}", key.0, key.1);
            match r {
                Ok(()) => {
                    w.evicted += 1;
                    self.metrics.preemption_attempts.inc();
                    cache.assume_pod(&key, |p| {
                        p.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
                    });
                }
                // A pod gone already was ended by someone else: no `Evict` event either way.
                Err(e) => {
                    if !is_gone(&e) {
                        tracing::warn!(pod = %name, error = %e, "eviction failed");
                    }
                    unwritten.evictions.insert(name);
                }
            }
        }
    }

    async fn nominate(&self, d: &Decisions, cache: &mut ClusterCache) {
        for (k, node) in &d.nominated {
            let key = split_key(k);
            let patch = json!({"status": {"nominatedNodeName": node}});
            match self
                .pods(&key.0)
                .patch_status(&key.1, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    cache.assume_pod(&key, |p| {
                        p.status
                            .get_or_insert_with(Default::default)
                            .nominated_node_name = Some(node.clone());
                    });
                }
                Err(e) if is_gone(&e) => {}
                Err(e) => tracing::warn!(pod = %k, error = %e, "could not nominate a node"),
            }
        }
    }

    async fn pod_group_status(
        &self,
        d: &Decisions,
        cache: &mut ClusterCache,
        w: &mut Written,
        unwritten: &mut Unwritten,
    ) {
        for u in d.pod_groups.iter().filter(|u| u.changed) {
            let key = split_key(&u.key);
            let api: Api<PodGroup> = Api::namespaced(self.client.clone(), &key.0);
            // The scheduler is the only writer of PodGroup status: the whole status is
            // replaced, so a field that became empty is cleared too.
            let patch = match replace_status(&u.status) {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(podgroup = %u.key, error = %e, "cannot encode PodGroup status");
                    unwritten.pod_groups.insert(u.key.clone());
                    continue;
                }
            };
            // Volcano's PodGroup CRD has no status subresource: the status is patched on the
            // object itself.
            match api
                .patch(&key.1, &PatchParams::default(), &Patch::Json::<()>(patch))
                .await
            {
                Ok(_) => {
                    cache.assume_pod_group(&key, |pg| pg.status = Some(u.status.clone()));
                }
                Err(e) => {
                    if !is_gone(&e) {
                        w.status_failures += 1;
                        tracing::warn!(podgroup = %u.key, error = %e, "could not write PodGroup status");
                    }
                    unwritten.pod_groups.insert(u.key.clone());
                }
            }
        }
    }

    async fn queue_allocated(&self, d: &Decisions, cache: &mut ClusterCache, w: &mut Written) {
        let api: Api<Queue> = Api::all(self.client.clone());
        for q in d.queues.iter().filter(|q| q.changed) {
            // A merge patch of `allocated` alone: the controllers own the rest of the status,
            // so the two writers never conflict. Resources that went away are set to null.
            let mut allocated: BTreeMap<String, serde_json::Value> = q
                .allocated
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            let before = cache
                .objects()
                .queues
                .iter()
                .find(|x| x.metadata.name.as_deref() == Some(q.name.as_str()))
                .and_then(|x| x.status.as_ref())
                .and_then(|s| s.allocated.clone())
                .unwrap_or_default();
            for k in before.keys() {
                allocated
                    .entry(k.clone())
                    .or_insert(serde_json::Value::Null);
            }
            let patch = json!({"status": {"allocated": allocated}});
            match api
                .patch_status(&q.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    cache.assume_queue(&q.name, |x| {
                        x.status.get_or_insert_with(Default::default).allocated =
                            Some(q.allocated.clone());
                    });
                }
                Err(e) if is_gone(&e) => {}
                Err(e) => {
                    w.status_failures += 1;
                    tracing::warn!(queue = %q.name, error = %e, "could not write queue allocated");
                }
            }
        }
    }
}

/// Runs `futures` as tasks, at most `limit` at a time; results in completion order. Tasks
/// (not a stream borrowing the caller) keep every future owned, and a panic in one is
/// reported as a lost result rather than taking the session down.
async fn bounded<F>(futures: impl Iterator<Item = F>, limit: usize) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(limit.max(1)));
    let mut set = tokio::task::JoinSet::new();
    for f in futures {
        let permits = permits.clone();
        set.spawn(async move {
            let _permit = permits.acquire_owned().await;
            f.await
        });
    }
    let mut out = Vec::new();
    while let Some(r) = set.join_next().await {
        match r {
            Ok(v) => out.push(v),
            Err(e) => tracing::error!(error = %e, "a write task failed"),
        }
    }
    out
}

/// A JSON patch that sets the member at `path` whole (`add` replaces a member that exists,
/// and clears what the new value leaves out, which a merge patch would keep).
pub fn replace_member<S: serde::Serialize>(
    path: &str,
    value: &S,
) -> Result<json_patch::Patch, serde_json::Error> {
    serde_json::from_value(json!([{"op": "add", "path": path, "value": value}]))
}

/// [`replace_member`] of `/status`.
pub fn replace_status<S: serde::Serialize>(
    status: &S,
) -> Result<json_patch::Patch, serde_json::Error> {
    replace_member("/status", status)
}
