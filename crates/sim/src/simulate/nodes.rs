//! Node events on the Node object, as Kubernetes' node lifecycle controller and a kubelet
//! would leave it.
//!
//! A node that goes away is marked NotReady (condition `Ready` Unknown) and tainted
//! `node.kubernetes.io/unreachable` with `NoSchedule` and `NoExecute`, exactly the taints
//! Kubernetes puts on an unreachable node, so the scheduler's taint predicate keeps new pods
//! off it. Its pods are lost at once (see the kubelet). A node that comes back loses those
//! taints and is Ready again. A node that shrinks gets the new allocatable; its pods keep
//! running (a kubelet re-admits nothing that already runs), so it may be out of sync until
//! they end, which the scheduler handles.

use volcano_api::k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus, Taint};
use volcano_api::scheduling::ResourceList;
use volcano_controllers::time::Instant;

/// The taint Kubernetes puts on a node it cannot reach.
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

const EFFECTS: [&str; 2] = ["NoSchedule", "NoExecute"];

/// Marks `node` unreachable at `now`.
pub fn mark_down(node: &mut Node, now: Instant) {
    let taints = node
        .spec
        .get_or_insert_with(Default::default)
        .taints
        .get_or_insert_with(Vec::new);
    for effect in EFFECTS {
        if !taints
            .iter()
            .any(|t| t.key == UNREACHABLE && t.effect == effect)
        {
            taints.push(Taint {
                key: UNREACHABLE.to_string(),
                effect: effect.to_string(),
                time_added: Some(now.to_time()),
                value: None,
            });
        }
    }
    set_ready(
        node,
        "Unknown",
        "NodeStatusUnknown",
        "Kubelet stopped posting node status.",
        now,
    );
}

/// Marks `node` reachable and Ready at `now`.
pub fn mark_up(node: &mut Node, now: Instant) {
    if let Some(taints) = node.spec.as_mut().and_then(|s| s.taints.as_mut()) {
        taints.retain(|t| t.key != UNREACHABLE);
    }
    set_ready(
        node,
        "True",
        "KubeletReady",
        "kubelet is posting ready status",
        now,
    );
}

/// Sets the listed amounts of `node`'s allocatable (starting from its capacity when it
/// declares no allocatable); resources not listed keep theirs.
pub fn shrink(node: &mut Node, to: &ResourceList) {
    let status = node.status.get_or_insert_with(NodeStatus::default);
    let mut allocatable = match status.allocatable.take() {
        Some(a) => a,
        None => status.capacity.clone().unwrap_or_default(),
    };
    for (name, q) in to {
        allocatable.insert(name.clone(), q.clone());
    }
    status.allocatable = Some(allocatable);
}

fn set_ready(node: &mut Node, status: &str, reason: &str, message: &str, now: Instant) {
    let conditions = node
        .status
        .get_or_insert_with(NodeStatus::default)
        .conditions
        .get_or_insert_with(Vec::new);
    conditions.retain(|c| c.type_ != "Ready");
    conditions.push(NodeCondition {
        type_: "Ready".to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message.to_string()),
        last_heartbeat_time: Some(now.to_time()),
        last_transition_time: Some(now.to_time()),
    });
}

#[cfg(test)]
mod tests {
    use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;

    fn node() -> Node {
        let mut n = Node::default();
        n.spec.get_or_insert_with(Default::default).taints = Some(vec![Taint {
            key: "gpu".to_string(),
            effect: "NoSchedule".to_string(),
            ..Default::default()
        }]);
        n
    }

    fn taint_keys(n: &Node) -> Vec<(String, String)> {
        n.spec
            .iter()
            .flat_map(|s| s.taints.iter().flatten())
            .map(|t| (t.key.clone(), t.effect.clone()))
            .collect()
    }

    #[test]
    fn down_then_up_restores_the_scenario_taints() {
        let mut n = node();
        let before = taint_keys(&n);
        mark_down(&mut n, Instant::default());
        mark_down(&mut n, Instant::default());
        assert_eq!(taint_keys(&n).len(), 3, "twice down taints once");
        mark_up(&mut n, Instant::default());
        assert_eq!(taint_keys(&n), before);
        let ready = n.status.iter().flat_map(|s| s.conditions.iter().flatten());
        let ready: Vec<&str> = ready.map(|c| c.status.as_str()).collect();
        assert_eq!(ready, vec!["True"]);
    }

    #[test]
    fn shrinking_replaces_only_the_listed_resources() {
        let mut n = node();
        n.status.get_or_insert_with(Default::default).capacity = Some(ResourceList::from([
            ("cpu".to_string(), Quantity("16".to_string())),
            ("memory".to_string(), Quantity("64Gi".to_string())),
        ]));
        shrink(
            &mut n,
            &ResourceList::from([("cpu".to_string(), Quantity("8".to_string()))]),
        );
        let a = n.status.and_then(|s| s.allocatable).unwrap_or_default();
        assert_eq!(a.get("cpu"), Some(&Quantity("8".to_string())));
        assert_eq!(a.get("memory"), Some(&Quantity("64Gi".to_string())));
    }
}
