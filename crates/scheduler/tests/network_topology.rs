//! Network-topology placement, over random clusters of leaves and spines: no gang with a hard
//! network topology is ever bound across more than one domain of its allowed tier, whatever
//! else the cluster holds (busy nodes, other gangs, soft gangs, several sessions), nor any
//! partition of a gang with a hard sub-group policy across domains of its tier, and a soft
//! gang with room in one leaf is kept inside it.
//!
//! The domains are checked with the API crate's HyperNode tree, not with the scheduler's
//! model, from the Pod objects after each session's binds.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use support::*;
use volcano_api::Objects;
use volcano_api::keys::PARTITION_ID;
use volcano_api::scheduling::{NetworkTopologySpec, SubGroupPolicySpec};
use volcano_api::topology::tree::{HyperNodeTree, NodeRef};
use volcano_api::topology::{
    ExactMatch, HyperNode, HyperNodeSpec, MEMBER_HYPER_NODE, MEMBER_NODE, MemberSelector,
    MemberSpec,
};
use volcano_scheduler::conf::{DEFAULT_SCHEDULER_CONF, SchedulerConf};
use volcano_testkit::build::*;

fn member(kind: &str, name: &str) -> MemberSpec {
    MemberSpec {
        member_type: kind.to_string(),
        selector: MemberSelector {
            exact_match: Some(ExactMatch {
                name: name.to_string(),
            }),
            ..MemberSelector::default()
        },
    }
}

fn hyper_node(name: &str, tier: i64, members: Vec<MemberSpec>) -> HyperNode {
    let mut h = HyperNode::new(
        name,
        HyperNodeSpec {
            tier,
            members,
            ..HyperNodeSpec::default()
        },
    );
    h.metadata.name = Some(name.to_string());
    h
}

#[derive(Debug, Clone)]
struct GenGang {
    size: usize,
    min: i32,
    cpu_milli: i64,
    hard: bool,
    /// `None`: no network topology.
    tier: Option<i64>,
    /// In the high priority class (preempts the others).
    high: bool,
    /// In the second queue (reclaims from the first).
    second_queue: bool,
    /// Split into partitions of this many pods, each held (hard) to this tier.
    partitions: Option<(usize, i64)>,
}

#[derive(Debug, Clone)]
struct GenCluster {
    /// Nodes per leaf, leaves per spine, spines.
    leaf: usize,
    spine: usize,
    spines: usize,
    /// CPU (milli) already used on each node, cycling.
    busy: Vec<i64>,
    gangs: Vec<GenGang>,
}

fn arb_gang() -> impl Strategy<Value = GenGang> {
    (
        1usize..7,
        0usize..7,
        1i64..5,
        any::<bool>(),
        prop::option::of(1i64..4),
        any::<bool>(),
        any::<bool>(),
        prop::option::of((1usize..4, 1i64..3)),
    )
        .prop_map(
            |(size, min, cpu, hard, tier, high, second_queue, partitions)| GenGang {
                size,
                min: min.min(size).max(1) as i32,
                cpu_milli: cpu * 1000,
                hard,
                tier,
                high,
                second_queue,
                partitions,
            },
        )
}

fn arb_cluster() -> impl Strategy<Value = GenCluster> {
    (
        1usize..4,
        1usize..4,
        1usize..4,
        prop::collection::vec(
            prop_oneof![Just(0i64), Just(1000), Just(3000), Just(4000)],
            1..6,
        ),
        prop::collection::vec(arb_gang(), 1..7),
    )
        .prop_map(|(leaf, spine, spines, busy, gangs)| GenCluster {
            leaf,
            spine,
            spines,
            busy,
            gangs,
        })
}

impl GenCluster {
    fn objects(&self) -> Objects {
        let mut c = cluster()
            .with(queue("q"))
            .with(queue("q2"))
            .with(priority_class("high", 1000));
        let mut hns = Vec::new();
        let mut n = 0;
        for s in 0..self.spines {
            let mut leaves = Vec::new();
            for l in 0..self.spine {
                let leaf = format!("leaf-{s}-{l}");
                let mut members = Vec::new();
                for _ in 0..self.leaf {
                    let name = format!("n{n:02}");
                    c = c.with(node(&name).cpu(4).mem_gi(16));
                    let used = self.busy[n % self.busy.len()];
                    if used > 0 {
                        c = c.with(
                            pod("busy", &format!("busy-{n}"))
                                .cpu_milli(used)
                                .on(&name)
                                .running(),
                        );
                    }
                    members.push(member(MEMBER_NODE, &name));
                    n += 1;
                }
                hns.push(hyper_node(&leaf, 1, members));
                leaves.push(member(MEMBER_HYPER_NODE, &leaf));
            }
            hns.push(hyper_node(&format!("spine-{s}"), 2, leaves));
        }
        let mut objs = c.objects();
        objs.hyper_nodes = hns;
        for (i, g) in self.gangs.iter().enumerate() {
            let mut b = gang("team", &format!("g{i}"))
                .queue(if g.second_queue { "q2" } else { "q" })
                .min(g.min);
            if g.high {
                b = b.priority_class("high");
            }
            let (mut pg, mut pods) = b.pods(g.size, g.cpu_milli, 1 << 30).build();
            if let Some((size, tier)) = g.partitions {
                for (k, p) in pods.iter_mut().enumerate() {
                    p.metadata
                        .labels
                        .get_or_insert_default()
                        .insert(PARTITION_ID.to_string(), (k / size).to_string());
                }
                pg.spec.sub_group_policy = Some(vec![SubGroupPolicySpec {
                    name: "part".to_string(),
                    sub_group_size: Some(size as i32),
                    min_sub_groups: Some(g.min / size as i32),
                    match_label_keys: vec![PARTITION_ID.to_string()],
                    network_topology: Some(NetworkTopologySpec {
                        mode: "hard".to_string(),
                        highest_tier_allowed: Some(tier),
                        ..NetworkTopologySpec::default()
                    }),
                    ..SubGroupPolicySpec::default()
                }]);
            }
            pg.spec.network_topology = g.tier.map(|t| NetworkTopologySpec {
                mode: if g.hard { "hard" } else { "soft" }.to_string(),
                highest_tier_allowed: Some(t),
                ..NetworkTopologySpec::default()
            });
            objs.pod_groups.push(pg);
            objs.pods.extend(pods.into_iter().map(Arc::new));
        }
        objs
    }
}

/// Whether every node of `used` is in one domain of tier at most `tier`.
fn in_one_domain(tree: &HyperNodeTree, tier: i64, used: &BTreeSet<&str>) -> bool {
    tree.domains
        .iter()
        .any(|d| d.tier <= tier && used.iter().all(|n| d.nodes.iter().any(|m| m == n)))
}

/// The HyperNode tree of the cluster, as the API crate resolves it.
fn tree_of(objs: &Objects) -> Result<HyperNodeTree, TestCaseError> {
    let nodes: Vec<NodeRef<'_>> = objs
        .nodes
        .iter()
        .map(|n| {
            (
                n.metadata.name.as_deref().unwrap_or(""),
                n.metadata.labels.as_ref(),
            )
        })
        .collect();
    HyperNodeTree::build(&objs.hyper_nodes, &nodes)
        .map_err(|e| TestCaseError::fail(format!("the generated tree is invalid: {e}")))
}

/// Every hard gang's pods on nodes are inside one domain of its allowed tier (a tier above
/// every HyperNode's allows the whole cluster).
fn check_hard_gangs(objs: &Objects) -> Result<(), TestCaseError> {
    let tree = tree_of(objs)?;
    let top = tree.domains.iter().map(|d| d.tier).max().unwrap_or(0);
    for pg in &objs.pod_groups {
        let Some(nt) = &pg.spec.network_topology else {
            continue;
        };
        let tier = nt.highest_tier_allowed.unwrap_or(top + 1);
        if nt.mode != "hard" || tier > top {
            continue;
        }
        let name = pg.metadata.name.as_deref().unwrap_or("");
        let used: BTreeSet<&str> = objs
            .pods
            .iter()
            .filter(|p| {
                p.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("scheduling.k8s.io/group-name"))
                    .is_some_and(|g| g == name)
            })
            .filter_map(|p| p.spec.as_ref()?.node_name.as_deref())
            .collect();
        if used.is_empty() {
            continue;
        }
        prop_assert!(
            in_one_domain(&tree, tier, &used),
            "hard gang {name} (highest tier {tier}) is on nodes {used:?}, in no single HyperNode of tier <= {tier}"
        );
    }
    Ok(())
}

/// Every hard sub-group's bound pods are inside one domain of its tier.
fn check_hard_sub_groups(objs: &Objects) -> Result<(), TestCaseError> {
    let tree = tree_of(objs)?;
    for pg in &objs.pod_groups {
        let Some(policy) = pg.spec.sub_group_policy.as_ref().and_then(|p| p.first()) else {
            continue;
        };
        let tier = policy
            .network_topology
            .as_ref()
            .and_then(|nt| nt.highest_tier_allowed)
            .unwrap_or(i64::MAX);
        let name = pg.metadata.name.as_deref().unwrap_or("");
        let mut used: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for p in &objs.pods {
            let ours = p
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("scheduling.k8s.io/group-name"))
                .is_some_and(|g| g == name);
            let part = p.metadata.labels.as_ref().and_then(|l| l.get(PARTITION_ID));
            let node = p.spec.as_ref().and_then(|s| s.node_name.as_deref());
            if let (true, Some(part), Some(node)) = (ours, part, node) {
                used.entry(part.as_str()).or_default().insert(node);
            }
        }
        for (part, used) in used {
            prop_assert!(
                in_one_domain(&tree, tier, &used),
                "partition {part} of {name} (tier {tier}) is on nodes {used:?}, in no single HyperNode of tier <= {tier}"
            );
        }
    }
    Ok(())
}

fn conf_default() -> SchedulerConf {
    conf(DEFAULT_SCHEDULER_CONF)
}

fn conf_with_plugin() -> SchedulerConf {
    conf(
        r#"actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: network-topology-aware
"#,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn no_hard_gang_is_bound_across_domains_of_its_tier(c in arb_cluster(), which in 0u8..3) {
        let conf = match which {
            0 => conf_default(),
            1 => conf_with_plugin(),
            _ => conf(volcano_testkit::conf::evicting()),
        };
        let mut objs = c.objects();
        for i in 1..=3 {
            let d = run_session_n(&objs, &conf, i);
            apply(&mut objs, &d);
            check_hard_gangs(&objs).map_err(|e| TestCaseError::fail(format!("session {i}: {e}")))?;
            check_hard_sub_groups(&objs)
                .map_err(|e| TestCaseError::fail(format!("session {i}: {e}")))?;
        }
    }
}

/// The same cluster, seen by a user: a hard gang that fits only across leaves binds nothing,
/// the same gang in soft mode binds, and with a leaf freed the hard one binds inside it.
#[test]
fn a_hard_gang_waits_for_one_leaf_and_a_soft_one_does_not() {
    let base = GenCluster {
        leaf: 2,
        spine: 2,
        spines: 1,
        busy: vec![4000, 0],
        gangs: vec![GenGang {
            size: 2,
            min: 2,
            cpu_milli: 4000,
            hard: true,
            tier: Some(1),
            high: false,
            second_queue: false,
            partitions: None,
        }],
    };
    let hard = base.objects();
    let d = run_session_n(&hard, &conf_default(), 1);
    assert!(d.binds.is_empty(), "{:?}", d.binds);
    let mut soft = base.clone();
    soft.gangs[0].hard = false;
    let d = run_session_n(&soft.objects(), &conf_default(), 1);
    assert_eq!(d.binds.len(), 2, "{:?}", d.binds);
    let mut freed = base;
    freed.busy = vec![0, 0, 4000, 4000];
    let d = run_session_n(&freed.objects(), &conf_default(), 1);
    let nodes: BTreeSet<&str> = d.binds.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(nodes, BTreeSet::from(["n00", "n01"]));
}

/// HyperNodes that do not form a tree (here a node in two leaves) hold every gang with a
/// network topology, saying why, and leave the others alone.
#[test]
fn a_broken_tree_holds_topology_gangs_only() {
    let base = GenCluster {
        leaf: 2,
        spine: 1,
        spines: 1,
        busy: vec![0],
        gangs: vec![
            GenGang {
                size: 1,
                min: 1,
                cpu_milli: 1000,
                hard: true,
                tier: Some(1),
                high: false,
                second_queue: false,
                partitions: None,
            },
            GenGang {
                size: 1,
                min: 1,
                cpu_milli: 1000,
                hard: false,
                tier: None,
                high: false,
                second_queue: false,
                partitions: None,
            },
        ],
    };
    let mut objs = base.objects();
    objs.hyper_nodes
        .push(hyper_node("leaf-x", 1, vec![member(MEMBER_NODE, "n00")]));
    let d = run_session_n(&objs, &conf_default(), 1);
    let bound: Vec<String> = d.binds.iter().map(|(p, _)| p.name.clone()).collect();
    assert_eq!(bound, ["g1-0"]);
    let why = &d.unschedulable[&volcano_api::NamespacedName::new("team", "g0")].message;
    assert!(
        why.contains("the HyperNodes are not usable")
            && why.contains("node n00 is in two HyperNodes of tier 1"),
        "{why}"
    );
}

/// A node of a leaf: name, CPUs, pod slots.
type LeafNode<'a> = (&'a str, i64, i64);

/// Builds leaves of the given nodes and a queue.
fn leaves(spec: &[(&str, &[LeafNode<'_>])]) -> Objects {
    let mut c = cluster().with(queue("q"));
    let mut hns = Vec::new();
    for (leaf, nodes) in spec {
        let mut members = Vec::new();
        for (name, cpu, pods) in *nodes {
            c = c.with(node(name).cpu(*cpu).mem_gi(16).max_pods(*pods));
            members.push(member(MEMBER_NODE, name));
        }
        hns.push(hyper_node(leaf, 1, members));
    }
    let mut objs = c.objects();
    objs.hyper_nodes = hns;
    objs
}

fn hard_tier_1() -> Option<NetworkTopologySpec> {
    Some(NetworkTopologySpec {
        mode: "hard".to_string(),
        highest_tier_allowed: Some(1),
        ..NetworkTopologySpec::default()
    })
}

/// Backfill keeps a hard gang's pods that ask for nothing inside one leaf: the second cannot
/// follow the first into the other leaf when the first leaf is out of pod slots.
#[test]
fn best_effort_pods_of_a_hard_gang_stay_in_one_leaf() {
    let mut objs = leaves(&[("leaf-a", &[("n0", 4, 1)]), ("leaf-b", &[("n1", 4, 10)])]);
    let (mut pg, pods) = gang("team", "be")
        .queue("q")
        .min(1)
        .best_effort_pods(2)
        .build();
    pg.spec.network_topology = hard_tier_1();
    objs.pod_groups.push(pg);
    objs.pods.extend(pods.into_iter().map(Arc::new));
    let d = run_session_n(&objs, &conf_default(), 1);
    let nodes: BTreeSet<&str> = d.binds.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(nodes.len(), 1, "{:?}", d.binds);
}

/// An overfull node (its pods ask more than it has) does not hide the room of the other
/// nodes of its leaf.
#[test]
fn an_out_of_sync_node_does_not_make_its_leaf_look_full() {
    let mut objs = leaves(&[("leaf-a", &[("n0", 4, 10), ("n1", 8, 10)])]);
    objs.pods.push(
        pod("other", "big")
            .cpu_milli(12_000)
            .on("n0")
            .running()
            .build()
            .into(),
    );
    let (mut pg, pods) = gang("team", "g")
        .queue("q")
        .min(1)
        .pods(1, 6000, 1 << 30)
        .build();
    pg.spec.network_topology = hard_tier_1();
    objs.pod_groups.push(pg);
    objs.pods.extend(pods.into_iter().map(Arc::new));
    let d = run_session_n(&objs, &conf_default(), 1);
    let nodes: Vec<&str> = d.binds.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(nodes, ["n1"], "{:?}", d.unschedulable);
}
