//! The checks a network-topology constraint gets wherever it is written (a PodGroup, a Job, a
//! task's partition policy): a known mode, and the highest tier named one way only.

use super::FieldError;
use crate::scheduling::NetworkTopologySpec;

/// `hard`: the gang is placed inside one domain of the allowed tier, or not at all.
pub const MODE_HARD: &str = "hard";
/// `soft`: the closest domain that fits is preferred, and the gang may cross domains.
pub const MODE_SOFT: &str = "soft";

/// Checks `nt`, written at `at` (`spec.networkTopology`).
pub fn check_network_topology(nt: &NetworkTopologySpec, at: &str) -> Result<(), FieldError> {
    if !nt.mode.is_empty() && nt.mode != MODE_HARD && nt.mode != MODE_SOFT {
        return Err(FieldError::new(
            format!("{at}.mode"),
            format!("must be {MODE_HARD:?} or {MODE_SOFT:?}; got {:?}", nt.mode),
        ));
    }
    if let Some(t) = nt.highest_tier_allowed
        && t < 0
    {
        return Err(FieldError::new(
            format!("{at}.highestTierAllowed"),
            format!("must be 0 or more; got {t}"),
        ));
    }
    if nt.highest_tier_allowed.is_some() && !nt.highest_tier_name.is_empty() {
        return Err(FieldError::new(
            at,
            "must not specify 'highestTierAllowed' and 'highestTierName' simultaneously",
        ));
    }
    Ok(())
}
