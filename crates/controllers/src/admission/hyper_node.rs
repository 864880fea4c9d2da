//! `/hypernodes/validate`: a HyperNode is refused for what `check_hyper_node` refuses, in
//! Volcano's words where its webhook has some (an empty member list, a pattern that does not
//! compile).

use volcano_api::spec_checks::{FieldError, check_hyper_node};
use volcano_api::topology::HyperNode;

/// Why `hn` cannot be admitted, if it cannot.
pub fn validate_hyper_node(hn: &HyperNode) -> Result<(), String> {
    check_hyper_node(hn).map_err(|e| volcano_words(&e))
}

fn volcano_words(e: &FieldError) -> String {
    if e.field == "spec.members" {
        return format!("{}: member must have at least one member", e.field);
    }
    if e.field.ends_with(".regexMatch.pattern")
        && let Some((_, why)) = e.message.split_once("is not a valid regular expression: ")
    {
        return format!("{}: member regexMatch pattern is invalid: {why}", e.field);
    }
    e.to_string()
}
