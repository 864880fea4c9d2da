//! The Prometheus text format 0.0.4, which Volcano's components serve (Go's `promhttp` without
//! OpenMetrics), made from the OpenMetrics text that `prometheus-client` writes.
//!
//! Why a translation: OpenMetrics requires every counter sample to end in `_total`, so a counter
//! Volcano names without it (`volcano_total_preemption_attempts`, `volcano_job_retry_counts`)
//! cannot be written in OpenMetrics under Volcano's name, and `prometheus-client` has no other
//! text encoder. The two formats differ only in a few line-local ways, each handled here:
//! a counter family is named by its sample name (`x_total`, or the bare name for the counters
//! listed as unsuffixed), `# UNIT`, `_created` samples and `# EOF` do not exist, and numbers are
//! written as Go writes them (`1`, `+Inf`, `1e+06`) so `le` label values match Volcano's. The
//! full stop `prometheus-client` adds to every help text is taken off again.

use std::collections::BTreeSet;

/// The content type of the format [`to_text`] writes.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Rewrites `openmetrics` (as `prometheus_client::encoding::text::encode` writes it) in the text
/// format 0.0.4. Counters named in `unsuffixed` keep their bare name; every other counter is
/// named `<name>_total`, as its samples are.
pub fn to_text(openmetrics: &str, unsuffixed: &[&str]) -> String {
    let unsuffixed: BTreeSet<&str> = unsuffixed.iter().copied().collect();
    let mut out = String::with_capacity(openmetrics.len());
    let mut help: Option<(&str, &str)> = None;
    // The current counter family: its OpenMetrics name and its 0.0.4 name.
    let mut counter: Option<(String, String)> = None;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            // `prometheus-client` ends every help text with a full stop of its own.
            help = Some((name, text.strip_suffix('.').unwrap_or(text)));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (exported, kind) = match kind {
                "counter" => {
                    let exported = if unsuffixed.contains(name) {
                        name.to_string()
                    } else {
                        format!("{name}_total")
                    };
                    counter = Some((name.to_string(), exported.clone()));
                    (exported, kind)
                }
                // 0.0.4 has no `unknown`; Go calls it `untyped`.
                "unknown" => {
                    counter = None;
                    (name.to_string(), "untyped")
                }
                _ => {
                    counter = None;
                    (name.to_string(), kind)
                }
            };
            if let Some((h, text)) = help.take()
                && h == name
            {
                out.push_str(&format!("# HELP {exported} {text}\n"));
            }
            out.push_str(&format!("# TYPE {exported} {kind}\n"));
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            // `# UNIT`, `# EOF`: nothing of the kind in 0.0.4.
            continue;
        }
        if let Some(sample) = sample(line, counter.as_ref()) {
            out.push_str(&sample);
            out.push('\n');
        }
    }
    out
}

/// One sample line in 0.0.4; `None` for a line to drop (a counter's `_created`).
fn sample(line: &str, counter: Option<&(String, String)>) -> Option<String> {
    let name_end = line.find(['{', ' ']).unwrap_or(line.len());
    let (name, rest) = line.split_at(name_end);
    let name = match counter {
        Some((family, exported)) => {
            if name == format!("{family}_created") {
                return None;
            }
            if name == format!("{family}_total") {
                exported.as_str()
            } else {
                name
            }
        }
        None => name,
    };
    let (labels, value) = if rest.starts_with('{') {
        let close = labels_end(rest)?;
        (&rest[..=close], rest[close + 1..].trim_start())
    } else {
        ("", rest.trim_start())
    };
    // An exemplar or timestamp may follow the value; only the value is kept.
    let value = value.split(' ').next().unwrap_or("");
    Some(format!("{name}{} {}", go_labels(labels), go_number(value)))
}

/// Index of the `}` that closes the label set starting at `s[0] == '{'`.
fn labels_end(s: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

/// The label set with the value of `le` written as Go writes it.
fn go_labels(labels: &str) -> String {
    const LE: &str = "le=\"";
    let Some(start) = labels
        .find(LE)
        .filter(|&i| i > 0 && matches!(labels.as_bytes().get(i - 1), Some(b'{') | Some(b',')))
    else {
        return labels.to_string();
    };
    let value_start = start + LE.len();
    let Some(len) = labels[value_start..].find('"') else {
        return labels.to_string();
    };
    format!(
        "{}{}{}",
        &labels[..value_start],
        go_number(&labels[value_start..value_start + len]),
        &labels[value_start + len..]
    )
}

/// `v` as Go's `strconv.FormatFloat(v, 'g', -1, 64)` writes it (what Go's text format uses):
/// the shortest digits, in exponent form when the exponent is below -4 or at least 6 (`1e+06`).
/// A value that is not a number is kept as it is.
pub fn go_number(v: &str) -> String {
    let x: f64 = match v {
        "+Inf" | "Inf" => return "+Inf".to_string(),
        "-Inf" => return "-Inf".to_string(),
        "NaN" => return "NaN".to_string(),
        _ => match v.parse() {
            Ok(x) => x,
            Err(_) => return v.to_string(),
        },
    };
    if x == 0.0 {
        return "0".to_string();
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        format!("{x}")
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_go_writes_them() {
        for (v, go) in [
            ("1.0", "1"),
            ("0.0", "0"),
            ("5000.0", "5000"),
            ("120000.0", "120000"),
            ("1000000.0", "1e+06"),
            ("1073741824.0", "1.073741824e+09"),
            ("0.1", "0.1"),
            ("0.00001", "1e-05"),
            ("-2.5", "-2.5"),
            ("+Inf", "+Inf"),
            ("3", "3"),
        ] {
            assert_eq!(go_number(v), go, "{v}");
        }
    }

    #[test]
    fn counters_take_their_sample_name_or_stay_bare() {
        let om = "# HELP a_attempts Attempts.\n# TYPE a_attempts counter\n\
                  a_attempts_total{result=\"ok\"} 2\n\
                  # HELP b_total_things Things.\n# TYPE b_total_things counter\n\
                  b_total_things_total 1\nb_total_things_created 17.0\n\
                  # HELP h Latency.\n# TYPE h histogram\n\
                  h_sum 3.0\nh_count 1\nh_bucket{le=\"1.0\"} 0\nh_bucket{le=\"+Inf\"} 1\n\
                  # HELP g A gauge.\n# TYPE g gauge\n# UNIT g bytes\ng{x=\"le=\\\"1.0\\\" }\"} 1.5\n\
                  # EOF\n";
        let text = to_text(om, &["b_total_things"]);
        assert_eq!(
            text,
            "# HELP a_attempts_total Attempts\n# TYPE a_attempts_total counter\n\
             a_attempts_total{result=\"ok\"} 2\n\
             # HELP b_total_things Things\n# TYPE b_total_things counter\n\
             b_total_things 1\n\
             # HELP h Latency\n# TYPE h histogram\n\
             h_sum 3\nh_count 1\nh_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 1\n\
             # HELP g A gauge\n# TYPE g gauge\ng{x=\"le=\\\"1.0\\\" }\"} 1.5\n"
        );
    }
}
