//! Cron expressions and time zones as a CronJob's `spec.schedule` and `spec.timeZone` hold
//! them: five fields or an `@` descriptor, and IANA zone names. Shared by admission (the
//! scenario checks) and the CronJob controller, so both accept the same schedules.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::tz::TimeZone;

/// Parses a standard cron expression (`minute hour day-of-month month day-of-week`, or
/// `@hourly`, `@daily`, ...), as Go's `cron.ParseStandard` reads it; the error says why not.
pub fn parse_cron(expr: &str) -> Result<Cron, String> {
    let expr = expr.trim();
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
