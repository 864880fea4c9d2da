//! A session's decisions written to the store, as the API server would take the scheduler's
//! writes: each pod a decision touches is changed once (bound, nominated, its
//! `PodScheduled` condition, its GPU devices) or deleted (evicted; frozen time makes the
//! termination instant), PodGroup status and queue `allocated` are written where they moved.
//! Claims bound at scheduling are written before the pods: the chosen volume and its claim
//! bound to each other, or the claim annotated with the node to provision for.
//! Every change is an ordinary store change, so the scheduler's cache follows it from the
//! journal like any other.

use std::collections::{BTreeMap, HashMap};

use volcano_api::k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_api::{NamespacedName, WatchEvent};
use volcano_scheduler::cache::{
    bind_claim, bind_pod, bind_volume_to_claim, nominate_pod, select_node, set_gpu_devices,
    set_pod_scheduled,
};
use volcano_scheduler::framework::{Decisions, PodUnschedulable};

use crate::store::Store;

/// Writes the claims the session bound; no controller follows them, so their events go to the
/// journal only. A claim or volume gone from the store is skipped: the pod is bound all the
/// same, as a cluster whose claim vanished would leave it.
fn apply_volume_bindings(store: &mut Store, d: &Decisions) {
    for (claim, b) in &d.volume_bindings {
        match &b.volume {
            Some(v) => {
                let uid = store
                    .indexed()
                    .get::<PersistentVolumeClaim>(claim)
                    .and_then(|c| c.metadata.uid.clone());
                let _ = store
                    .modify::<PersistentVolume>(&NamespacedName::cluster(v.as_str()), |pv| {
                        bind_volume_to_claim(pv, claim, uid)
                    });
                let _ = store.modify::<PersistentVolumeClaim>(claim, |pvc| bind_claim(pvc, v));
            }
            None => {
                let _ =
                    store.modify::<PersistentVolumeClaim>(claim, |pvc| select_node(pvc, &b.node));
            }
        }
    }
}

/// What the decisions do to one pod.
#[derive(Default)]
struct PodWrites<'d> {
    bind: Option<&'d str>,
    nominate: Option<&'d str>,
    condition: Option<&'d PodUnschedulable>,
    devices: Option<&'d str>,
    evict: bool,
}

/// Applies `d` to the store; the watch events the controllers are to see: the pods touched
/// (those still there in store order, then the evicted by name), then the PodGroups whose
/// status moved. Queue `allocated` changes go to the journal only: no controller follows them.
pub fn apply_decisions(store: &mut Store, d: &Decisions) -> Vec<WatchEvent> {
    apply_volume_bindings(store, d);
    let mut pods: HashMap<&NamespacedName, PodWrites<'_>> = HashMap::new();
    for (p, n) in &d.binds {
        pods.entry(p).or_default().bind = Some(n);
    }
    for (p, n) in &d.nominated {
        pods.entry(p).or_default().nominate = Some(n);
    }
    for c in &d.pod_conditions {
        pods.entry(&c.key).or_default().condition = Some(c);
    }
    for (p, v) in &d.gpu_devices {
        pods.entry(p).or_default().devices = Some(v);
    }
    for p in &d.evictions {
        pods.entry(p).or_default().evict = true;
    }
    let mut kept: Vec<(usize, &NamespacedName)> = Vec::new();
    // Deleted in the order of their printed names, as they always were.
    let mut evicted: BTreeMap<String, &NamespacedName> = BTreeMap::new();
    for (&key, w) in &pods {
        let Some(at) = store.indexed().position::<Pod>(key) else {
            continue;
        };
        if w.evict {
            evicted.insert(key.to_string(), key);
        } else if w.bind.is_some() || w.nominate.is_some() || w.condition.is_some() {
            kept.push((at, key));
        }
    }
    kept.sort_unstable();
    let mut watched = Vec::new();
    for (_, key) in kept {
        let w = &pods[key];
        let changed = store.modify::<Pod>(key, |p| {
            if let Some(n) = w.bind {
                bind_pod(p, n);
            }
            if let Some(n) = w.nominate {
                nominate_pod(p, n);
            }
            if let Some(c) = w.condition {
                set_pod_scheduled(p, c);
            }
            if let Some(v) = w.devices {
                set_gpu_devices(p, v);
            }
        });
        watched.extend(changed.ok());
    }
    for key in evicted.values() {
        watched.extend(store.delete::<Pod>(key).ok());
    }
    let statuses: HashMap<&NamespacedName, _> =
        d.pod_groups.iter().map(|u| (&u.key, &u.status)).collect();
    let mut moved: Vec<(usize, &NamespacedName)> = statuses
        .iter()
        .filter_map(|(&key, status)| {
            let pg = store.indexed().get::<PodGroup>(key)?;
            let at = store.indexed().position::<PodGroup>(key)?;
            (pg.status.as_ref() != Some(*status)).then_some((at, key))
        })
        .collect();
    moved.sort_unstable();
    for (_, key) in moved {
        let status = statuses[key].clone();
        watched.extend(
            store
                .modify::<PodGroup>(key, |pg| pg.status = Some(status))
                .ok(),
        );
    }
    for q in &d.queues {
        let key = NamespacedName::cluster(q.name.as_str());
        let unchanged = store.indexed().get::<Queue>(&key).is_some_and(|held| {
            held.status.as_ref().and_then(|s| s.allocated.as_ref()) == Some(&q.allocated)
        });
        if !unchanged {
            let _ = store.modify::<Queue>(&key, |held| {
                held.status.get_or_insert_with(Default::default).allocated =
                    Some(q.allocated.clone());
            });
        }
    }
    store.events.extend(d.events.iter().cloned());
    watched
}

#[cfg(test)]
mod tests {
    use super::*;
    use volcano_api::Objects;
    use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use volcano_scheduler::framework::VolumeBinding;

    fn meta(ns: Option<&str>, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: ns.map(Into::into),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        }
    }

    #[test]
    fn claims_bound_at_scheduling_are_written_to_the_store() {
        let mut store = Store::new(Objects {
            persistent_volumes: vec![PersistentVolume {
                metadata: meta(None, "pv"),
                ..Default::default()
            }],
            persistent_volume_claims: vec![
                PersistentVolumeClaim {
                    metadata: meta(Some("ns"), "static"),
                    ..Default::default()
                },
                PersistentVolumeClaim {
                    metadata: meta(Some("ns"), "dynamic"),
                    ..Default::default()
                },
            ],
            ..Default::default()
        });
        let binding = |volume: Option<&str>| VolumeBinding {
            pod: NamespacedName::new("ns", "p"),
            node: "n1".into(),
            volume: volume.map(Into::into),
        };
        let d = Decisions {
            volume_bindings: [
                (NamespacedName::new("ns", "static"), binding(Some("pv"))),
                (NamespacedName::new("ns", "dynamic"), binding(None)),
            ]
            .into(),
            ..Default::default()
        };
        apply_decisions(&mut store, &d);
        let objs = store.objects();
        let claim_ref = objs.persistent_volumes[0]
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.as_ref())
            .expect("the volume names its claim");
        assert_eq!(
            (claim_ref.name.as_deref(), claim_ref.uid.as_deref()),
            (Some("static"), Some("uid-static"))
        );
        let claim = |name: &str| {
            objs.persistent_volume_claims
                .iter()
                .find(|c| c.metadata.name.as_deref() == Some(name))
                .expect("the claim")
        };
        assert_eq!(
            claim("static")
                .spec
                .as_ref()
                .and_then(|s| s.volume_name.as_deref()),
            Some("pv")
        );
        assert_eq!(
            claim("dynamic")
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("volume.kubernetes.io/selected-node"))
                .map(String::as_str),
            Some("n1")
        );
    }
}
