//! Kubernetes label selectors (`matchLabels` and `matchExpressions`) as topology spread and
//! volume selectors read them, and the set operators node selectors share with them.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

/// Whether `labels` satisfy `selector`: every `matchLabels` pair and every expression. An
/// empty selector matches every set of labels; callers treat an absent one (which matches
/// nothing in affinity terms) themselves.
pub fn selector_matches(
    selector: &LabelSelector,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).map(String::as_str);
    if let Some(ml) = &selector.match_labels
        && !ml.iter().all(|(k, v)| get(k) == Some(v.as_str()))
    {
        return false;
    }
    selector
        .match_expressions
        .iter()
        .flatten()
        .all(|r| requirement_matches(r, get(&r.key)))
}

/// One `matchExpressions` requirement against the label's value (`None` when absent).
fn requirement_matches(r: &LabelSelectorRequirement, value: Option<&str>) -> bool {
    set_operator_matches(&r.operator, value, r.values.as_deref().unwrap_or(&[])).unwrap_or(false)
}

/// A set operator (`In`, `NotIn`, `Exists`, `DoesNotExist`) applied to a label's value
/// (`None` when absent); `None` for any other operator, which the caller decides (node
/// selectors add `Gt`/`Lt`; elsewhere an unknown operator matches nothing, as the API server
/// would have refused it).
pub fn set_operator_matches(op: &str, value: Option<&str>, values: &[String]) -> Option<bool> {
    match op {
        "In" => Some(value.is_some_and(|v| values.iter().any(|x| x == v))),
        "NotIn" => Some(value.is_none_or(|v| !values.iter().any(|x| x == v))),
        "Exists" => Some(value.is_some()),
        "DoesNotExist" => Some(value.is_none()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    #[test]
    fn match_labels_and_expressions_must_all_hold() {
        let pod = labels(&[("app", "web"), ("tier", "front")]);
        let sel = LabelSelector {
            match_labels: Some(labels(&[("app", "web")])),
            match_expressions: Some(vec![expr("tier", "In", &["front", "back"])]),
        };
        assert!(selector_matches(&sel, Some(&pod)));
        let other = labels(&[("app", "web"), ("tier", "db")]);
        assert!(!selector_matches(&sel, Some(&other)));
        assert!(!selector_matches(&sel, None));
    }

    #[test]
    fn empty_selector_matches_everything_and_operators_follow_kubernetes() {
        assert!(selector_matches(&LabelSelector::default(), None));
        let pod = labels(&[("app", "web")]);
        let one = |e| LabelSelector {
            match_expressions: Some(vec![e]),
            ..Default::default()
        };
        assert!(selector_matches(
            &one(expr("app", "NotIn", &["db"])),
            Some(&pod)
        ));
        assert!(selector_matches(
            &one(expr("zone", "NotIn", &["a"])),
            Some(&pod)
        ));
        assert!(selector_matches(
            &one(expr("app", "Exists", &[])),
            Some(&pod)
        ));
        assert!(!selector_matches(
            &one(expr("app", "DoesNotExist", &[])),
            Some(&pod)
        ));
        assert!(!selector_matches(
            &one(expr("app", "Gt", &["1"])),
            Some(&pod)
        ));
    }
}
