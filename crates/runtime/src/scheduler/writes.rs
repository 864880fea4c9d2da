//! A session's decisions, written to the API server: GPU device annotations and the claims
//! bound at scheduling, then binds and
//! evictions with bounded concurrency, nominations, PodGroup status and queue `allocated`
//! where they changed, waiting pods' `PodScheduled` condition where the pod lacks it. Every
//! write that succeeds is assumed in the mirror at once; one that fails is reported and left
//! out, so its task is simply pending again in the next session.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::{Api, EvictParams, Patch, PatchParams, PostParams};
use kube::{Client, Error as KubeError};
use serde_json::json;
use volcano_api::event::{Event, EventType};
use volcano_api::k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use volcano_api::k8s_openapi::jiff::Timestamp;
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_api::{NamespacedName, ObjectKind, ObjectRef};
use volcano_scheduler::cache::set_pod_scheduled;
use volcano_scheduler::framework::close::QueueAllocated;
use volcano_scheduler::framework::{Decisions, POD_SCHEDULED, Unwritten, VolumeBinding};
use volcano_scheduler::model::gpu;
use volcano_scheduler::model::storage::{BIND_COMPLETED, BOUND_BY_CONTROLLER, SELECTED_NODE};

use crate::events::EventSink;
use crate::metrics::SchedulerMetrics;
use crate::mirror::ClusterMirror;

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
    /// Queues the API server answered 404 for, with the resourceVersion the mirror held
    /// then: not written again until the mirror shows that queue changed (recreated), so a
    /// deletion the watch has not delivered yet costs one refused write, not one a session.
    pub gone_queues: BTreeMap<String, Option<String>>,
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

    /// Writes `d`, updating `mirror` with what the API server accepted.
    pub async fn write(&mut self, d: &Decisions, mirror: &mut ClusterMirror) -> Written {
        let mut w = Written::default();
        let mut unwritten = Unwritten::default();
        self.annotate_devices(d, mirror).await;
        let unbound_volumes = self.bind_volumes(d, mirror).await;
        self.bind(d, mirror, &mut w, &unbound_volumes).await;
        self.evict(d, mirror, &mut w, &mut unwritten).await;
        self.nominate(d, mirror).await;
        self.pod_group_status(d, mirror, &mut w, &mut unwritten)
            .await;
        self.queue_allocated(d, mirror, &mut w).await;
        self.pod_conditions(d, mirror, &mut w, &mut unwritten).await;
        // Last, and only for what was written: a PodGroup whose status write failed is
        // decided again next session, and its event with it.
        for e in d.events_after_writes(&unwritten) {
            let uid = mirror.uid_of(&e.object);
            self.events.send(e.clone(), uid);
        }
        w
    }

    async fn annotate_devices(&self, d: &Decisions, mirror: &mut ClusterMirror) {
        let jobs = d.gpu_devices.iter().map(|(key, ids)| {
            let key = key.clone();
            let api = self.pods(&key.namespace);
            let ids = ids.clone();
            async move {
                let patch = json!({"metadata": {"annotations": {gpu::POD_VGPU_IDS: &ids}}});
                let r = api
                    .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await;
                (key, ids, r)
            }
        });
        let results = bounded(jobs, self.concurrency).await;
        for (key, ids, r) in results {
            match r {
                Ok(_) => {
                    mirror.assume_pod(&key, |p| {
                        p.metadata
                            .annotations
                            .get_or_insert_with(Default::default)
                            .insert(gpu::POD_VGPU_IDS.to_string(), ids);
                    });
                }
                Err(e) => {
                    tracing::warn!(pod = %key, error = %e, "could not record the pod's GPU devices")
                }
            }
        }
    }

    /// Binds the claims the session bound at scheduling, before their pods: a chosen volume's
    /// `claimRef` (what kube-scheduler itself writes), then the claim's `volumeName` with the
    /// `bind-completed` annotation (what the PV controller writes next, so the binding does
    /// not wait for it; a running PV controller finds it consistent and sets the phases); a
    /// claim to provision gets the `selected-node` annotation its provisioner waits for.
    /// Returns the pods whose claims could not be written: they are not bound, and are
    /// pending again next session, as Volcano fails a bind whose volumes failed.
    async fn bind_volumes(
        &self,
        d: &Decisions,
        mirror: &ClusterMirror,
    ) -> BTreeSet<NamespacedName> {
        let jobs = d.volume_bindings.iter().map(|(claim, b)| {
            let claim = claim.clone();
            let b = b.clone();
            let client = self.client.clone();
            let uid = mirror
                .indexed()
                .get::<PersistentVolumeClaim>(&claim)
                .and_then(|c| c.metadata.uid.clone());
            async move {
                let r = write_volume_binding(client, &claim, &b, uid).await;
                (claim, b, r)
            }
        });
        let mut failed = BTreeSet::new();
        for (claim, b, r) in bounded(jobs, self.concurrency).await {
            if let Err(e) = r {
                tracing::warn!(claim = %claim, pod = %b.pod, error = %e, "could not bind the claim; the pod goes back to the queue");
                self.metrics.bind_failures.inc();
                failed.insert(b.pod);
            }
        }
        failed
    }

    async fn bind(
        &self,
        d: &Decisions,
        mirror: &mut ClusterMirror,
        w: &mut Written,
        unbound_volumes: &BTreeSet<NamespacedName>,
    ) {
        let jobs = d
            .binds
            .iter()
            .filter(|(key, _)| !unbound_volumes.contains(key))
            .map(|(key, node)| {
                let key = key.clone();
                let api = self.pods(&key.namespace);
                let node = node.clone();
                async move {
                    let started = std::time::Instant::now();
                    let binding = json!({
                        "apiVersion": "v1",
                        "kind": "Binding",
                        "metadata": {"name": key.name, "namespace": key.namespace},
                        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                    });
                    let r: Result<serde_json::Value, KubeError> = api
                        .create_subresource("binding", &key.name, &PostParams::default(), &binding)
                        .await;
                    (key, node, r, started.elapsed())
                }
            });
        let results = bounded(jobs, self.concurrency).await;
        for (key, node, r, took) in results {
            match r {
                Ok(_) => {
                    w.bound += 1;
                    self.metrics.record_bound(took, mirror.pod(&key));
                    let uid = mirror.pod(&key).and_then(|p| p.metadata.uid.clone());
                    mirror.assume_pod(&key, |p| {
                        if let Some(spec) = p.spec.as_mut() {
                            spec.node_name = Some(node.clone());
                        }
                    });
                    self.events.send(
                        Event {
                            message: format!("Successfully assigned {key} to {node}"),
                            object: ObjectRef::new(ObjectKind::Pod, key),
                            type_: EventType::Normal,
                            reason: "Scheduled".to_string(),
                        },
                        uid,
                    );
                }
                Err(e) => {
                    w.bind_failures += 1;
                    self.metrics.bind_failures.inc();
                    tracing::warn!(pod = %key, node = %node, error = %e, "bind failed; the pod goes back to the queue");
                }
            }
        }
    }

    async fn evict(
        &self,
        d: &Decisions,
        mirror: &mut ClusterMirror,
        w: &mut Written,
        unwritten: &mut Unwritten,
    ) {
        let jobs = d.evictions.iter().map(|key| {
            let key = key.clone();
            let api = self.pods(&key.namespace);
            async move {
                let r = api
                    .evict(&key.name, &EvictParams::default())
                    .await
                    .map(|_| ());
                (key, r)
            }
        });
        let results = bounded(jobs, self.concurrency).await;
        for (key, r) in results {
            match r {
                Ok(()) => {
                    w.evicted += 1;
                    self.metrics.preemption_attempts.inc();
                    mirror.assume_pod(&key, |p| {
                        p.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
                    });
                }
                // A pod gone already was ended by someone else: no `Evict` event either way.
                Err(e) => {
                    if !is_gone(&e) {
                        tracing::warn!(pod = %key, error = %e, "eviction failed");
                    }
                    unwritten.evictions.insert(key);
                }
            }
        }
    }

    async fn nominate(&self, d: &Decisions, mirror: &mut ClusterMirror) {
        for (key, node) in &d.nominated {
            let patch = json!({"status": {"nominatedNodeName": node}});
            match self
                .pods(&key.namespace)
                .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    mirror.assume_pod(key, |p| {
                        p.status
                            .get_or_insert_with(Default::default)
                            .nominated_node_name = Some(node.clone());
                    });
                }
                Err(e) if is_gone(&e) => {}
                Err(e) => tracing::warn!(pod = %key, error = %e, "could not nominate a node"),
            }
        }
    }

    async fn pod_group_status(
        &self,
        d: &Decisions,
        mirror: &mut ClusterMirror,
        w: &mut Written,
        unwritten: &mut Unwritten,
    ) {
        for u in d.pod_groups.iter().filter(|u| u.changed) {
            let key = &u.key;
            let api: Api<PodGroup> = Api::namespaced(self.client.clone(), &key.namespace);
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
                .patch(
                    &key.name,
                    &PatchParams::default(),
                    &Patch::Json::<()>(patch),
                )
                .await
            {
                Ok(_) => {
                    mirror.assume_pod_group(key, |pg| pg.status = Some(u.status.clone()));
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

    async fn queue_allocated(
        &mut self,
        d: &Decisions,
        mirror: &mut ClusterMirror,
        w: &mut Written,
    ) {
        let api: Api<Queue> = Api::all(self.client.clone());
        // A queue the mirror no longer holds is gone (or is an implicit one the snapshot adds
        // while it is missing): there is nothing to patch.
        let versions: BTreeMap<String, Option<String>> = mirror
            .objects()
            .queues
            .iter()
            .filter_map(|x| {
                let name = x.metadata.name.clone()?;
                Some((name, x.metadata.resource_version.clone()))
            })
            .collect();
        for q in queues_to_write(d, &versions, &mut self.gone_queues) {
            // A merge patch of `allocated` alone: the controllers own the rest of the status,
            // so the two writers never conflict. Resources that went away are set to null.
            let mut allocated: BTreeMap<String, serde_json::Value> = q
                .allocated
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            let before = mirror
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
                    mirror.assume_queue(&q.name, |x| {
                        x.status.get_or_insert_with(Default::default).allocated =
                            Some(q.allocated.clone());
                    });
                }
                Err(e) if is_gone(&e) => {
                    let rv = versions.get(&q.name).cloned().flatten();
                    self.gone_queues.insert(q.name.clone(), rv);
                }
                Err(e) => {
                    w.status_failures += 1;
                    tracing::warn!(queue = %q.name, error = %e, "could not write queue allocated");
                }
            }
        }
    }
}

impl Writer {
    /// Writes each waiting pod's `PodScheduled=False` condition through pods/status, as a
    /// strategic merge patch of that one condition (the pod's other conditions are kept). The
    /// transition time moves only when the status does, as Kubernetes keeps it.
    async fn pod_conditions(
        &self,
        d: &Decisions,
        mirror: &mut ClusterMirror,
        w: &mut Written,
        unwritten: &mut Unwritten,
    ) {
        let jobs = d.pod_conditions.iter().map(|c| {
            let key = c.key.clone();
            let since = mirror
                .pod(&key)
                .and_then(|p| p.status.as_ref())
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|x| x.type_ == POD_SCHEDULED))
                .filter(|x| x.status == "False")
                .and_then(|x| x.last_transition_time.clone())
                .unwrap_or_else(|| Time(Timestamp::now()));
            let api = self.pods(&key.namespace);
            let c = c.clone();
            async move {
                let patch = json!({"status": {"conditions": [{
                    "type": POD_SCHEDULED,
                    "status": "False",
                    "reason": c.reason,
                    "message": c.message,
                    "lastProbeTime": null,
                    "lastTransitionTime": since,
                }]}});
                let r = api
                    .patch_status(
                        &key.name,
                        &PatchParams::default(),
                        &Patch::Strategic(&patch),
                    )
                    .await
                    .map(|_| ());
                (key, c, r)
            }
        });
        for (key, c, r) in bounded(jobs, self.concurrency).await {
            match r {
                Ok(()) => {
                    mirror.assume_pod(&key, |p| set_pod_scheduled(p, &c));
                }
                Err(e) => {
                    if !is_gone(&e) {
                        w.status_failures += 1;
                        tracing::warn!(pod = %c.key, error = %e, "could not write the pod's PodScheduled condition");
                    }
                    unwritten.pod_conditions.insert(c.key.clone());
                }
            }
        }
    }
}

/// The queues whose `allocated` changed and may be written: held by the mirror (`versions`,
/// name → resourceVersion) and not refused with 404 at the version the mirror still holds.
/// `gone` forgets a queue once the mirror shows it changed or deleted.
fn queues_to_write<'a>(
    d: &'a Decisions,
    versions: &BTreeMap<String, Option<String>>,
    gone: &mut BTreeMap<String, Option<String>>,
) -> Vec<&'a QueueAllocated> {
    gone.retain(|name, rv| versions.get(name).is_some_and(|now| now == rv));
    d.queues
        .iter()
        .filter(|q| q.changed && versions.contains_key(&q.name) && !gone.contains_key(&q.name))
        .collect()
}

/// Runs `futures` as tasks, at most `limit` at a time; results in completion order. Tasks
/// (not a stream borrowing the caller) keep every future owned, and a panic in one is
/// reported as a lost result rather than taking the session down.
/// Writes one claim binding (see [`Writer::bind_volumes`]).
async fn write_volume_binding(
    client: Client,
    claim: &NamespacedName,
    b: &VolumeBinding,
    uid: Option<String>,
) -> Result<(), KubeError> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &claim.namespace);
    let Some(volume) = &b.volume else {
        let patch = json!({"metadata": {"annotations": {SELECTED_NODE: &b.node}}});
        claims
            .patch(&claim.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        return Ok(());
    };
    // The mirror normally knows the claim's UID; ask the API server only when it does not.
    let uid = match uid {
        Some(u) => Some(u),
        None => claims.get(&claim.name).await?.metadata.uid,
    };
    let volumes: Api<PersistentVolume> = Api::all(client);
    let pv_patch = json!({
        "metadata": {"annotations": {BOUND_BY_CONTROLLER: "yes"}},
        "spec": {"claimRef": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": &claim.namespace,
            "name": &claim.name,
            "uid": uid,
        }},
    });
    volumes
        .patch(volume, &PatchParams::default(), &Patch::Merge(&pv_patch))
        .await?;
    let pvc_patch = json!({
        "metadata": {"annotations": {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}},
        "spec": {"volumeName": volume},
    });
    claims
        .patch(
            &claim.name,
            &PatchParams::default(),
            &Patch::Merge(&pvc_patch),
        )
        .await?;
    Ok(())
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(name: &str) -> QueueAllocated {
        QueueAllocated {
            name: name.to_string(),
            state: "Open".to_string(),
            allocated: Default::default(),
            changed: true,
        }
    }

    #[test]
    fn a_queue_that_is_gone_is_not_written_and_a_404_is_not_retried() {
        let d = Decisions {
            queues: vec![queue("kept"), queue("deleted"), queue("refused")],
            ..Default::default()
        };
        let mut versions: BTreeMap<String, Option<String>> = [
            ("kept".to_string(), Some("1".to_string())),
            ("refused".to_string(), Some("5".to_string())),
        ]
        .into();
        let names = |v: Vec<&QueueAllocated>| v.iter().map(|q| q.name.clone()).collect::<Vec<_>>();
        let mut gone = BTreeMap::new();
        // The implicit queue the snapshot adds while the cluster has none is not written.
        assert_eq!(
            names(queues_to_write(&d, &versions, &mut gone)),
            ["kept", "refused"]
        );
        // `refused` answered 404 (deleted, the watch has not said so yet): not written again.
        gone.insert("refused".to_string(), Some("5".to_string()));
        assert_eq!(names(queues_to_write(&d, &versions, &mut gone)), ["kept"]);
        assert_eq!(names(queues_to_write(&d, &versions, &mut gone)), ["kept"]);
        // Recreated under the same name: written again.
        versions.insert("refused".to_string(), Some("9".to_string()));
        assert_eq!(
            names(queues_to_write(&d, &versions, &mut gone)),
            ["kept", "refused"]
        );
        assert!(gone.is_empty());
    }
}
