//! The one duration grammar of simulation annotations and flags: `90s`, `15m`, `2h`, `1h30m`,
//! `500ms`, `1.5h`, `30d`. Go's syntax (as lifecycle policy timeouts use) plus `d` for days,
//! since simulated runs are often counted in days.

use std::time::Duration;

/// A duration that does not parse, with what was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a duration (write e.g. 90s, 15m, 2h, 1h30m, 500ms, 1d)")]
pub struct DurationError {
    /// The text given.
    pub text: String,
}

const NANOS_PER_UNIT: [(&str, u128); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
];

/// Parses a duration. Bare numbers other than `0` are refused: `10` could mean anything.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    parse_nanos(text.trim())
        .and_then(|n| u64::try_from(n).ok())
        .map(Duration::from_nanos)
        .ok_or_else(|| DurationError {
            text: text.to_string(),
        })
}

/// Total nanoseconds, in integer arithmetic so `0.1s` is exactly 100ms.
fn parse_nanos(mut rest: &str) -> Option<u128> {
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(num_len);
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let per = NANOS_PER_UNIT.iter().find(|(u, _)| *u == unit)?.1;
        total = total.checked_add(scaled(number, per)?)?;
        rest = tail;
    }
    Some(total)
}

/// `number` (digits with at most one dot) times `per`, truncated to whole nanoseconds.
fn scaled(number: &str, per: u128) -> Option<u128> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || !digits(frac) {
        return None;
    }
    let whole: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut value = whole.checked_mul(per)?;
    // Fractional digits beyond what a nanosecond can hold add nothing.
    let mut scale = per;
    for b in frac.bytes().take(30) {
        scale /= 10;
        value = value.checked_add(u128::from(b - b'0').checked_mul(scale)?)?;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Result<Duration, DurationError> {
        Ok(Duration::from_secs(s))
    }

    #[test]
    fn the_documented_forms_parse() {
        assert_eq!(parse("90s"), secs(90));
        assert_eq!(parse("15m"), secs(900));
        assert_eq!(parse("2h"), secs(7200));
        assert_eq!(parse("1h30m"), secs(5400));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("1.5h"), secs(5400));
        assert_eq!(parse("1d"), secs(86_400));
        assert_eq!(parse("0.1s"), Ok(Duration::from_millis(100)));
        assert_eq!(parse("30d"), secs(30 * 86_400));
        assert_eq!(parse("0"), secs(0));
        assert_eq!(parse(" 10m "), secs(600));
    }

    #[test]
    fn nonsense_is_refused() {
        for bad in [
            "",
            "10",
            "ten",
            "5 m",
            "-5m",
            "1x",
            "m",
            "1..5s",
            ".s",
            "1h-30m",
            "99999999999999d",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn the_error_quotes_the_text() {
        let e = parse("10").err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("\"10\" is not a duration (write e.g. 90s, 15m, 2h, 1h30m, 500ms, 1d)")
        );
    }
}
