//! Volumes as a user of the cluster sees them: a pod goes only where its volumes can be used,
//! a claim still to bind gets a volume (or a node to provision for) when its pod is bound, no
//! two pods of a session get the same volume, a gang that does not fit gives its choices
//! back, a missing claim keeps the pod waiting with that reason, and CSI attach limits hold.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use support::*;
use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{
    CSIPersistentVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, PersistentVolumeSpec, Volume, VolumeNodeAffinity,
    VolumeResourceRequirements,
};
use volcano_api::k8s_openapi::api::storage::v1::{
    CSINode, CSINodeDriver, CSINodeSpec, StorageClass, VolumeNodeResources,
};
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_scheduler::conf::{DEFAULT_SCHEDULER_CONF, SchedulerConf};
use volcano_scheduler::framework::{Decisions, VolumeBinding};
use volcano_testkit::build::*;

const ZONE: &str = "topology.kubernetes.io/zone";

fn meta(namespace: Option<&str>, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        uid: Some(format!("uid-{name}")),
        ..Default::default()
    }
}

fn storage(amount: &str) -> BTreeMap<String, Quantity> {
    BTreeMap::from([("storage".to_string(), Quantity(amount.to_string()))])
}

/// A claim in `ns` of class `class` asking `size`, bound to `volume` when given.
fn claim(
    ns: &str,
    name: &str,
    class: &str,
    size: &str,
    volume: Option<&str>,
) -> PersistentVolumeClaim {
    let mut m = meta(Some(ns), name);
    if volume.is_some() {
        m.annotations = Some(BTreeMap::from([(
            "pv.kubernetes.io/bind-completed".to_string(),
            "yes".to_string(),
        )]));
    }
    PersistentVolumeClaim {
        metadata: m,
        spec: Some(PersistentVolumeClaimSpec {
            storage_class_name: Some(class.to_string()),
            access_modes: Some(vec!["ReadWriteOnce".to_string()]),
            volume_name: volume.map(str::to_string),
            resources: Some(VolumeResourceRequirements {
                requests: Some(storage(size)),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    }
}

/// A volume of class `class` and `size`, reachable only from nodes of `zone` when given.
fn volume(name: &str, class: &str, size: &str, zone: Option<&str>) -> PersistentVolume {
    PersistentVolume {
        metadata: meta(None, name),
        spec: Some(PersistentVolumeSpec {
            storage_class_name: Some(class.to_string()),
            access_modes: Some(vec!["ReadWriteOnce".to_string()]),
            capacity: Some(storage(size)),
            csi: Some(CSIPersistentVolumeSource {
                driver: "csi.example.com".to_string(),
                volume_handle: format!("handle-{name}"),
                ..Default::default()
            }),
            node_affinity: zone.map(|z| VolumeNodeAffinity {
                required: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Some(vec![NodeSelectorRequirement {
                            key: ZONE.to_string(),
                            operator: "In".to_string(),
                            values: Some(vec![z.to_string()]),
                        }]),
                        ..Default::default()
                    }],
                }),
            }),
            ..Default::default()
        }),
        status: None,
    }
}

/// A class binding at first consumer, provisioned by `provisioner`.
fn wffc_class(name: &str, provisioner: &str) -> StorageClass {
    StorageClass {
        metadata: meta(None, name),
        provisioner: provisioner.to_string(),
        volume_binding_mode: Some("WaitForFirstConsumer".to_string()),
        ..Default::default()
    }
}

/// Node `node` attaches at most `count` volumes of the test's CSI driver.
fn csi_limit(node: &str, count: i32) -> CSINode {
    CSINode {
        metadata: meta(None, node),
        spec: CSINodeSpec {
            drivers: vec![CSINodeDriver {
                name: "csi.example.com".to_string(),
                node_id: node.to_string(),
                allocatable: Some(VolumeNodeResources { count: Some(count) }),
                ..Default::default()
            }],
        },
    }
}

/// Gives pod `ns/pod` a volume using claim `claim`.
fn mount(objs: &mut Objects, ns: &str, pod: &str, claim: &str) {
    let p = objs
        .pods
        .iter_mut()
        .map(Arc::make_mut)
        .find(|p| {
            p.metadata.name.as_deref() == Some(pod) && p.metadata.namespace.as_deref() == Some(ns)
        })
        .expect("the test's pod");
    let spec = p.spec.as_mut().expect("the pod's spec");
    spec.volumes.get_or_insert_with(Vec::new).push(Volume {
        name: format!("v-{claim}"),
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: claim.to_string(),
            read_only: None,
        }),
        ..Default::default()
    });
}

fn bound_node(d: &Decisions, ns: &str, pod: &str) -> Option<String> {
    d.binds
        .iter()
        .find(|(p, _)| *p == key(ns, pod))
        .map(|(_, n)| n.clone())
}

fn zoned_nodes() -> volcano_testkit::build::Cluster {
    cluster()
        .with(node("n1").cpu(8).mem_gi(16).label(ZONE, "a"))
        .with(node("n2").cpu(8).mem_gi(16).label(ZONE, "b"))
}

fn predicates_only() -> SchedulerConf {
    conf(volcano_testkit::conf::predicates_only())
}

#[test]
fn a_pod_goes_where_its_bound_volume_is() {
    let mut objs = zoned_nodes()
        .with(gang("ns", "web").pods(1, 1000, GI))
        .objects();
    objs.persistent_volumes
        .push(volume("pv-b", "local", "10Gi", Some("b")));
    objs.persistent_volume_claims
        .push(claim("ns", "data", "local", "10Gi", Some("pv-b")));
    mount(&mut objs, "ns", "web-0", "data");
    let d = run_session_n(&objs, &predicates_only(), 1);
    assert_eq!(bound_node(&d, "ns", "web-0").as_deref(), Some("n2"));
    assert!(
        d.volume_bindings.is_empty(),
        "a bound claim is not bound again"
    );
}

#[test]
fn a_volume_labelled_with_a_zone_keeps_its_pod_in_that_zone() {
    let mut objs = zoned_nodes()
        .with(gang("ns", "web").pods(1, 1000, GI))
        .objects();
    let mut pv = volume("pv-b", "local", "10Gi", None);
    pv.metadata.labels = Some(BTreeMap::from([(ZONE.to_string(), "b".to_string())]));
    objs.persistent_volumes.push(pv);
    objs.persistent_volume_claims
        .push(claim("ns", "data", "local", "10Gi", Some("pv-b")));
    mount(&mut objs, "ns", "web-0", "data");
    let d = run_session_n(&objs, &predicates_only(), 1);
    assert_eq!(bound_node(&d, "ns", "web-0").as_deref(), Some("n2"));
}

#[test]
fn a_missing_claim_keeps_the_pod_pending_and_says_so() {
    let mut objs = zoned_nodes()
        .with(gang("ns", "web").pods(1, 1000, GI))
        .objects();
    mount(&mut objs, "ns", "web-0", "data");
    let d = run_session_n(&objs, &conf(DEFAULT_SCHEDULER_CONF), 1);
    assert!(d.binds.is_empty());
    let why = &d.unschedulable[&key("ns", "web")].message;
    assert!(
        why.contains("persistentvolumeclaim \"data\" not found"),
        "why-pending message: {why}"
    );
}

#[test]
fn an_unbound_immediate_claim_keeps_the_pod_pending() {
    let mut objs = zoned_nodes()
        .with(gang("ns", "web").pods(1, 1000, GI))
        .objects();
    objs.storage_classes.push(StorageClass {
        volume_binding_mode: Some("Immediate".to_string()),
        ..wffc_class("fast", "csi.example.com")
    });
    objs.persistent_volume_claims
        .push(claim("ns", "data", "fast", "1Gi", None));
    mount(&mut objs, "ns", "web-0", "data");
    let d = run_session_n(&objs, &predicates_only(), 1);
    assert!(d.binds.is_empty());
    let why = &d.unschedulable[&key("ns", "web")].message;
    assert!(
        why.contains("pod has unbound immediate PersistentVolumeClaims"),
        "why-pending message: {why}"
    );
}

#[test]
fn a_waiting_claim_takes_the_smallest_volume_its_node_reaches_and_is_bound_with_the_pod() {
    let mut objs = zoned_nodes()
        .with(gang("ns", "web").pods(1, 1000, GI))
        .objects();
    objs.storage_classes
        .push(wffc_class("local", "kubernetes.io/no-provisioner"));
    objs.persistent_volumes.extend([
        volume("pv-a-big", "local", "50Gi", Some("a")),
        volume("pv-a-small", "local", "20Gi", Some("a")),
        volume("pv-a-tiny", "local", "1Gi", Some("a")),
        volume("pv-b", "local", "10Gi", Some("b")),
    ]);
    objs.persistent_volume_claims
        .push(claim("ns", "data", "local", "5Gi", None));
    mount(&mut objs, "ns", "web-0", "data");
    let d = run_session_n(&objs, &predicates_only(), 1);
    assert_eq!(bound_node(&d, "ns", "web-0").as_deref(), Some("n1"));
    assert_eq!(
        d.volume_bindings.get(&key("ns", "data")),
        Some(&VolumeBinding {
            pod: key("ns", "web-0"),
            node: "n1".to_string(),
            volume: Some("pv-a-small".to_string()),
        })
    );
    // Applied as the cluster would: the next session sees a bound claim.
    apply(&mut objs, &d);
    let pvc = &objs.persistent_volume_claims[0];
    assert_eq!(
        pvc.spec.as_ref().and_then(|s| s.volume_name.as_deref()),
        Some("pv-a-small")
    );
    let pv = objs
        .persistent_volumes
        .iter()
        .find(|v| v.metadata.name.as_deref() == Some("pv-a-small"))
        .unwrap();
    let r = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()).unwrap();
    assert_eq!(
        (r.namespace.as_deref(), r.name.as_deref(), r.uid.as_deref()),
        (Some("ns"), Some("data"), Some("uid-data"))
    );
    let again = run_session_n(&objs, &predicates_only(), 2);
    assert!(again.volume_bindings.is_empty());
}

#[test]
fn a_waiting_claim_with_only_a_volume_in_the_other_zone_moves_its_pod_there() {
    let mut objs = zoned_nodes()
        .with(gang("ns", "web").pods(1, 1000, GI))
        .objects();
    objs.storage_classes
        .push(wffc_class("local", "kubernetes.io/no-provisioner"));
    objs.persistent_volumes
        .push(volume("pv-b", "local", "10Gi", Some("b")));
    objs.persistent_volume_claims
        .push(claim("ns", "data", "local", "5Gi", None));
    mount(&mut objs, "ns", "web-0", "data");
    let d = run_session_n(&objs, &predicates_only(), 1);
    assert_eq!(bound_node(&d, "ns", "web-0").as_deref(), Some("n2"));
    assert_eq!(
        d.volume_bindings[&key("ns", "data")].volume.as_deref(),
        Some("pv-b")
    );
}

#[test]
fn a_class_with_a_provisioner_provisions_for_the_chosen_node() {
    let mut objs = zoned_nodes()
        .with(gang("ns", "web").pods(1, 1000, GI))
        .objects();
    objs.storage_classes
        .push(wffc_class("fast", "csi.example.com"));
    objs.persistent_volume_claims
        .push(claim("ns", "data", "fast", "5Gi", None));
    mount(&mut objs, "ns", "web-0", "data");
    let d = run_session_n(&objs, &predicates_only(), 1);
    assert_eq!(
        d.volume_bindings.get(&key("ns", "data")),
        Some(&VolumeBinding {
            pod: key("ns", "web-0"),
            node: "n1".to_string(),
            volume: None,
        })
    );
    apply(&mut objs, &d);
    let annotations = objs.persistent_volume_claims[0]
        .metadata
        .annotations
        .clone()
        .unwrap_or_default();
    assert_eq!(
        annotations
            .get("volume.kubernetes.io/selected-node")
            .map(String::as_str),
        Some("n1")
    );
}

#[test]
fn two_pods_one_volume_binds_one_and_the_other_waits_saying_why() {
    let mut objs = zoned_nodes()
        .with(gang("ns", "one").pods(1, 1000, GI))
        .with(gang("ns", "two").pods(1, 1000, GI))
        .objects();
    objs.storage_classes
        .push(wffc_class("local", "kubernetes.io/no-provisioner"));
    objs.persistent_volumes
        .push(volume("pv", "local", "10Gi", None));
    objs.persistent_volume_claims.extend([
        claim("ns", "c1", "local", "5Gi", None),
        claim("ns", "c2", "local", "5Gi", None),
    ]);
    mount(&mut objs, "ns", "one-0", "c1");
    mount(&mut objs, "ns", "two-0", "c2");
    let d = run_session_n(&objs, &predicates_only(), 1);
    assert_eq!(d.binds.len(), 1, "binds: {:?}", d.binds);
    assert_eq!(d.volume_bindings.len(), 1);
    let waiting = if bound_node(&d, "ns", "one-0").is_some() {
        "two"
    } else {
        "one"
    };
    let why = &d.unschedulable[&key("ns", waiting)].message;
    assert!(
        why.contains("2 node(s) didn't find available persistent volumes to bind"),
        "why-pending message: {why}"
    );
}

#[test]
fn a_gang_that_does_not_fit_gives_its_volume_back() {
    let mut objs = zoned_nodes()
        .with(priority_class("high", 1000))
        .with(
            gang("ns", "big")
                .min(2)
                .priority_class("high")
                .pods(2, 6000, GI),
        )
        .with(gang("ns", "small").pods(1, 1000, GI))
        .objects();
    // One of the gang's pods can go nowhere: it asks more CPU than any node has.
    let huge = objs
        .pods
        .iter_mut()
        .map(Arc::make_mut)
        .find(|p| p.metadata.name.as_deref() == Some("big-1"))
        .unwrap();
    huge.spec.as_mut().unwrap().containers[0]
        .resources
        .as_mut()
        .unwrap()
        .requests
        .as_mut()
        .unwrap()
        .insert("cpu".to_string(), Quantity("64".to_string()));
    objs.storage_classes
        .push(wffc_class("local", "kubernetes.io/no-provisioner"));
    objs.persistent_volumes
        .push(volume("pv", "local", "10Gi", None));
    objs.persistent_volume_claims.extend([
        claim("ns", "gang-data", "local", "5Gi", None),
        claim("ns", "small-data", "local", "5Gi", None),
    ]);
    mount(&mut objs, "ns", "big-0", "gang-data");
    mount(&mut objs, "ns", "small-0", "small-data");
    let d = run_session_n(&objs, &predicates_only(), 1);
    assert_eq!(bound_node(&d, "ns", "big-0"), None);
    assert!(bound_node(&d, "ns", "small-0").is_some());
    assert_eq!(
        d.volume_bindings.keys().collect::<Vec<_>>(),
        [&key("ns", "small-data")]
    );
}

#[test]
fn a_node_at_its_csi_attach_limit_takes_no_more_volumes() {
    let mut objs = zoned_nodes()
        .with(gang("ns", "one").pods(1, 1000, GI))
        .with(gang("ns", "two").pods(1, 1000, GI))
        .objects();
    objs.csi_nodes
        .extend([csi_limit("n1", 1), csi_limit("n2", 1)]);
    objs.persistent_volumes.extend([
        volume("pv1", "local", "10Gi", None),
        volume("pv2", "local", "10Gi", None),
    ]);
    objs.persistent_volume_claims.extend([
        claim("ns", "c1", "local", "10Gi", Some("pv1")),
        claim("ns", "c2", "local", "10Gi", Some("pv2")),
    ]);
    mount(&mut objs, "ns", "one-0", "c1");
    mount(&mut objs, "ns", "two-0", "c2");
    let d = run_session_n(&objs, &predicates_only(), 1);
    let mut nodes: Vec<String> = d.binds.iter().map(|(_, n)| n.clone()).collect();
    nodes.sort();
    assert_eq!(nodes, ["n1", "n2"]);
}

#[test]
fn pods_sharing_one_volume_attach_it_once() {
    let mut objs = zoned_nodes()
        .with(gang("ns", "one").pods(1, 1000, GI))
        .with(gang("ns", "two").pods(1, 1000, GI))
        .objects();
    objs.csi_nodes
        .extend([csi_limit("n1", 1), csi_limit("n2", 0)]);
    objs.persistent_volumes
        .push(volume("pv1", "local", "10Gi", None));
    objs.persistent_volume_claims
        .push(claim("ns", "c1", "local", "10Gi", Some("pv1")));
    mount(&mut objs, "ns", "one-0", "c1");
    mount(&mut objs, "ns", "two-0", "c1");
    let d = run_session_n(&objs, &predicates_only(), 1);
    assert_eq!(bound_node(&d, "ns", "one-0").as_deref(), Some("n1"));
    assert_eq!(bound_node(&d, "ns", "two-0").as_deref(), Some("n1"));
}

#[test]
fn preemption_frees_a_csi_attachment_for_a_higher_priority_pod() {
    let mut objs = cluster()
        .with(queue("q1").weight(1))
        .with(priority_class("low", 10))
        .with(priority_class("high", 1000))
        .with(node("n1").cpu(8).mem_gi(16).max_pods(110))
        .with(
            gang("ns", "victim")
                .queue("q1")
                .priority_class("low")
                .pods(1, 1000, GI),
        )
        .with(
            gang("ns", "urgent")
                .queue("q1")
                .priority_class("high")
                .pods(1, 1000, GI),
        )
        .objects();
    for pg in &mut objs.pod_groups {
        let phase = match pg.metadata.name.as_deref() {
            Some("victim") => "Running",
            _ => "Inqueue",
        };
        pg.status = Some(volcano_api::scheduling::PodGroupStatus {
            phase: phase.to_string(),
            ..Default::default()
        });
    }
    let victim = objs
        .pods
        .iter_mut()
        .map(Arc::make_mut)
        .find(|p| p.metadata.name.as_deref() == Some("victim-0"))
        .unwrap();
    victim.spec.as_mut().unwrap().node_name = Some("n1".to_string());
    victim.status.as_mut().unwrap().phase = Some("Running".to_string());
    objs.csi_nodes.push(csi_limit("n1", 1));
    objs.persistent_volumes.extend([
        volume("pv1", "local", "10Gi", None),
        volume("pv2", "local", "10Gi", None),
    ]);
    objs.persistent_volume_claims.extend([
        claim("ns", "c1", "local", "10Gi", Some("pv1")),
        claim("ns", "c2", "local", "10Gi", Some("pv2")),
    ]);
    mount(&mut objs, "ns", "victim-0", "c1");
    mount(&mut objs, "ns", "urgent-0", "c2");
    let d = run_session_n(&objs, &conf(volcano_testkit::conf::evicting()), 1);
    // Only the attachment limit keeps the urgent pod off n1: evicting the victim frees it.
    assert_eq!(d.evictions, [key("ns", "victim-0")]);
}

#[test]
fn pods_sharing_a_waiting_claim_all_follow_the_volume_the_first_one_chose() {
    let mut objs = zoned_nodes()
        .with(gang("ns", "one").pods(1, 1000, GI))
        .with(gang("ns", "two").pods_like(1, template().cpu(1).mem_gi(1).node_selector(ZONE, "b")))
        .objects();
    objs.storage_classes
        .push(wffc_class("local", "kubernetes.io/no-provisioner"));
    objs.persistent_volumes.extend([
        volume("pv-a", "local", "10Gi", Some("a")),
        volume("pv-b", "local", "10Gi", Some("b")),
    ]);
    objs.persistent_volume_claims
        .push(claim("ns", "shared", "local", "5Gi", None));
    mount(&mut objs, "ns", "one-0", "shared");
    mount(&mut objs, "ns", "two-0", "shared");
    let d = run_session_n(&objs, &predicates_only(), 1);
    assert_eq!(d.volume_bindings.len(), 1);
    let chosen = d.volume_bindings[&key("ns", "shared")].volume.clone();
    let zone_node = match chosen.as_deref() {
        Some("pv-a") => "n1",
        Some("pv-b") => "n2",
        other => panic!("unexpected choice {other:?}"),
    };
    assert!(!d.binds.is_empty());
    for (pod, node) in &d.binds {
        assert_eq!(node, zone_node, "{pod} is away from its volume {chosen:?}");
    }
}
