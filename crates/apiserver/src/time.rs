//! Wall-clock helpers: RFC 3339 timestamps as Kubernetes writes them, and kubectl's `AGE` form.
//!
//! Times are whole seconds since the Unix epoch, UTC: the server writes `metav1.Time`, whose
//! wire form has no fraction (`2006-01-02T15:04:05Z`). Dates are jiff's, the library
//! k8s-openapi already uses for its timestamps.

use std::time::{SystemTime, UNIX_EPOCH};

use k8s_openapi::jiff::Timestamp;

/// Seconds since the Unix epoch now, by the system clock.
pub fn unix_now() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        // A clock before 1970 is a broken clock; the epoch is as good an answer as any.
        Err(_) => 0,
    }
}

/// `2024-05-01T12:00:00Z`. A time outside the years -9999 to 9999 (from a huge grace period)
/// is written as jiff's last or first instant.
pub fn format_rfc3339(secs: i64) -> String {
    let ts = Timestamp::from_second(secs).unwrap_or(if secs < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    });
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Parses `2024-05-01T12:00:00Z`, with optional fractional seconds (dropped) and a `+hh:mm`
/// offset.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    s.parse::<Timestamp>().ok().map(Timestamp::as_second)
}

/// kubectl's human duration (`45s`, `3m12s`, `5h`, `12d`), as the `AGE` column shows it.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".to_string();
    }
    let s = secs.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86_400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        if s % 60 == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{}s", s % 60)
        }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 192 {
        if h % 24 == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{}h", h % 24)
        }
    } else if d < 365 * 2 {
        format!("{d}d")
    } else if d < 365 * 8 {
        format!("{}y{}d", d / 365, d % 365)
    } else {
        format!("{}y", d / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for secs in [0, 951_782_400, 1_714_564_800, 4_102_444_799] {
            assert_eq!(parse_rfc3339(&format_rfc3339(secs)), Some(secs));
        }
        assert_eq!(format_rfc3339(1_714_564_800), "2024-05-01T12:00:00Z");
        assert_eq!(
            parse_rfc3339("2024-05-01T14:00:00.123456+02:00"),
            Some(1_714_564_800)
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2024-05-01T12:00:00"), None, "no offset");
        assert_eq!(
            parse_rfc3339("2024-05-01T12:00:00.999999Z"),
            Some(1_714_564_800)
        );
    }

    #[test]
    fn whole_seconds_in_utc_and_out_of_range_clamped() {
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(-1), "1969-12-31T23:59:59Z");
        assert_eq!(format_rfc3339(951_825_599), "2000-02-29T11:59:59Z");
        // jiff's last instant, which no UTC offset can push past the year 9999.
        assert_eq!(format_rfc3339(i64::MAX), "9999-12-30T22:00:00Z");
        assert_eq!(format_rfc3339(i64::MIN), "-9999-01-02T01:59:59Z");
    }

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(192), "3m12s");
        assert_eq!(human_duration(3600 * 5 + 60 * 7), "5h7m");
        assert_eq!(human_duration(86_400 * 3), "3d");
        assert_eq!(human_duration(86_400 * 400), "400d");
    }
}
