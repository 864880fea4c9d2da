//! Kubernetes quantities (`500m`, `2`, `1.5`, `1Gi`, `1G`, `1e3`), parsed exactly into integers.
//!
//! Parsing never panics and never rounds silently downwards: a value that is not a whole number
//! of the target unit is rounded up, as Kubernetes' `Value()`/`MilliValue()` do. A value too
//! large for an `i64` of the target unit is an error, not a wrap-around.

use thiserror::Error;

/// Why a quantity string is not a valid Kubernetes quantity.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum QuantityError {
    /// The string is empty.
    #[error("empty quantity")]
    Empty,
    /// The string does not follow the quantity grammar.
    #[error(
        "invalid quantity {0:?}: expected a number with an optional suffix such as 500m, 2, 1.5, 1Gi, 1G or 1e3"
    )]
    Syntax(String),
    /// The value does not fit in 64 bits of the target unit.
    #[error("quantity {0:?} is too large")]
    TooLarge(String),
    /// A negative value where only non-negative ones make sense.
    #[error("quantity {0:?} is negative")]
    Negative(String),
}

/// A parsed quantity: `mantissa × 10^exp10 × 1024^exp1024`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Parsed {
    mantissa: i128,
    exp10: i32,
    exp1024: u32,
}

fn parse(s: &str) -> Result<Parsed, QuantityError> {
    let text = s.trim();
    if text.is_empty() {
        return Err(QuantityError::Empty);
    }
    let syntax = || QuantityError::Syntax(s.to_string());
    let bytes = text.as_bytes();
    let mut i = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut mantissa: i128 = 0;
    let mut exp10: i32 = 0;
    let mut digits = 0usize;
    let mut seen_dot = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() {
            // Digits beyond what i128 can hold add nothing a cluster could use: keep the
            // magnitude through the exponent instead of overflowing.
            if mantissa < i128::MAX / 100 {
                mantissa = mantissa * 10 + i128::from(c - b'0');
                if seen_dot {
                    exp10 -= 1;
                }
            } else if !seen_dot {
                exp10 += 1;
            }
            digits += 1;
        } else if c == b'.' && !seen_dot {
            seen_dot = true;
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return Err(syntax());
    }
    let suffix = &text[i..];
    let (extra10, exp1024): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 1),
        "Mi" => (0, 2),
        "Gi" => (0, 3),
        "Ti" => (0, 4),
        "Pi" => (0, 5),
        "Ei" => (0, 6),
        _ => {
            let rest = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))
                .ok_or_else(syntax)?;
            let (sign, body) = match rest.as_bytes().first() {
                Some(b'-') => (-1, &rest[1..]),
                Some(b'+') => (1, &rest[1..]),
                _ => (1, rest),
            };
            if body.is_empty() || body.len() > 4 || !body.bytes().all(|b| b.is_ascii_digit()) {
                return Err(syntax());
            }
            let e: i32 = body.parse().map_err(|_| syntax())?;
            (sign * e, 0)
        }
    };
    Ok(Parsed {
        mantissa: if negative { -mantissa } else { mantissa },
        exp10: exp10 + extra10,
        exp1024,
    })
}

/// `value × 10^scale`, rounded up, as an `i64`.
fn scaled(s: &str, scale: i32) -> Result<i64, QuantityError> {
    let p = parse(s)?;
    let too_large = || QuantityError::TooLarge(s.to_string());
    let mut v = p.mantissa;
    for _ in 0..p.exp1024 {
        v = v.checked_mul(1024).ok_or_else(too_large)?;
    }
    let e = p.exp10 + scale;
    if e >= 0 {
        for _ in 0..e {
            v = v.checked_mul(10).ok_or_else(too_large)?;
        }
    } else {
        let mut div: i128 = 1;
        for _ in 0..(-e) {
            match div.checked_mul(10) {
                Some(d) => div = d,
                // Dividing by more than i128 can hold leaves at most one unit after rounding up.
                None => return Ok(if v > 0 { 1 } else { 0 }),
            }
        }
        // Round towards +infinity, as Kubernetes does.
        let q = v.div_euclid(div);
        v = if v.rem_euclid(div) != 0 { q + 1 } else { q };
    }
    i64::try_from(v).map_err(|_| too_large())
}

/// The quantity in whole units, rounded up (`1Gi` → 1073741824, `1.5` → 2).
pub fn parse_value(s: &str) -> Result<i64, QuantityError> {
    scaled(s, 0)
}

/// The quantity in thousandths, rounded up (`500m` → 500, `2` → 2000).
pub fn parse_milli(s: &str) -> Result<i64, QuantityError> {
    scaled(s, 3)
}

/// Formats thousandths the way `kubectl` shows them: `2`, `500m`.
pub fn format_milli(milli: i64) -> String {
    if milli % 1000 == 0 {
        format!("{}", milli / 1000)
    } else {
        format!("{milli}m")
    }
}

/// Formats a byte count with the largest binary suffix that divides it exactly: `2Gi`, `512Mi`.
pub fn format_bytes(bytes: i64) -> String {
    const SUFFIXES: [&str; 6] = ["Ei", "Pi", "Ti", "Gi", "Mi", "Ki"];
    if bytes == 0 {
        return "0".to_string();
    }
    for (i, suffix) in SUFFIXES.iter().enumerate() {
        let unit = 1i64 << (10 * (6 - i as u32));
        if bytes % unit == 0 {
            return format!("{}{}", bytes / unit, suffix);
        }
    }
    bytes.to_string()
}

/// Formats a byte count for a person: the largest binary suffix the amount reaches, with at
/// most two decimals, rounded down (`307.19Gi`, `1.5Mi`, `512`), so a free amount is never
/// shown larger than it is. Exact amounts read as [`format_bytes`] would show them.
pub fn format_bytes_human(bytes: i64) -> String {
    const UNITS: [(&str, u32); 6] = [
        ("Ei", 60),
        ("Pi", 50),
        ("Ti", 40),
        ("Gi", 30),
        ("Mi", 20),
        ("Ki", 10),
    ];
    let sign = if bytes < 0 { "-" } else { "" };
    let mag = bytes.unsigned_abs();
    for (suffix, shift) in UNITS {
        let unit = 1u64 << shift;
        if mag < unit {
            continue;
        }
        let whole = mag / unit;
        let hundredths = (u128::from(mag % unit) * 100 / u128::from(unit)) as u64;
        let frac = match hundredths {
            0 => String::new(),
            h if h % 10 == 0 => format!(".{}", h / 10),
            h => format!(".{h:02}"),
        };
        return format!("{sign}{whole}{frac}{suffix}");
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kubernetes_forms() {
        assert_eq!(parse_milli("500m"), Ok(500));
        assert_eq!(parse_milli("2"), Ok(2000));
        assert_eq!(parse_milli("1.5"), Ok(1500));
        assert_eq!(parse_value("1Gi"), Ok(1 << 30));
        assert_eq!(parse_value("1G"), Ok(1_000_000_000));
        assert_eq!(parse_value("1e3"), Ok(1000));
        assert_eq!(parse_value("1E3"), Ok(1000));
        assert_eq!(parse_value("128974848"), Ok(128_974_848));
        assert_eq!(parse_value("129e6"), Ok(129_000_000));
        assert_eq!(parse_value("123Mi"), Ok(123 * 1024 * 1024));
        assert_eq!(parse_milli("0.1"), Ok(100));
        assert_eq!(parse_milli("100u"), Ok(1));
        assert_eq!(parse_value("-1"), Ok(-1));
    }

    #[test]
    fn rounds_up_like_kubernetes() {
        assert_eq!(parse_value("1.5"), Ok(2));
        assert_eq!(parse_milli("1n"), Ok(1));
        assert_eq!(parse_value("100m"), Ok(1));
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "12x", "x", "1.2.3", "Gi", "1e", "1Gii", "--1", "1 Gi"] {
            assert!(parse_value(bad).is_err(), "{bad} should be rejected");
        }
        assert!(parse_value("1Ei1").is_err());
        assert!(matches!(
            parse_value("100E"),
            Err(QuantityError::TooLarge(_))
        ));
        assert!(matches!(
            parse_value("9999999999999999999999999999999999999999"),
            Err(QuantityError::TooLarge(_))
        ));
    }

    #[test]
    fn formats_round_trip() {
        assert_eq!(format_milli(2000), "2");
        assert_eq!(format_milli(500), "500m");
        assert_eq!(format_bytes(2 << 30), "2Gi");
        assert_eq!(format_bytes(1_000_000_000), "1000000000");
        assert_eq!(format_bytes(1536 * 1024), "1536Ki");
    }

    #[test]
    fn formats_bytes_for_people() {
        assert_eq!(format_bytes_human(2 << 30), "2Gi");
        assert_eq!(format_bytes_human(329_853_488_332), "307.19Gi");
        assert_eq!(format_bytes_human(1536 * 1024), "1.5Mi");
        assert_eq!(format_bytes_human(1_000_000_000), "953.67Mi");
        assert_eq!(format_bytes_human((2 << 30) - 1), "1.99Gi");
        assert_eq!(format_bytes_human(512), "512");
        assert_eq!(format_bytes_human(0), "0");
        assert_eq!(format_bytes_human(-(3 << 20)), "-3Mi");
        assert_eq!(format_bytes_human(i64::MIN), "-8Ei");
    }
}
