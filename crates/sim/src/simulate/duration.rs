//! Durations as simulation annotations and flags write them. The grammar is
//! [`volcano_api::lifecycle::duration`], shared with `volcano up`'s kubelets; what stays here
//! is how the simulator's reports write a duration back.

use std::fmt;
use std::time::Duration;

pub use volcano_api::lifecycle::duration::{DurationError, parse};

/// A duration written back in the same syntax, largest units first (`1h30m`, `500ms`, `0s`).
pub struct Human(pub Duration);

impl fmt::Display for Human {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.is_zero() {
            return f.write_str("0s");
        }
        let secs = d.as_secs();
        let millis = d.subsec_millis();
        if secs == 0 {
            return if millis > 0 {
                write!(f, "{millis}ms")
            } else {
                write!(f, "{}ns", d.subsec_nanos())
            };
        }
        let (days, hours, mins, s) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
        for (v, unit) in [(days, "d"), (hours, "h"), (mins, "m")] {
            if v > 0 {
                write!(f, "{v}{unit}")?;
            }
        }
        match (s, millis) {
            (0, 0) => Ok(()),
            (s, 0) => write!(f, "{s}s"),
            (s, ms) => write!(f, "{s}.{ms:03}s"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_back_largest_units_first() {
        assert_eq!(Human(Duration::from_secs(5400)).to_string(), "1h30m");
        assert_eq!(Human(Duration::from_secs(90_061)).to_string(), "1d1h1m1s");
        assert_eq!(Human(Duration::from_millis(500)).to_string(), "500ms");
        assert_eq!(Human(Duration::from_millis(1500)).to_string(), "1.500s");
        assert_eq!(Human(Duration::ZERO).to_string(), "0s");
        for text in ["1h30m", "2d", "45s", "500ms"] {
            let d = parse(text).unwrap_or_default();
            assert_eq!(Human(d).to_string(), text);
        }
    }
}
