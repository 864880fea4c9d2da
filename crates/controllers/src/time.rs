//! Time as the controllers see it: a point given by the caller, never read from a clock, so
//! the simulator's virtual clock and a real one drive the same code.

use std::time::Duration;

use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use volcano_api::k8s_openapi::jiff::{SignedDuration, Timestamp};

/// A point in time: the duration since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(pub Duration);

impl Instant {
    /// The instant `d` after this one.
    pub fn after(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d))
    }

    /// How long after `earlier` this instant is (zero if it is not after it).
    pub fn since(self, earlier: Instant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// As a Kubernetes timestamp.
    pub fn to_time(self) -> Time {
        let d = SignedDuration::try_from(self.0).unwrap_or(SignedDuration::MAX);
        Time(
            Timestamp::UNIX_EPOCH
                .checked_add(d)
                .unwrap_or(Timestamp::MAX),
        )
    }

    /// From a Kubernetes timestamp (times before the epoch count as the epoch).
    pub fn from_time(t: &Time) -> Instant {
        let d = t.0.duration_since(Timestamp::UNIX_EPOCH);
        Instant(Duration::try_from(d).unwrap_or(Duration::ZERO))
    }
}

pub use volcano_api::go_duration::parse_duration;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_round_trip_through_kubernetes_time() {
        let t = Instant(Duration::from_secs(1_700_000_000));
        assert_eq!(Instant::from_time(&t.to_time()), t);
    }
}
