//! The clusters the inter-pod affinity tests build: nodes with hostname and zone labels,
//! running pods and one incoming pod with labels and affinity, through the real cache.

#![allow(clippy::expect_used)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Node, Pod, PodAffinity, PodAffinityTerm, PodAntiAffinity,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use volcano_api::{Objects, k8s_openapi};
use volcano_testkit::build::{cluster, gang, node, pod};

use crate::cache::{CacheOptions, build_snapshot};
use crate::model::{NodeId, Snapshot, TaskId};

/// Labels from pairs.
pub(in crate::plugins) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A term selecting `key <op> values` over `topology`.
pub(in crate::plugins) fn term(
    key: &str,
    op: &str,
    values: &[&str],
    topology: &str,
) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.into(),
                operator: op.into(),
                values: Some(values.iter().map(|v| v.to_string()).collect()),
            }]),
            ..Default::default()
        }),
        topology_key: topology.into(),
        ..Default::default()
    }
}

/// Required affinity with `required` terms.
pub(in crate::plugins) fn affinity(required: Vec<PodAffinityTerm>) -> Affinity {
    Affinity {
        pod_affinity: Some(PodAffinity {
            required_during_scheduling_ignored_during_execution: Some(required),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Required anti-affinity with `required` terms.
pub(in crate::plugins) fn anti_affinity(required: Vec<PodAffinityTerm>) -> Affinity {
    Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: Some(required),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `p` with labels `l` and affinity `a`.
pub(in crate::plugins) fn labelled(mut p: Pod, l: &[(&str, &str)], a: Option<Affinity>) -> Pod {
    p.metadata.labels = Some(labels(l));
    if let Some(spec) = p.spec.as_mut() {
        spec.affinity = a;
    }
    p
}

/// A node named `name` with its hostname label and, optionally, a zone.
pub(in crate::plugins) fn host(name: &str, zone: Option<&str>) -> Node {
    let mut b = node(name)
        .cpu(8)
        .mem_gi(16)
        .label("kubernetes.io/hostname", name);
    if let Some(z) = zone {
        b = b.label("zone", z);
    }
    b.build()
}

/// Nodes n1 (zone z1), n2 (z1), n3 (z2), n4 (no zone label).
pub(in crate::plugins) fn four_nodes() -> Objects {
    let mut objs = cluster().objects();
    objs.nodes = vec![
        host("n1", Some("z1")),
        host("n2", Some("z1")),
        host("n3", Some("z2")),
        host("n4", None),
    ];
    objs
}

/// Adds the pod `ns/name` running on `on`.
pub(in crate::plugins) fn running(
    objs: &mut Objects,
    ns: &str,
    name: &str,
    on: &str,
    l: &[(&str, &str)],
    a: Option<Affinity>,
) {
    let p = pod(ns, name).cpu_milli(100).on(on).running().build();
    objs.pods.push(labelled(p, l, a).into());
}

/// The pod the verdicts are for: `ns/incoming`, pending in its own group.
pub(in crate::plugins) fn incoming(
    objs: &mut Objects,
    ns: &str,
    l: &[(&str, &str)],
    a: Option<Affinity>,
) {
    let (pg, _) = gang(ns, "incoming-group").min(1).build();
    objs.pod_groups.push(pg);
    let p = pod(ns, "incoming")
        .cpu_milli(100)
        .group("incoming-group")
        .build();
    objs.pods.push(labelled(p, l, a).into());
}

/// The snapshot the cache makes of `objs`.
pub(in crate::plugins) fn snapshot(objs: &Objects) -> Snapshot {
    build_snapshot(objs, &CacheOptions::default()).expect("test objects are valid")
}

/// The task named `name`.
pub(in crate::plugins) fn task(s: &Snapshot, name: &str) -> TaskId {
    TaskId(
        s.tasks
            .iter()
            .position(|t| t.name == name)
            .expect("task exists") as u32,
    )
}

/// The node named `name`.
pub(in crate::plugins) fn node_id(s: &Snapshot, name: &str) -> NodeId {
    s.node_index[name]
}
