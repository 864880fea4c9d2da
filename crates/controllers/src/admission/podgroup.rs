//! Volcano's PodGroup validating webhook: a new PodGroup goes to an existing, Open queue, and
//! names its network-topology tier one way only.

use volcano_api::scheduling::{NetworkTopologySpec, PodGroup, queue_state};

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
    let both = |t: Option<&NetworkTopologySpec>| {
        t.is_some_and(|t| t.highest_tier_allowed.is_some() && !t.highest_tier_name.is_empty())
    };
    let mut topology = Vec::new();
    if both(pg.spec.network_topology.as_ref()) {
        topology.push(
            "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology \
             simultaneously."
                .to_string(),
        );
    }
    if let Some(p) = pg
        .spec
        .sub_group_policy
        .iter()
        .flatten()
        .find(|p| both(p.network_topology.as_ref()))
    {
        topology.push(format!(
            "in subGroupPolicy '{}': must not specify 'highestTierAllowed' and \
             'highestTierName' in networkTopology simultaneously.",
            p.name
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
