use std::collections::BTreeMap;

use serde_json::json;
use volcano_api::k8s_openapi::api::core::v1::Node;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::topology::{
    ExactMatch, HyperNode, HyperNodeSpec, HyperNodeStatus, MemberSelector, MemberSpec,
};
use volcano_api::{ObjectStore, Objects};

use super::config::{LabelDiscovery, NetworkTopologyConfig};
use super::label::SOURCE_LABEL;
use super::{HyperNodeController, HyperNodeKey};
use crate::change::Change;
use crate::time::Instant;
use crate::view::ClusterView;
use crate::workqueue::RetryPolicy;

const HOST: &str = "kubernetes.io/hostname";
const CLUSTER: &str = "volcano.sh/hypercluster";
const SWITCH: &str = "volcano.sh/hypernode";

fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    let mut l: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    l.insert(HOST.to_string(), name.to_string());
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(l),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn parse(conf: serde_json::Value) -> Result<Option<LabelDiscovery>, super::ConfigError> {
    let config: NetworkTopologyConfig = serde_json::from_value(conf).unwrap();
    LabelDiscovery::from_config(&config)
}

/// Volcano's documented A3 example: hypercluster over hypernode over the host.
fn a3() -> LabelDiscovery {
    parse(json!({"networkTopologyDiscovery": [{
        "source": "label", "enabled": true,
        "config": {"networkTopologyTypes": {"topologyA3": [
            {"nodeLabel": CLUSTER}, {"nodeLabel": SWITCH}, {"nodeLabel": HOST}
        ]}}
    }]}))
    .unwrap()
    .unwrap()
}

/// The documented eight nodes: s0..s3 two nodes each, s4 over s0 and s1, s5 over s2 and s3.
fn eight_nodes() -> Vec<Node> {
    (0..8)
        .map(|i| {
            let switch = format!("s{}", i / 2);
            let cluster = if i < 4 { "s4" } else { "s5" };
            node(
                &format!("node{i}"),
                &[(SWITCH, switch.as_str()), (CLUSTER, cluster)],
            )
        })
        .collect()
}

/// Applies a change to `objects` as the API server would.
fn apply(objects: &mut Objects, c: &Change) {
    let hns = &mut objects.hyper_nodes;
    let find = |hns: &mut Vec<HyperNode>, name: &str| {
        hns.iter()
            .position(|h| h.metadata.name.as_deref() == Some(name))
    };
    match c {
        Change::CreateHyperNode(h) => {
            if find(hns, h.metadata.name.as_deref().unwrap()).is_none() {
                hns.push((**h).clone());
            }
        }
        Change::UpdateHyperNode(h) => {
            let i = find(hns, h.metadata.name.as_deref().unwrap()).unwrap();
            hns[i].spec = h.spec.clone();
            let labels = hns[i].metadata.labels.get_or_insert_with(BTreeMap::new);
            labels.extend(h.metadata.labels.clone().unwrap_or_default());
        }
        Change::DeleteHyperNode { name } => {
            let i = find(hns, name).unwrap();
            hns.remove(i);
        }
        Change::UpdateHyperNodeStatus { name, node_count } => {
            let i = find(hns, name).unwrap();
            hns[i]
                .status
                .get_or_insert_with(HyperNodeStatus::default)
                .node_count = *node_count;
        }
        other => panic!("unexpected change {other:?}"),
    }
}

/// Takes every turn, applying its changes and feeding back their HyperNode events, until
/// nothing is left; every change made.
fn converge(ctl: &mut HyperNodeController, objects: &mut Objects) -> Vec<Change> {
    let mut made = Vec::new();
    for _ in 0..20 {
        let store = ObjectStore::new(objects.clone());
        let Some(w) = ctl.next(&ClusterView::new(&store), Instant::default()) else {
            return made;
        };
        for c in &w.changes {
            apply(objects, c);
        }
        ctl.finish(w.key, true, Instant::default());
        // The watch reports what was written.
        ctl.on_hyper_node(None, None);
        made.extend(w.changes);
    }
    panic!("the controller never settles: {made:#?}");
}

fn started(discovery: LabelDiscovery, nodes: Vec<Node>) -> (HyperNodeController, Objects) {
    let mut ctl = HyperNodeController::new(RetryPolicy::default(), Some(discovery));
    ctl.relist();
    let objects = Objects {
        nodes,
        ..Default::default()
    };
    (ctl, objects)
}

fn by_label<'a>(objects: &'a Objects, key: &str, value: &str) -> &'a HyperNode {
    objects
        .hyper_nodes
        .iter()
        .find(|h| h.metadata.labels.as_ref().and_then(|l| l.get(key)) == Some(&value.to_string()))
        .unwrap_or_else(|| panic!("no HyperNode for {key}={value}"))
}

fn members(h: &HyperNode) -> Vec<String> {
    h.spec
        .members
        .iter()
        .map(|m| m.selector.exact_match.as_ref().unwrap().name.clone())
        .collect()
}

fn name(h: &HyperNode) -> String {
    h.metadata.name.clone().unwrap()
}

fn count(h: &HyperNode) -> i64 {
    h.status.as_ref().map_or(0, |s| s.node_count)
}

#[test]
fn labels_make_the_documented_tree_with_volcano_s_names_tiers_and_labels() {
    let (mut ctl, mut objects) = started(a3(), eight_nodes());
    converge(&mut ctl, &mut objects);
    assert_eq!(objects.hyper_nodes.len(), 6);
    let s0 = by_label(&objects, SWITCH, "s0");
    assert_eq!(s0.spec.tier, 1);
    assert_eq!(s0.spec.tier_name, SWITCH);
    assert_eq!(members(s0), ["node0", "node1"]);
    assert!(s0.spec.members.iter().all(|m| m.member_type == "Node"));
    assert!(
        name(s0).starts_with("hypernode-topologya3-tier1-"),
        "{}",
        name(s0)
    );
    assert_eq!(name(s0).len(), "hypernode-topologya3-tier1-".len() + 5);
    let labels = s0.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[SOURCE_LABEL], "label");
    assert_eq!(labels[SWITCH], "s0");
    let s5 = by_label(&objects, CLUSTER, "s5");
    assert_eq!((s5.spec.tier, s5.spec.tier_name.as_str()), (2, CLUSTER));
    assert!(name(s5).starts_with("hypernode-topologya3-tier2-"));
    let mut below = vec![
        name(by_label(&objects, SWITCH, "s2")),
        name(by_label(&objects, SWITCH, "s3")),
    ];
    below.sort();
    assert_eq!(members(s5), below);
    assert!(s5.spec.members.iter().all(|m| m.member_type == "HyperNode"));
    // The node counts, through member HyperNodes too.
    assert_eq!(count(s0), 2);
    assert_eq!(count(s5), 4);
    // Settled: another look changes nothing.
    ctl.relist();
    assert!(converge(&mut ctl, &mut objects).is_empty());
}

#[test]
fn names_are_the_same_from_one_run_to_the_next() {
    let (mut a, mut first) = started(a3(), eight_nodes());
    converge(&mut a, &mut first);
    let (mut b, mut second) = started(a3(), eight_nodes());
    converge(&mut b, &mut second);
    let names = |o: &Objects| {
        let mut n: Vec<String> = o.hyper_nodes.iter().map(name).collect();
        n.sort();
        n
    };
    assert_eq!(names(&first), names(&second));
}

#[test]
fn a_label_change_moves_the_node_and_keeps_the_names() {
    let (mut ctl, mut objects) = started(a3(), eight_nodes());
    converge(&mut ctl, &mut objects);
    let before: Vec<String> = objects.hyper_nodes.iter().map(name).collect();
    let old = objects.nodes[1].clone();
    objects.nodes[1] = node("node1", &[(SWITCH, "s1"), (CLUSTER, "s4")]);
    ctl.on_node(Some(&old), Some(&objects.nodes[1].clone()));
    let made = converge(&mut ctl, &mut objects);
    assert!(
        made.iter().all(|c| !matches!(
            c,
            Change::CreateHyperNode(_) | Change::DeleteHyperNode { .. }
        )),
        "{made:#?}"
    );
    let after: Vec<String> = objects.hyper_nodes.iter().map(name).collect();
    assert_eq!(before, after);
    assert_eq!(members(by_label(&objects, SWITCH, "s0")), ["node0"]);
    assert_eq!(
        members(by_label(&objects, SWITCH, "s1")),
        ["node1", "node2", "node3"]
    );
    assert_eq!(count(by_label(&objects, SWITCH, "s0")), 1);
    assert_eq!(count(by_label(&objects, SWITCH, "s1")), 3);
    assert_eq!(count(by_label(&objects, CLUSTER, "s4")), 4);
}

#[test]
fn a_label_removed_from_every_node_deletes_its_hyper_node() {
    let (mut ctl, mut objects) = started(a3(), eight_nodes());
    converge(&mut ctl, &mut objects);
    let s3 = name(by_label(&objects, SWITCH, "s3"));
    for i in [6, 7] {
        let old = objects.nodes[i].clone();
        // Without its switch label a node is in no domain at all: tiers are read upward.
        objects.nodes[i] = node(&format!("node{i}"), &[(CLUSTER, "s5")]);
        ctl.on_node(Some(&old), Some(&objects.nodes[i].clone()));
    }
    let made = converge(&mut ctl, &mut objects);
    assert!(
        made.iter()
            .any(|c| matches!(c, Change::DeleteHyperNode { name } if *name == s3)),
        "{made:#?}"
    );
    assert!(!objects.hyper_nodes.iter().any(|h| name(h) == s3));
    let s5 = by_label(&objects, CLUSTER, "s5");
    assert_eq!(members(s5), [name(by_label(&objects, SWITCH, "s2"))]);
    assert_eq!(count(s5), 2);
}

#[test]
fn a_hand_written_hyper_node_is_left_alone_and_counted() {
    let hand = HyperNode {
        metadata: ObjectMeta {
            name: Some("rack-a".to_string()),
            ..Default::default()
        },
        spec: HyperNodeSpec {
            tier: 3,
            tier_name: String::new(),
            members: vec![MemberSpec {
                member_type: "Node".to_string(),
                selector: MemberSelector {
                    exact_match: Some(ExactMatch {
                        name: "elsewhere".to_string(),
                    }),
                    ..Default::default()
                },
            }],
        },
        status: None,
    };
    let (mut ctl, mut objects) = started(a3(), eight_nodes());
    objects.hyper_nodes.push(hand.clone());
    objects.nodes.push(node("elsewhere", &[]));
    let made = converge(&mut ctl, &mut objects);
    let touching = |c: &Change| match c {
        Change::UpdateHyperNode(h) | Change::CreateHyperNode(h) => {
            h.metadata.name.as_deref() == Some("rack-a")
        }
        Change::DeleteHyperNode { name } => name == "rack-a",
        _ => false,
    };
    assert!(!made.iter().any(touching), "{made:#?}");
    let kept = objects
        .hyper_nodes
        .iter()
        .find(|h| name(h) == "rack-a")
        .unwrap();
    assert_eq!(kept.spec, hand.spec);
    assert_eq!(kept.metadata.labels, None);
    assert_eq!(
        count(kept),
        1,
        "its status.nodeCount is kept as any other's"
    );
}

#[test]
fn node_counts_are_written_only_when_they_change() {
    let (mut ctl, mut objects) = started(a3(), eight_nodes());
    converge(&mut ctl, &mut objects);
    // A heartbeat (same labels) asks for nothing.
    let n = objects.nodes[0].clone();
    ctl.on_node(Some(&n), Some(&n));
    assert_eq!(ctl.queue_len(), 0);
    objects
        .nodes
        .push(node("node8", &[(SWITCH, "s0"), (CLUSTER, "s4")]));
    ctl.on_node(None, Some(&objects.nodes[8].clone()));
    let made = converge(&mut ctl, &mut objects);
    let statuses: Vec<(String, i64)> = made
        .iter()
        .filter_map(|c| match c {
            Change::UpdateHyperNodeStatus { name, node_count } => Some((name.clone(), *node_count)),
            _ => None,
        })
        .collect();
    let s0 = name(by_label(&objects, SWITCH, "s0"));
    let s4 = name(by_label(&objects, CLUSTER, "s4"));
    let mut want = vec![(s0, 3), (s4, 5)];
    want.sort();
    let mut got = statuses;
    got.sort();
    assert_eq!(got, want, "only the two domains node8 joined");
}

#[test]
fn without_the_label_source_only_counts_are_kept() {
    let mut ctl = HyperNodeController::new(RetryPolicy::default(), None);
    ctl.relist();
    let mut objects = Objects {
        nodes: eight_nodes(),
        ..Default::default()
    };
    assert!(converge(&mut ctl, &mut objects).is_empty());
    assert!(objects.hyper_nodes.is_empty());
    // Turned on by a new configuration, it discovers.
    ctl.set_discovery(Some(a3()));
    converge(&mut ctl, &mut objects);
    assert_eq!(objects.hyper_nodes.len(), 6);
}

#[test]
fn a_failed_turn_is_retried() {
    let (mut ctl, objects) = started(a3(), eight_nodes());
    let store = ObjectStore::new(objects.clone());
    let w = ctl
        .next(&ClusterView::new(&store), Instant::default())
        .unwrap();
    assert_eq!(w.key, HyperNodeKey::Discovery);
    ctl.finish(w.key, false, Instant::default());
    assert!(ctl.next_due().is_some());
}

#[test]
fn bad_configurations_are_refused_naming_the_field() {
    let label = |types: serde_json::Value| {
        json!({"networkTopologyDiscovery": [
            {"source": "ufm", "enabled": true},
            {"source": "label", "enabled": true, "config": {"networkTopologyTypes": types}}
        ]})
    };
    let err = parse(label(
        json!({"aVeryLongTopologyTypeName": [{"nodeLabel": HOST}]}),
    ))
    .unwrap_err();
    assert_eq!(
        err.field,
        "networkTopologyDiscovery[1].config.networkTopologyTypes.aVeryLongTopologyTypeName"
    );
    assert!(err.to_string().contains("exceeds 20"), "{err}");
    let err = parse(label(
        json!({"a2": [{"nodeLabel": "volcano.sh/tor"}, {"nodeLabel": "volcano.sh/tor"}]}),
    ))
    .unwrap_err();
    assert_eq!(
        err.field,
        "networkTopologyDiscovery[1].config.networkTopologyTypes.a2[1].nodeLabel"
    );
    assert!(err.message.contains("duplicate"), "{err}");
    let err = parse(label(json!({"a2": []}))).unwrap_err();
    assert_eq!(
        err.field,
        "networkTopologyDiscovery[1].config.networkTopologyTypes.a2"
    );
    let err = parse(label(json!({"a2": "volcano.sh/tor"}))).unwrap_err();
    assert_eq!(err.field, "networkTopologyDiscovery[1].config");
    // Off unless enabled, as in Volcano.
    let off = json!({"networkTopologyDiscovery": [{"source": "label", "config": {}}]});
    assert_eq!(parse(off).unwrap(), None);
    let tiers = parse(label(
        json!({"a2": [{"nodeLabel": "volcano.sh/tor"}, {"nodeLabel": HOST}]}),
    ))
    .unwrap()
    .unwrap();
    assert_eq!(tiers.types[0].tiers, ["volcano.sh/tor"]);
}
