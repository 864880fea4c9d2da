//! Binds and evictions, each its own task under one concurrency limit, off the scheduling
//! loop. A pod's bind first writes what must precede it: its GPU devices, then the claims the
//! session bound for it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Error as KubeError};
use serde_json::json;
use tokio::sync::{Semaphore, mpsc};
use volcano_api::NamespacedName;
use volcano_api::event::Event;
use volcano_api::k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use volcano_scheduler::framework::VolumeBinding;
use volcano_scheduler::model::gpu;
use volcano_scheduler::model::storage::{BIND_COMPLETED, BOUND_BY_CONTROLLER, SELECTED_NODE};

use super::Outcome;
use super::binding::{Binder, DecidedPod};
use super::eviction::Evictor;
use crate::events::EventSink;

/// One pod's bind and what precedes it.
pub struct BindJob {
    /// The pod.
    pub key: NamespacedName,
    /// The node.
    pub node: String,
    /// The GPU devices to write on the pod first, if any.
    pub devices: Option<String>,
    /// The claims to bind first, each with the claim's uid if the mirror knows it.
    pub claims: Vec<(NamespacedName, VolumeBinding, Option<String>)>,
    /// The `Scheduled` event to record once bound.
    pub scheduled: Event,
    /// The uid of the pod decided on: the binding is refused if the name is another pod's by
    /// then.
    pub uid: Option<String>,
}

/// Runs writes as tasks, at most `limit` at a time.
#[derive(Clone)]
pub struct PodWrites {
    client: Client,
    permits: Arc<Semaphore>,
    binder: Arc<Binder>,
    evictor: Arc<Evictor>,
    events: EventSink,
    outcomes: mpsc::UnboundedSender<Outcome>,
}

impl PodWrites {
    /// Writes through `client`, `limit` at a time; outcomes go to `outcomes`.
    pub fn new(
        client: Client,
        limit: usize,
        events: EventSink,
        outcomes: mpsc::UnboundedSender<Outcome>,
    ) -> Self {
        PodWrites {
            client,
            permits: Arc::new(Semaphore::new(limit.max(1))),
            binder: Arc::default(),
            evictor: Arc::default(),
            events,
            outcomes,
        }
    }

    /// Starts a bind.
    pub fn bind(&self, job: BindJob) {
        let this = self.clone();
        tokio::spawn(async move {
            let Ok(_permit) = this.permits.clone().acquire_owned().await else {
                return;
            };
            let started = Instant::now();
            let result = this.bind_now(&job).await;
            let took = started.elapsed();
            if result.is_ok() {
                this.events.send(job.scheduled, job.uid.clone());
            }
            let _ = this.outcomes.send(Outcome::Bound {
                key: job.key,
                uid: job.uid,
                node: job.node,
                error: result.err(),
                took,
            });
        });
    }

    async fn bind_now(&self, job: &BindJob) -> Result<(), String> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &job.key.namespace);
        if let Some(ids) = &job.devices {
            let patch = json!({"metadata": {"annotations": {gpu::POD_VGPU_IDS: ids}}});
            if let Err(e) = pods
                .patch(
                    &job.key.name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
            {
                tracing::warn!(pod = %job.key, error = %e, "could not record the pod's GPU devices");
            }
        }
        for (claim, b, uid) in &job.claims {
            if let Err(e) = write_volume_binding(&self.client, claim, b, uid.clone()).await {
                return Err(format!("could not bind the claim {claim}: {e}"));
            }
        }
        let pod = DecidedPod {
            namespace: &job.key.namespace,
            name: &job.key.name,
            uid: job.uid.as_deref(),
        };
        self.binder
            .bind(&self.client, pod, &job.node)
            .await
            .map_err(|e| e.to_string())
    }

    /// Starts the eviction of pod `key` (uid `uid`, where known); `events` (its `Evict` event)
    /// are recorded once it is made.
    pub fn evict(
        &self,
        key: NamespacedName,
        uid: Option<String>,
        events: Vec<(Event, Option<String>)>,
    ) {
        let this = self.clone();
        tokio::spawn(async move {
            let Ok(_permit) = this.permits.clone().acquire_owned().await else {
                return;
            };
            let pod = DecidedPod {
                namespace: &key.namespace,
                name: &key.name,
                uid: uid.as_deref(),
            };
            let r = this.evictor.evict(&this.client, pod).await;
            if r.is_ok() {
                for (e, uid) in events {
                    this.events.send(e, uid);
                }
            }
            // A pod gone already was ended by someone else: no `Evict` event either way. One
            // whose name is another pod's by now is refused (409), a failure like any other.
            let gone = matches!(&r, Err(KubeError::Api(s)) if s.code == 404);
            let _ = this.outcomes.send(Outcome::Evicted {
                key,
                uid,
                error: r.err().filter(|_| !gone).map(|e| e.to_string()),
                gone,
            });
        });
    }
}

/// Binds one claim, before its pod: a chosen volume's `claimRef` (what kube-scheduler itself
/// writes), then the claim's `volumeName` with the `bind-completed` annotation (what the PV
/// controller writes next, so the binding does not wait for it; a running PV controller finds
/// it consistent and sets the phases); a claim to provision gets the `selected-node`
/// annotation its provisioner waits for. A pod whose claims could not be written is not
/// bound, and is pending again next session, as Volcano fails a bind whose volumes failed.
async fn write_volume_binding(
    client: &Client,
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
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
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

/// The claims of `bindings` grouped by the pod whose bind they precede.
pub fn claims_by_pod(
    bindings: &BTreeMap<NamespacedName, VolumeBinding>,
    uid: impl Fn(&NamespacedName) -> Option<String>,
) -> BTreeMap<NamespacedName, Vec<(NamespacedName, VolumeBinding, Option<String>)>> {
    let mut by_pod: BTreeMap<_, Vec<_>> = BTreeMap::new();
    for (claim, b) in bindings {
        by_pod
            .entry(b.pod.clone())
            .or_default()
            .push((claim.clone(), b.clone(), uid(claim)));
    }
    by_pod
}
