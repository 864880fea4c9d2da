//! The checks a PodGroup's `subGroupPolicy` gets: each policy named once, sizes that can be
//! met, a selector with known operators, label keys to split by, and a valid network topology.

use std::collections::BTreeSet;

use super::{FieldError, check_network_topology};
use crate::scheduling::SubGroupPolicySpec;

/// Checks `policies`, written at `at` (`spec.subGroupPolicy`).
pub fn check_sub_group_policy(policies: &[SubGroupPolicySpec], at: &str) -> Result<(), FieldError> {
    let mut names = BTreeSet::new();
    for (i, p) in policies.iter().enumerate() {
        let here = format!("{at}[{i}]");
        if p.name.is_empty() {
            return Err(FieldError::new(
                format!("{here}.name"),
                "must not be empty: sub-groups are known by their policy's name",
            ));
        }
        if !names.insert(p.name.as_str()) {
            return Err(FieldError::new(
                format!("{here}.name"),
                format!("{:?} names two policies", p.name),
            ));
        }
        if let Some(n) = p.sub_group_size.filter(|n| *n < 1) {
            return Err(FieldError::new(
                format!("{here}.subGroupSize"),
                format!("must be 1 or more; got {n}"),
            ));
        }
        if let Some(n) = p.min_sub_groups.filter(|n| *n < 0) {
            return Err(FieldError::new(
                format!("{here}.minSubGroups"),
                format!("must be 0 or more; got {n}"),
            ));
        }
        if let Some(k) = p.match_label_keys.iter().position(String::is_empty) {
            return Err(FieldError::new(
                format!("{here}.matchLabelKeys[{k}]"),
                "must not be empty",
            ));
        }
        let exprs = p
            .label_selector
            .as_ref()
            .and_then(|s| s.match_expressions.as_ref());
        for (k, e) in exprs.into_iter().flatten().enumerate() {
            let field = format!("{here}.labelSelector.matchExpressions[{k}]");
            let has_values = e.values.as_ref().is_some_and(|v| !v.is_empty());
            match e.operator.as_str() {
                "In" | "NotIn" if !has_values => {
                    return Err(FieldError::new(
                        format!("{field}.values"),
                        format!("must not be empty with operator {}", e.operator),
                    ));
                }
                "Exists" | "DoesNotExist" if has_values => {
                    return Err(FieldError::new(
                        format!("{field}.values"),
                        format!("must be empty with operator {}", e.operator),
                    ));
                }
                "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                other => {
                    return Err(FieldError::new(
                        format!("{field}.operator"),
                        format!("must be In, NotIn, Exists or DoesNotExist; got {other:?}"),
                    ));
                }
            }
        }
        if let Some(nt) = &p.network_topology {
            check_network_topology(nt, &format!("{here}.networkTopology"))?;
        }
    }
    Ok(())
}
