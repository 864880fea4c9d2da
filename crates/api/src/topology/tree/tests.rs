use std::collections::BTreeMap;

use super::*;
use crate::topology::{ExactMatch, HyperNodeSpec, MemberSpec, RegexMatch};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

fn hn(name: &str, tier: i64, members: Vec<MemberSpec>) -> HyperNode {
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

fn exact(ty: &str, name: &str) -> MemberSpec {
    MemberSpec {
        member_type: ty.to_string(),
        selector: MemberSelector {
            exact_match: Some(ExactMatch {
                name: name.to_string(),
            }),
            ..MemberSelector::default()
        },
    }
}

fn regex(ty: &str, pattern: &str) -> MemberSpec {
    MemberSpec {
        member_type: ty.to_string(),
        selector: MemberSelector {
            regex_match: Some(RegexMatch {
                pattern: pattern.to_string(),
            }),
            ..MemberSelector::default()
        },
    }
}

fn labels(key: &str, value: &str) -> MemberSpec {
    MemberSpec {
        member_type: MEMBER_NODE.to_string(),
        selector: MemberSelector {
            label_match: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(key.to_string(), value.to_string())])),
                ..LabelSelector::default()
            }),
            ..MemberSelector::default()
        },
    }
}

fn nodes(n: usize) -> Vec<(String, BTreeMap<String, String>)> {
    (0..n)
        .map(|i| {
            let rack = format!("rack{}", i / 2);
            (
                format!("n{i}"),
                BTreeMap::from([("rack".to_string(), rack)]),
            )
        })
        .collect()
}

fn build(
    hns: &[HyperNode],
    nodes: &[(String, BTreeMap<String, String>)],
) -> Result<HyperNodeTree, TreeError> {
    let refs: Vec<NodeRef<'_>> = nodes.iter().map(|(n, l)| (n.as_str(), Some(l))).collect();
    HyperNodeTree::build(hns, &refs)
}

#[test]
fn members_by_name_pattern_and_labels_gather_up_the_tree() {
    let ns = nodes(6);
    let tree = build(
        &[
            hn(
                "leaf-a",
                1,
                vec![exact(MEMBER_NODE, "n0"), exact(MEMBER_NODE, "n1")],
            ),
            hn("leaf-b", 1, vec![regex(MEMBER_NODE, "^n[23]$")]),
            hn("leaf-c", 1, vec![labels("rack", "rack2")]),
            hn("spine", 2, vec![regex(MEMBER_HYPER_NODE, "^leaf-")]),
        ],
        &ns,
    )
    .unwrap();
    let spine = &tree.domains[tree.get("spine").unwrap()];
    assert_eq!(spine.nodes, ["n0", "n1", "n2", "n3", "n4", "n5"]);
    assert_eq!(spine.children.len(), 3);
    let c = &tree.domains[tree.get("leaf-c").unwrap()];
    assert_eq!(c.nodes, ["n4", "n5"]);
    assert_eq!(c.parent, tree.get("spine"));
}

#[test]
fn a_cycle_is_refused_naming_its_hyper_nodes() {
    let err = build(
        &[
            hn("a", 2, vec![exact(MEMBER_HYPER_NODE, "b")]),
            hn("b", 1, vec![exact(MEMBER_HYPER_NODE, "a")]),
        ],
        &nodes(2),
    )
    .unwrap_err();
    assert!(matches!(err, TreeError::Cycle { .. }), "{err}");
    assert!(err.to_string().contains("b -> a -> b"), "{err}");
}

#[test]
fn a_node_in_two_domains_of_one_tier_is_refused() {
    let err = build(
        &[
            hn("leaf-a", 1, vec![regex(MEMBER_NODE, "^n[01]$")]),
            hn("leaf-b", 1, vec![regex(MEMBER_NODE, "^n[12]$")]),
        ],
        &nodes(3),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "node n1 is in two HyperNodes of tier 1: leaf-a and leaf-b"
    );
}

#[test]
fn a_lower_tier_domain_split_across_higher_domains_is_refused() {
    let err = build(
        &[
            hn("leaf", 1, vec![regex(MEMBER_NODE, "^n[0-3]$")]),
            hn("spine-0", 2, vec![regex(MEMBER_NODE, "^n[01]$")]),
            hn("spine-1", 2, vec![regex(MEMBER_NODE, "^n[23]$")]),
        ],
        &nodes(4),
    )
    .unwrap_err();
    assert!(matches!(err, TreeError::NotSubset { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("leaf (tier 1) is not inside one HyperNode of tier 2"),
        "{err}"
    );
}

#[test]
fn a_member_of_a_higher_or_equal_tier_and_two_parents_are_refused() {
    let err = build(
        &[
            hn("leaf", 2, vec![exact(MEMBER_NODE, "n0")]),
            hn("spine", 2, vec![exact(MEMBER_HYPER_NODE, "leaf")]),
        ],
        &nodes(1),
    )
    .unwrap_err();
    assert!(matches!(err, TreeError::TierNotLower { .. }), "{err}");
    let err = build(
        &[
            hn("leaf", 1, vec![exact(MEMBER_NODE, "n0")]),
            hn("s1", 2, vec![exact(MEMBER_HYPER_NODE, "leaf")]),
            hn("s2", 3, vec![exact(MEMBER_HYPER_NODE, "leaf")]),
        ],
        &nodes(1),
    )
    .unwrap_err();
    assert!(matches!(err, TreeError::TwoParents { .. }), "{err}");
}

#[test]
fn a_member_without_a_selector_or_with_a_bad_pattern_is_refused_with_its_field() {
    let mut bad = exact(MEMBER_NODE, "n0");
    bad.selector.exact_match = None;
    let err = build(&[hn("leaf", 1, vec![bad])], &nodes(1)).unwrap_err();
    assert!(
        err.to_string()
            .contains("spec.members[0].selector: exactly one of"),
        "{err}"
    );
    let err = build(&[hn("leaf", 1, vec![regex(MEMBER_NODE, "n(")])], &nodes(1)).unwrap_err();
    assert!(
        err.to_string()
            .contains("spec.members[0].selector.regexMatch.pattern"),
        "{err}"
    );
    let mut lab = labels("rack", "rack0");
    lab.member_type = MEMBER_HYPER_NODE.to_string();
    let err = build(&[hn("spine", 2, vec![lab])], &nodes(1)).unwrap_err();
    assert!(
        err.to_string().contains("labelMatch: chooses nodes only"),
        "{err}"
    );
}
