//! Generated HyperNodes: tiers of network domains over the nodes in their order, each domain
//! naming its members exactly, as a user lists the nodes under a leaf switch.

use volcano_api::topology::{
    ExactMatch, HyperNode, HyperNodeSpec, MEMBER_HYPER_NODE, MEMBER_NODE, MemberSelector,
    MemberSpec,
};

use super::TopologyTier;

/// HyperNodes over `nodes`, lowest tier first: tier 1 groups `fanout` nodes in the order given,
/// tier k > 1 groups `fanout` domains of tier k-1; the last domain of a tier may be smaller.
/// Domains are named `<tier name>-<index>` (indexes zero-padded to one width per tier).
pub fn hyper_nodes_over(nodes: &[String], tiers: &[TopologyTier]) -> Vec<HyperNode> {
    let mut out = Vec::new();
    let mut below: Vec<String> = nodes.to_vec();
    for (level, tier) in tiers.iter().enumerate() {
        let fanout = (tier.fanout.max(1)) as usize;
        let member_type = if level == 0 {
            MEMBER_NODE
        } else {
            MEMBER_HYPER_NODE
        };
        let count = below.len().div_ceil(fanout);
        let width = count.max(1).saturating_sub(1).to_string().len();
        let mut names = Vec::with_capacity(count);
        for (i, group) in below.chunks(fanout).enumerate() {
            let name = format!("{}-{i:0width$}", tier.name);
            out.push(hyper_node(&name, level + 1, &tier.name, member_type, group));
            names.push(name);
        }
        below = names;
    }
    out
}

fn hyper_node(
    name: &str,
    tier: usize,
    tier_name: &str,
    member_type: &str,
    members: &[String],
) -> HyperNode {
    HyperNode::new(
        name,
        HyperNodeSpec {
            tier: i64::try_from(tier).unwrap_or(i64::MAX),
            tier_name: tier_name.to_string(),
            members: members
                .iter()
                .map(|m| MemberSpec {
                    member_type: member_type.to_string(),
                    selector: MemberSelector {
                        exact_match: Some(ExactMatch { name: m.clone() }),
                        ..MemberSelector::default()
                    },
                })
                .collect(),
        },
    )
}
