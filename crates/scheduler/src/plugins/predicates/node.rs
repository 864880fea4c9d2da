//! The node-level filters: cordon, node selector and required node affinity, taints and
//! tolerations.

use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration,
};
use volcano_api::k8s_openapi;

use crate::fit::FitReason;
use crate::plugins::label_selector::set_operator_matches;

/// Why a node failed the pod's node selector or required node affinity.
const NODE_AFFINITY_MISMATCH: &str = "node(s) didn't match Pod's node affinity/selector";

fn label<'a>(node: &'a Node, key: &str) -> Option<&'a str> {
    node.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

fn requirement_matches(node: &Node, r: &NodeSelectorRequirement, field: bool) -> bool {
    let value = if field {
        (r.key == "metadata.name").then(|| node.metadata.name.as_deref().unwrap_or(""))
    } else {
        label(node, &r.key)
    };
    let values = r.values.as_deref().unwrap_or(&[]);
    if let Some(matched) = set_operator_matches(&r.operator, value, values) {
        return matched;
    }
    let (Some(v), Some(bound)) = (
        value.and_then(|v| v.parse::<i64>().ok()),
        values.first().and_then(|b| b.parse::<i64>().ok()),
    ) else {
        return false;
    };
    match r.operator.as_str() {
        "Gt" => v > bound,
        "Lt" => v < bound,
        _ => false,
    }
}

/// Whether `node` satisfies a node selector term (all its requirements).
pub fn term_matches(node: &Node, term: &NodeSelectorTerm) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        // An empty term matches nothing, as in Kubernetes.
        return false;
    }
    exprs.iter().all(|r| requirement_matches(node, r, false))
        && fields.iter().all(|r| requirement_matches(node, r, true))
}

/// Whether the pod has a `nodeSelector` or required node affinity (without either, every node
/// satisfies it).
pub(super) fn has_node_constraints(pod: &Pod) -> bool {
    pod.spec.as_ref().is_some_and(|spec| {
        spec.node_selector.is_some()
            || spec
                .affinity
                .as_ref()
                .and_then(|a| a.node_affinity.as_ref())
                .is_some_and(|na| {
                    na.required_during_scheduling_ignored_during_execution
                        .is_some()
                })
    })
}

/// Whether `node` satisfies the pod's `nodeSelector` and required node affinity.
pub fn node_affinity_matches(pod: &Pod, node: &Node) -> bool {
    let Some(spec) = &pod.spec else { return true };
    if let Some(sel) = &spec.node_selector
        && !sel.iter().all(|(k, v)| label(node, k) == Some(v.as_str()))
    {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    match required {
        Some(r) => r.node_selector_terms.iter().any(|t| term_matches(node, t)),
        None => true,
    }
}

fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = t.effect.as_deref()
        && !effect.is_empty()
        && effect != taint.effect
    {
        return false;
    }
    let key = t.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}

/// The first taint with one of `effects` that the tolerations do not tolerate.
pub fn tolerates_all<'a>(
    tolerations: &[Toleration],
    taints: &'a [Taint],
    effects: &[&str],
) -> Result<(), &'a Taint> {
    for taint in taints
        .iter()
        .filter(|t| effects.contains(&t.effect.as_str()))
    {
        if !tolerations.iter().any(|t| tolerates(t, taint)) {
            return Err(taint);
        }
    }
    Ok(())
}

/// Cordon, node affinity and taints, in kube-scheduler's order; `node_affinity` and
/// `taint_toleration` say which of the last two are on.
#[inline(never)]
pub(super) fn check_node(
    pod: &Pod,
    node: &Node,
    node_affinity: bool,
    taint_toleration: bool,
) -> Result<(), FitReason> {
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[]);
    let node_spec = node.spec.as_ref();
    if node_spec.and_then(|s| s.unschedulable).unwrap_or(false) {
        let taint = Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        };
        if !tolerations.iter().any(|t| tolerates(t, &taint)) {
            return Err(FitReason::unresolvable("node(s) were unschedulable"));
        }
    }
    if node_affinity && !node_affinity_matches(pod, node) {
        return Err(FitReason::unresolvable(NODE_AFFINITY_MISMATCH));
    }
    if taint_toleration {
        let taints = node_spec.and_then(|s| s.taints.as_deref()).unwrap_or(&[]);
        if let Err(taint) = tolerates_all(tolerations, taints, &["NoSchedule", "NoExecute"]) {
            return Err(FitReason::unresolvable(format!(
                "node(s) had untolerated taint {{{}: {}}}",
                taint.key,
                taint.value.as_deref().unwrap_or("")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: Some(value.into()),
            effect: effect.into(),
            ..Default::default()
        }
    }

    fn tol(key: &str, op: &str, value: Option<&str>, effect: Option<&str>) -> Toleration {
        Toleration {
            key: Some(key.into()),
            operator: Some(op.into()),
            value: value.map(Into::into),
            effect: effect.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn taints_need_matching_tolerations() {
        let taints = [taint("gpu", "reserved", "NoSchedule")];
        assert!(tolerates_all(&[], &taints, &["NoSchedule"]).is_err());
        assert!(
            tolerates_all(
                &[tol("gpu", "Equal", Some("reserved"), None)],
                &taints,
                &["NoSchedule"]
            )
            .is_ok()
        );
        assert!(
            tolerates_all(
                &[tol("gpu", "Equal", Some("other"), None)],
                &taints,
                &["NoSchedule"]
            )
            .is_err()
        );
        assert!(
            tolerates_all(
                &[tol("gpu", "Exists", None, Some("NoSchedule"))],
                &taints,
                &["NoSchedule"]
            )
            .is_ok()
        );
        assert!(
            tolerates_all(
                &[tol("gpu", "Exists", None, Some("NoExecute"))],
                &taints,
                &["NoSchedule"]
            )
            .is_err()
        );
        assert!(tolerates_all(&[tol("", "Exists", None, None)], &taints, &["NoSchedule"]).is_ok());
        let soft = [taint("gpu", "reserved", "PreferNoSchedule")];
        assert!(tolerates_all(&[], &soft, &["NoSchedule", "NoExecute"]).is_ok());
    }
}
