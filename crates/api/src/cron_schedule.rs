//! Cron expressions and time zones as a CronJob's `spec.schedule` and `spec.timeZone` hold
//! them: five fields, an `@` descriptor or `@every`, and IANA zone names. Shared by admission (the
//! scenario checks) and the CronJob controller, so both accept the same schedules.

use std::time::Duration;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::tz::TimeZone;

use crate::go_duration::parse_duration;

/// When a schedule falls due: a cron expression, or Go cron's `@every <duration>`.
#[derive(Debug, Clone)]
pub enum CronRule {
    /// Five fields or an `@` descriptor (`@hourly`, `@daily`, ...).
    Cron(Box<Cron>),
    /// `@every <duration>`: every so long, counted in whole seconds (at least one).
    Every(Duration),
}

/// Parses a standard cron expression (`minute hour day-of-month month day-of-week`, an `@`
/// descriptor such as `@hourly`, or `@every 90m`), as Go's `cron.ParseStandard` reads it, which
/// Volcano's CronJob controller uses; the error says why not.
pub fn parse_rule(expr: &str) -> Result<CronRule, String> {
    let expr = expr.trim();
    if expr.starts_with("@every") {
        // As Go cron: the descriptor, one space, the duration.
        let text = expr.strip_prefix("@every ").unwrap_or_default();
        let every = parse_duration(text).ok_or_else(|| {
            format!("@every needs a duration such as 90s, 10m or 1h30m, got {text:?}")
        })?;
        // As Go cron: whole seconds, and never less than one.
        let whole = Duration::from_secs(every.as_secs().max(1));
        return Ok(CronRule::Every(whole));
    }
    let fields = expr.split_whitespace().count();
    if !expr.starts_with('@') && fields != 5 {
        return Err(format!(
            "expected exactly 5 fields (minute hour day-of-month month day-of-week), found {fields}"
        ));
    }
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(expr)
        .map(|c| CronRule::Cron(Box::new(c)))
        .map_err(|e| e.to_string())
}

/// Looks a time zone up by its IANA name (`""` and `UTC` are UTC); the error says why not.
pub fn time_zone(name: &str) -> Result<TimeZone, String> {
    if name.is_empty() || name == "UTC" {
        return Ok(TimeZone::UTC);
    }
    if name.eq_ignore_ascii_case("Local") {
        return Err("Local is not a zone: name one from the IANA time-zone database".to_string());
    }
    TimeZone::get(name).map_err(|e| e.to_string())
}
