//! Text for the report: escaping, durations as a person reads them, and axis ticks at round
//! values. Every function here is total: NaN and infinities come out as a dash or are left out,
//! never as "NaN" in the page.

/// `text` safe inside HTML and SVG, in element content and in quoted attributes alike.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A value fit for a coordinate: non-finite values become 0 so the SVG stays valid.
pub(super) fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// Seconds as `45s`, `12m`, `12m30s`, `3h`, `3h05m`, `2d4h`; a dash when not a number.
pub(super) fn duration(seconds: f64) -> String {
    if !seconds.is_finite() {
        return "–".to_string();
    }
    let sign = if seconds < 0.0 { "-" } else { "" };
    // Whole seconds are as fine as any reader of a day-long run wants; `as` saturates.
    let total = seconds.abs().round() as u64;
    let (d, h, m, s) = (
        total / 86_400,
        total / 3600 % 24,
        total / 60 % 60,
        total % 60,
    );
    let text = if total < 60 {
        format!("{s}s")
    } else if total < 3600 {
        if s == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{s:02}s")
        }
    } else if total < 4 * 86_400 {
        let h = total / 3600;
        if m == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{m:02}m")
        }
    } else if h == 0 {
        format!("{d}d")
    } else {
        format!("{d}d{h}h")
    };
    format!("{sign}{text}")
}

/// A fraction as a percentage: `63%`, `4.5%`; a dash when not a number.
pub(super) fn percent(fraction: f64) -> String {
    if !fraction.is_finite() {
        return "–".to_string();
    }
    let p = fraction * 100.0;
    if p != 0.0 && p.abs() < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// Milliseconds: `0.42 ms`, `12 ms`, `1.3 s`.
pub(super) fn millis(ms: f64) -> String {
    if !ms.is_finite() {
        "–".to_string()
    } else if ms >= 1000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

/// Time steps an axis may use: each a duration a person counts in.
const TIME_STEPS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
    10_800.0, 21_600.0, 43_200.0, 86_400.0, 172_800.0, 604_800.0,
];

/// Tick positions from `lo` to `hi` at a round time step, at most about `max_ticks` of them.
pub(super) fn time_ticks(lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
    let span = hi - lo;
    let max_ticks = max_ticks.max(2) as f64;
    let step = TIME_STEPS
        .iter()
        .copied()
        .find(|s| span / s <= max_ticks)
        .unwrap_or_else(|| nice_step(span / max_ticks));
    ticks_at(lo, hi, step)
}

/// Tick positions from `lo` to `hi` at a 1-2-5 step, at most about `max_ticks` of them.
pub(super) fn number_ticks(lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
    ticks_at(lo, hi, nice_step((hi - lo) / max_ticks.max(1) as f64))
}

/// Like [`number_ticks`], for counts: the step is a whole number.
pub(super) fn count_ticks(lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
    ticks_at(
        lo,
        hi,
        nice_step((hi - lo) / max_ticks.max(1) as f64).max(1.0),
    )
}

/// The smallest of 1, 2, 5 × 10^k at least `raw` (1 for nonsense input).
pub(super) fn nice_step(raw: f64) -> f64 {
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * magnitude)
}

/// The round number at or above `x` on the 1-2-5 ladder of `step`: where an axis should end.
pub(super) fn nice_ceil(x: f64, max_ticks: usize) -> f64 {
    if !x.is_finite() || x <= 0.0 {
        return 1.0;
    }
    let step = nice_step(x / max_ticks.max(1) as f64);
    (x / step).ceil() * step
}

fn ticks_at(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite() && step.is_finite()) || step <= 0.0 || hi < lo {
        return Vec::new();
    }
    let first = (lo / step).ceil();
    let last = (hi / step + 1e-9).floor();
    // At most a few hundred ticks whatever the input: the loop bound is explicit.
    let count = (last - first).clamp(-1.0, 500.0) as i64;
    (0..=count).map(|i| (first + i as f64) * step).collect()
}

/// A tick label for a plain count: `0`, `25`, `1.5k`, `2M`.
pub(super) fn count(x: f64) -> String {
    if !x.is_finite() {
        return "–".to_string();
    }
    let a = x.abs();
    if a >= 1e6 {
        trim(format!("{:.1}", x / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", x / 1e3)) + "k"
    } else if (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else {
        trim(format!("{x:.2}"))
    }
}

fn trim(text: String) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape(r#"<script>alert("x'")</script>&"#),
            "&lt;script&gt;alert(&quot;x&#39;&quot;)&lt;/script&gt;&amp;"
        );
    }

    #[test]
    fn durations_read_as_hours_and_minutes() {
        assert_eq!(duration(0.0), "0s");
        assert_eq!(duration(42.4), "42s");
        assert_eq!(duration(600.0), "10m");
        assert_eq!(duration(750.0), "12m30s");
        assert_eq!(duration(5400.0), "1h30m");
        assert_eq!(duration(86_400.0), "24h");
        assert_eq!(duration(5.0 * 86_400.0 + 7200.0), "5d2h");
        assert_eq!(duration(f64::NAN), "–");
    }

    #[test]
    fn ticks_land_on_round_values() {
        let three_hours: Vec<f64> = (0..=8).map(|i| f64::from(i) * 10_800.0).collect();
        assert_eq!(time_ticks(0.0, 86_400.0, 8), three_hours);
        assert_eq!(time_ticks(30.0, 200.0, 4), vec![60.0, 120.0, 180.0]);
        assert_eq!(
            number_ticks(0.0, 10.0, 5),
            vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
        assert_eq!(nice_ceil(37.0, 5), 40.0);
        assert_eq!(count_ticks(0.0, 2.0, 5), vec![0.0, 1.0, 2.0]);
        assert!(time_ticks(0.0, f64::NAN, 8).is_empty());
        assert!(number_ticks(5.0, 1.0, 5).is_empty());
    }

    #[test]
    fn counts_and_percentages() {
        assert_eq!(count(25.0), "25");
        assert_eq!(count(15_000.0), "15k");
        assert_eq!(percent(0.634), "63%");
        assert_eq!(percent(0.045), "4.5%");
        assert_eq!(percent(f64::INFINITY), "–");
    }
}
