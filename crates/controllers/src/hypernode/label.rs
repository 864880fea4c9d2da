//! The label discovery source: the HyperNodes that nodes' topology labels describe, built as
//! Volcano's label discoverer builds them (names `hypernode-<type>-tier<N>-<suffix>`, tier-1
//! members the nodes, higher tiers' members the HyperNodes below, each labelled with its label
//! and value and as discovered by `label`).

use std::collections::{BTreeMap, BTreeSet};

use volcano_api::k8s_openapi::api::core::v1::Node;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::topology::{
    ExactMatch, HyperNode, HyperNodeSpec, MEMBER_HYPER_NODE, MEMBER_NODE, MemberSelector,
    MemberSpec,
};

use super::config::{LABEL_SOURCE, LabelDiscovery};

/// The label marking a HyperNode as made by a discovery source, its value the source.
pub const SOURCE_LABEL: &str = "volcano.sh/network-topology-source";

/// The characters of Kubernetes' random name suffixes (no vowels, no look-alikes).
const SUFFIX_CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Length of a name suffix, as Volcano's.
const SUFFIX_LEN: usize = 5;

/// What a HyperNode is made of, before it is built.
struct Found {
    tier: i64,
    tier_name: String,
    members: BTreeSet<String>,
    labels: BTreeMap<String, String>,
}

/// Whether `hn` was made by the label source.
pub fn is_discovered(hn: &HyperNode) -> bool {
    hn.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SOURCE_LABEL))
        .is_some_and(|s| s == LABEL_SOURCE)
}

/// The HyperNodes the labels of `nodes` describe, by name. A node's domains are read tier 1
/// up and end at its first missing label. A domain keeps the name of an existing discovered
/// HyperNode of the same label, value, type and tier; a new one gets a suffix derived from its
/// label and value, not random, so every replica and every run names it the same, and never
/// the name of an existing HyperNode.
pub fn discover(
    discovery: &LabelDiscovery,
    nodes: &[Node],
    existing: &[HyperNode],
) -> BTreeMap<String, HyperNode> {
    let taken: BTreeSet<&str> = existing
        .iter()
        .filter_map(|h| h.metadata.name.as_deref())
        .collect();
    let mut sorted: Vec<&Node> = nodes.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    // As Volcano's, a label and value name one domain, whichever type reaches it first.
    let mut named: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    for node in sorted {
        let Some(node_name) = node.metadata.name.as_deref() else {
            continue;
        };
        let labels = node.metadata.labels.clone().unwrap_or_default();
        for t in &discovery.types {
            let mut member = node_name.to_string();
            for (i, key) in t.tiers.iter().enumerate() {
                let Some(value) = labels.get(key) else { break };
                let tier = i as i64 + 1;
                let pair = (key.clone(), value.clone());
                let name = match named.get(&pair) {
                    Some(n) => n.clone(),
                    None => {
                        let n = name_for(&t.name, key, value, tier, existing, &taken, &found);
                        named.insert(pair, n.clone());
                        n
                    }
                };
                let entry = found.entry(name.clone()).or_insert_with(|| Found {
                    tier,
                    tier_name: key.clone(),
                    members: BTreeSet::new(),
                    labels: BTreeMap::from([(key.clone(), value.clone())]),
                });
                entry.members.insert(member);
                member = name;
            }
        }
    }
    found
        .into_iter()
        .map(|(name, f)| {
            let hn = build(&name, f);
            (name, hn)
        })
        .collect()
}

fn build(name: &str, f: Found) -> HyperNode {
    let member_type = if f.tier == 1 {
        MEMBER_NODE
    } else {
        MEMBER_HYPER_NODE
    };
    let mut labels = f.labels;
    labels.insert(SOURCE_LABEL.to_string(), LABEL_SOURCE.to_string());
    HyperNode {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: HyperNodeSpec {
            tier: f.tier,
            tier_name: f.tier_name,
            members: f
                .members
                .into_iter()
                .map(|m| MemberSpec {
                    member_type: member_type.to_string(),
                    selector: MemberSelector {
                        exact_match: Some(ExactMatch { name: m }),
                        ..Default::default()
                    },
                })
                .collect(),
        },
        status: None,
    }
}

/// The name of the domain of `key=value`: an existing discovered HyperNode's of that label,
/// type and tier (the first by name), else a new one no HyperNode has.
fn name_for(
    type_name: &str,
    key: &str,
    value: &str,
    tier: i64,
    existing: &[HyperNode],
    taken: &BTreeSet<&str>,
    found: &BTreeMap<String, Found>,
) -> String {
    let prefix = format!("hypernode-{}-tier{tier}", clean(type_name));
    let mut same: Vec<&str> = existing
        .iter()
        .filter(|h| is_discovered(h))
        .filter(|h| {
            h.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(key))
                .is_some_and(|v| v == value)
        })
        .filter_map(|h| h.metadata.name.as_deref())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    same.sort_unstable();
    if let Some(n) = same.first() {
        return n.to_string();
    }
    let mut attempt: u64 = 0;
    loop {
        let name = format!("{prefix}-{}", suffix(type_name, key, value, attempt));
        if !taken.contains(name.as_str()) && !found.contains_key(&name) {
            return name;
        }
        attempt += 1;
    }
}

/// Volcano's cleaning of a type name for a HyperNode name: letters lowercased, digits, `.` and
/// `-` kept, anything else a `-`.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_alphabetic() {
                c.to_lowercase().next().unwrap_or(c)
            } else if c.is_ascii_digit() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Five characters of the alphabet of Kubernetes' random suffixes, from a hash of what the
/// domain is: stable across runs and replicas.
fn suffix(type_name: &str, key: &str, value: &str, attempt: u64) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [type_name, key, value, &attempt.to_string()] {
        for b in part.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    (0..SUFFIX_LEN)
        .map(|_| {
            let c = SUFFIX_CHARS[(h % SUFFIX_CHARS.len() as u64) as usize];
            h /= SUFFIX_CHARS.len() as u64;
            char::from(c)
        })
        .collect()
}
