//! Durations written as Go writes them (`90s`, `10m`, `1h30m`, `500ms`): lifecycle policy
//! timeouts, a Job's running duration, a CronJob's `@every`.

use std::time::Duration;

/// Parses a Go-style duration (`90s`, `10m`, `1h30m`, `500ms`, `2.05m`), as lifecycle policy
/// timeouts are written, with Go's `time.ParseDuration` arithmetic: the whole part exactly,
/// the fraction scaled in floating point and truncated to the nanosecond (so `2.05m` is
/// 123 s, as in Go). No sign: none of these durations may be negative.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let whole_len = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let whole: u64 = if whole_len == 0 {
            0
        } else {
            rest[..whole_len].parse().ok()?
        };
        rest = &rest[whole_len..];
        let mut fraction = "";
        if let Some(after_point) = rest.strip_prefix('.') {
            let len = after_point
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after_point.len());
            fraction = &after_point[..len];
            rest = &after_point[len..];
        }
        if whole_len == 0 && fraction.is_empty() {
            return None;
        }
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per_unit: u64 = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        rest = &rest[unit_len..];
        let mut nanos = whole.checked_mul(nanos_per_unit)?;
        if !fraction.is_empty() {
            // As Go: at most the digits that fit, the rest ignored.
            let digits = &fraction[..fraction.len().min(18)];
            let f: u64 = digits.parse().ok()?;
            let scale = 10f64.powi(i32::try_from(digits.len()).ok()?);
            nanos = nanos.checked_add((f as f64 * (nanos_per_unit as f64 / scale)) as u64)?;
        }
        total = total.checked_add(nanos)?;
    }
    Some(Duration::from_nanos(total))
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
        // Go's arithmetic, not a float's: 2.05 × 60 s is 123 s, not 122.999….
        assert_eq!(parse_duration("2.05m"), Some(Duration::from_secs(123)));
        assert_eq!(parse_duration(".5s"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.s"), Some(Duration::from_secs(1)));
        assert_eq!(parse_duration("."), None);
        assert_eq!(parse_duration("-5s"), None);
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("ten minutes"), None);
        assert_eq!(parse_duration(""), None);
    }
}
