//! Volcano's PodGroup validating webhook: a new PodGroup goes to an existing, Open queue, and
//! names its network-topology tier one way only.

use serde_json::Value;
use volcano_api::scheduling::{PodGroup, queue_state};

use super::queue::not_found;
use super::request::AdmissionView;

/// Checks a PodGroup being created.
pub fn validate_podgroup(pg: &PodGroup, view: &dyn AdmissionView) -> Result<(), String> {
    let mut errors = Vec::new();
    let queue_name = pg.spec.queue.as_str();
    if !queue_name.is_empty() {
        match view.queue(queue_name) {
            None => errors.push(format!("unable to find queue: {}", not_found(queue_name))),
            Some(q) => {
                let state = q.status.as_ref().map(|s| s.state.as_str()).unwrap_or("");
                // A queue the queue controller has not yet written a state for is new, and
                // Open: Volcano refuses it for the instant after its creation, which fails
                // the first Job of a freshly applied manifest for no reason.
                if !state.is_empty() && state != queue_state::OPEN {
                    errors.push(format!(
                        "can only submit PodGroup to queue with state `Open`, queue \
                         `{queue_name}` status is `{state}`."
                    ));
                }
            }
        }
    }
    let both = |t: Option<&Value>| {
        t.is_some_and(|t| {
            t.get("highestTierAllowed").is_some_and(|v| !v.is_null())
                && t.get("highestTierName")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
        })
    };
    let mut topology = Vec::new();
    if both(pg.spec.network_topology.as_ref()) {
        topology.push(
            "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology \
             simultaneously."
                .to_string(),
        );
    }
    let policies = pg.spec.sub_group_policy.as_ref().and_then(Value::as_array);
    if let Some(p) = policies
        .into_iter()
        .flatten()
        .find(|p| both(p.get("networkTopology")))
    {
        let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
        topology.push(format!(
            "in subGroupPolicy '{name}': must not specify 'highestTierAllowed' and \
             'highestTierName' in networkTopology simultaneously."
        ));
    }
    if !topology.is_empty() {
        errors.push(topology.join(" "));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}
