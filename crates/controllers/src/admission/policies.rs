//! Lifecycle policy rules (`validatePolicies` in Volcano's `validate/util.go`), for one list of
//! policies: the job's or one task's. Events and exit codes must be unique within the list.

use std::collections::BTreeSet;

use volcano_api::batch::LifecyclePolicy;
use volcano_api::bus::{BusAction, BusEvent};

use super::Violations;
use super::names::go_list;
use crate::time::parse_duration;

/// Volcano's `field.Invalid(...)` body for a rejected event.
fn invalid_event(event: &str) -> String {
    format!(
        "Invalid value: {event:?}: invalid policy event, valid events are {}",
        go_list(BusEvent::USER)
    )
}

fn user_event(name: &str) -> Option<BusEvent> {
    BusEvent::parse(name).filter(|e| BusEvent::USER.contains(e))
}

fn user_action(name: &str) -> Option<BusAction> {
    BusAction::parse(name).filter(|a| BusAction::USER.contains(a))
}

/// Checks `policies`, found at `path` (`spec.policies` or `spec.tasks[i].policies`).
pub(crate) fn validate_policies(policies: &[LifecyclePolicy], path: &str, out: &mut Violations) {
    let mut seen_events: BTreeSet<BusEvent> = BTreeSet::new();
    let mut seen_codes: BTreeSet<i32> = BTreeSet::new();

    for (i, policy) in policies.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let has_event = !policy.event.is_empty() || !policy.events.is_empty();
        match (has_event, policy.exit_code) {
            (true, Some(_)) => {
                out.push(&at, "must not specify event and exitCode simultaneously");
                continue;
            }
            (false, None) => {
                out.push(&at, "either event and exitCode should be specified");
                continue;
            }
            _ => {}
        }

        // Volcano checks the action only for event policies; an exit-code policy with a bad
        // action would be admitted and then do nothing, so it is checked here for both.
        if user_action(&policy.action).is_none() {
            out.push(
                format!("{at}.action"),
                format!(
                    "Invalid value: {:?}: invalid policy action, valid actions are {}",
                    policy.action,
                    go_list(BusAction::USER)
                ),
            );
        }

        if let Some(code) = policy.exit_code {
            if code == 0 {
                out.push(format!("{at}.exitCode"), "0 is not a valid error code");
            } else if !seen_codes.insert(code) {
                out.push(
                    format!("{at}.exitCode"),
                    format!("duplicate exitCode {code}"),
                );
            }
        } else {
            // One policy may name an event twice (`event` and `events`): Volcano de-duplicates
            // within a policy and only rejects repeats across policies.
            let mut in_policy: BTreeSet<&str> = BTreeSet::new();
            let named = policy
                .events
                .iter()
                .enumerate()
                .map(|(j, e)| (format!("{at}.events[{j}]"), e.as_str()))
                .chain(
                    (!policy.event.is_empty())
                        .then(|| (format!("{at}.event"), policy.event.as_str())),
                );
            for (field, name) in named {
                if !in_policy.insert(name) {
                    continue;
                }
                match user_event(name) {
                    None => out.push(field, invalid_event(name)),
                    Some(event) => {
                        if !seen_events.insert(event) {
                            out.push(
                                field,
                                format!("duplicate event {event} across different policy"),
                            );
                        }
                    }
                }
            }
        }

        if let Some(timeout) = policy
            .timeout
            .as_ref()
            .filter(|t| parse_duration(t).is_none())
        {
            // Go's `time.ParseDuration` error, which Volcano returns when decoding the job.
            out.push(
                format!("{at}.timeout"),
                format!("time: invalid duration {timeout:?}"),
            );
        }
    }

    if seen_events.contains(&BusEvent::Any) && seen_events.len() > 1 {
        out.push(path, "if there's * here, no other policy should be here");
    }
}
