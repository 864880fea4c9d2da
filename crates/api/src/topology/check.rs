//! The checks a HyperNode gets on its own: at least one member, a known member type, exactly
//! one way of choosing members, labels only for nodes, and a pattern that compiles.

use super::{HyperNode, MEMBER_HYPER_NODE, MEMBER_NODE, MemberSelector};
use crate::field_error::FieldError;

/// The highest tier a HyperNode may have (Go's 32-bit `int` range; real trees have a few).
pub const MAX_TIER: i64 = i32::MAX as i64;

/// Checks the members of a HyperNode (the tree the HyperNodes form together is checked by
/// [`super::tree::HyperNodeTree::build`]).
pub fn check_hyper_node(hn: &HyperNode) -> Result<(), FieldError> {
    if !(0..=MAX_TIER).contains(&hn.spec.tier) {
        return Err(FieldError::new(
            "spec.tier",
            format!("must be from 0 to {MAX_TIER}; got {}", hn.spec.tier),
        ));
    }
    if hn.spec.members.is_empty() {
        return Err(FieldError::new(
            "spec.members",
            "a HyperNode must have at least one member",
        ));
    }
    for (i, m) in hn.spec.members.iter().enumerate() {
        let at = format!("spec.members[{i}]");
        if m.member_type != MEMBER_NODE && m.member_type != MEMBER_HYPER_NODE {
            return Err(FieldError::new(
                format!("{at}.type"),
                format!(
                    "must be {MEMBER_NODE:?} or {MEMBER_HYPER_NODE:?}; got {:?}",
                    m.member_type
                ),
            ));
        }
        check_selector(&m.selector, &m.member_type, &format!("{at}.selector"))?;
    }
    Ok(())
}

fn check_selector(s: &MemberSelector, member_type: &str, at: &str) -> Result<(), FieldError> {
    let ways = usize::from(s.exact_match.is_some())
        + usize::from(s.regex_match.is_some())
        + usize::from(s.label_match.is_some());
    if ways != 1 {
        return Err(FieldError::new(
            at,
            format!(
                "exactly one of exactMatch, regexMatch or labelMatch must be given; got {ways}"
            ),
        ));
    }
    if let Some(e) = &s.exact_match
        && e.name.is_empty()
    {
        return Err(FieldError::new(
            format!("{at}.exactMatch.name"),
            "required; got an empty name",
        ));
    }
    if let Some(r) = &s.regex_match {
        if r.pattern.is_empty() {
            return Err(FieldError::new(
                format!("{at}.regexMatch.pattern"),
                "required; got an empty pattern",
            ));
        }
        if let Err(e) = regex::Regex::new(&r.pattern) {
            return Err(FieldError::new(
                format!("{at}.regexMatch.pattern"),
                format!("{:?} is not a valid regular expression: {e}", r.pattern),
            ));
        }
    }
    if let Some(l) = &s.label_match {
        if member_type != MEMBER_NODE {
            return Err(FieldError::new(
                format!("{at}.labelMatch"),
                "chooses nodes only; a HyperNode member is chosen by exactMatch or regexMatch",
            ));
        }
        if l.match_labels.as_ref().is_none_or(|m| m.is_empty())
            && l.match_expressions.as_ref().is_none_or(|e| e.is_empty())
        {
            return Err(FieldError::new(
                format!("{at}.labelMatch"),
                "an empty selector would choose no node (as Volcano reads it); give matchLabels or matchExpressions",
            ));
        }
    }
    Ok(())
}
