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

/// Parses a Go-style duration (`90s`, `10m`, `1h30m`, `500ms`), as lifecycle policy timeouts
/// are written.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let value: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total = total.checked_add(Duration::try_from_secs_f64(value * seconds_per_unit).ok()?)?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5m"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("ten minutes"), None);
        assert_eq!(parse_duration(""), None);
    }

    #[test]
    fn instants_round_trip_through_kubernetes_time() {
        let t = Instant(Duration::from_secs(1_700_000_000));
        assert_eq!(Instant::from_time(&t.to_time()), t);
    }
}
