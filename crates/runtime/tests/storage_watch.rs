//! The scheduler's watchers see namespaces and the storage kinds, in both tiers, holding only
//! the permissions deploy/ grants it; and it may write what binding a claim writes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Cluster, eventually};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use volcano_api::k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim};
use volcano_api::k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use volcano_runtime::mirror::ClusterMirror;
use volcano_runtime::reflect;
use volcano_runtime::scheduler::SCHEDULER_KINDS;

fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

async fn storage_objects_reach_the_schedulers_mirror(cluster: Cluster) {
    let admin = cluster.client();
    let pp = PostParams::default();
    Api::<Namespace>::all(admin.clone())
        .create(
            &pp,
            &typed(json!({"metadata": {"name": "team", "labels": {"tier": "gold"}}})),
        )
        .await
        .unwrap();
    let class = Api::<StorageClass>::all(admin.clone())
        .create(
            &pp,
            &typed(
                json!({"metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "WaitForFirstConsumer"}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(class.reclaim_policy.as_deref(), Some("Delete"));
    let pv = Api::<PersistentVolume>::all(admin.clone())
        .create(
            &pp,
            &typed(
                json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                "hostPath": {"path": "/tmp/pv1"}}}),
            ),
        )
        .await
        .unwrap();
    // The defaults kube-apiserver gives a volume, which the local server must give too.
    let spec = pv.spec.unwrap_or_default();
    assert_eq!(
        spec.persistent_volume_reclaim_policy.as_deref(),
        Some("Retain")
    );
    assert_eq!(spec.volume_mode.as_deref(), Some("Filesystem"));
    assert_eq!(pv.status.and_then(|s| s.phase).as_deref(), Some("Pending"));
    let claim = Api::<PersistentVolumeClaim>::namespaced(admin.clone(), "team")
        .create(
            &pp,
            &typed(
                json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                "storageClassName": "local", "resources": {"requests": {"storage": "1Gi"}}}}),
            ),
        )
        .await
        .unwrap();
    let spec = claim.spec.unwrap_or_default();
    assert_eq!(spec.volume_mode.as_deref(), Some("Filesystem"));
    assert_eq!(
        claim.status.and_then(|s| s.phase).as_deref(),
        Some("Pending")
    );
    Api::<CSINode>::all(admin.clone())
        .create(
            &pp,
            &typed(json!({"metadata": {"name": "csi-n1"}, "spec": {"drivers": [
                {"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25}}]}})),
        )
        .await
        .unwrap();

    // The scheduler's own writes when it binds: the selected node on the claim, the claim on
    // the volume.
    let sched = cluster.scheduler_client();
    let selected =
        json!({"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n1"}}});
    Api::<PersistentVolumeClaim>::namespaced(sched.clone(), "team")
        .patch("data", &PatchParams::default(), &Patch::Merge(&selected))
        .await
        .expect("the scheduler may annotate a claim");
    let claim_ref = json!({"spec": {"claimRef": {"namespace": "team", "name": "data"}}});
    Api::<PersistentVolume>::all(sched.clone())
        .patch("pv1", &PatchParams::default(), &Patch::Merge(&claim_ref))
        .await
        .expect("the scheduler may point a volume at a claim");

    let (tx, mut rx) = mpsc::channel(reflect::UPDATE_CHANNEL);
    let watchers = reflect::watch(&sched, &SCHEDULER_KINDS, reflect::PodView::Scheduler, &tx);
    let mut mirror = ClusterMirror::default();
    let (ok, _) = eventually(30, async || {
        while let Ok(update) = rx.try_recv() {
            mirror.apply(update);
        }
        let o = mirror.objects();
        let annotated = o.persistent_volume_claims.iter().any(|c| {
            c.metadata.annotations.as_ref().is_some_and(|a| {
                a.get("volume.kubernetes.io/selected-node")
                    .map(String::as_str)
                    == Some("n1")
            })
        });
        let claimed = o.persistent_volumes.iter().any(|v| {
            v.spec
                .as_ref()
                .and_then(|s| s.claim_ref.as_ref())
                .and_then(|r| r.name.as_deref())
                == Some("data")
        });
        let seen = mirror.synced(&SCHEDULER_KINDS)
            && o.namespaces
                .iter()
                .any(|n| n.metadata.name.as_deref() == Some("team"))
            && o.storage_classes.len() == 1
            && o.csi_nodes
                .iter()
                .any(|c| c.metadata.name.as_deref() == Some("csi-n1"))
            && annotated
            && claimed;
        (seen, ())
    })
    .await;
    for w in watchers {
        w.abort();
    }
    let o = mirror.objects();
    assert!(
        ok,
        "the scheduler's mirror never held every storage object: synced {}, {} namespaces, {} classes, {} volumes, {} claims, {} CSINodes",
        mirror.synced(&SCHEDULER_KINDS),
        o.namespaces.len(),
        o.storage_classes.len(),
        o.persistent_volumes.len(),
        o.persistent_volume_claims.len(),
        o.csi_nodes.len()
    );
}

both_tiers!(
    storage_objects_reach_the_scheduler,
    1,
    super::storage_objects_reach_the_schedulers_mirror
);
