//! A CronJob's schedule: the cron expression in its time zone, and the times it falls due, as
//! Kubernetes' and Volcano's CronJob controllers compute them.

use jiff::tz::TimeZone;
use thiserror::Error;
use volcano_api::cron_schedule::{self, CronRule};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::time::Instant;

/// More missed start times than this are not walked one by one: the CronJob gets a warning
/// (`TooManyMissedTimes`), as Kubernetes gives it.
pub const TOO_MANY_MISSED: i64 = 100;

/// Why a CronJob's schedule cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScheduleError {
    /// `spec.timeZone` (or a `CRON_TZ=`/`TZ=` prefix) names no known zone.
    #[error("unknown time zone {zone:?}: {message}")]
    UnknownTimeZone {
        /// The zone as written.
        zone: String,
        /// What the time-zone database said.
        message: String,
    },
    /// `spec.schedule` is not a five-field cron expression or a `@` descriptor.
    #[error("unparseable schedule {schedule:?}: {message}")]
    Unparseable {
        /// The schedule as written.
        schedule: String,
        /// What is wrong with it.
        message: String,
    },
    /// The expression parses but never falls due (`0 0 31 2 *`).
    #[error("the schedule {schedule:?} never falls due")]
    NeverDue {
        /// The schedule as written.
        schedule: String,
    },
}

/// A parsed schedule in its time zone.
#[derive(Debug, Clone)]
pub struct Schedule {
    text: String,
    rule: CronRule,
    zone: TimeZone,
}

/// Whether the schedule names its own zone, which makes `spec.timeZone` ignored.
pub fn has_zone_prefix(schedule: &str) -> bool {
    // Volcano, like Kubernetes, treats any `TZ` in the text as a prefix that wins.
    schedule.contains("TZ")
}

/// Looks a time zone up by its IANA name (`""` and `UTC` are UTC).
pub fn time_zone(name: &str) -> Result<TimeZone, ScheduleError> {
    cron_schedule::time_zone(name).map_err(|message| ScheduleError::UnknownTimeZone {
        zone: name.to_string(),
        message,
    })
}

impl Schedule {
    /// Parses `schedule` (optionally `CRON_TZ=<zone> ...` or `TZ=<zone> ...`) in `time_zone`
    /// (ignored when the schedule names its own zone; UTC when neither does).
    pub fn parse(schedule: &str, time_zone_name: Option<&str>) -> Result<Self, ScheduleError> {
        let unparseable = |message: String| ScheduleError::Unparseable {
            schedule: schedule.to_string(),
            message,
        };
        let trimmed = schedule.trim();
        let (zone, expr) = if let Some(rest) = trimmed
            .strip_prefix("CRON_TZ=")
            .or_else(|| trimmed.strip_prefix("TZ="))
        {
            let (zone, expr) = rest.split_once(char::is_whitespace).ok_or_else(|| {
                unparseable("a time zone prefix needs a cron expression after it".into())
            })?;
            (time_zone(zone)?, expr.trim())
        } else if has_zone_prefix(trimmed) {
            return Err(unparseable(
                "TZ may appear only as a CRON_TZ= or TZ= prefix".into(),
            ));
        } else {
            (time_zone(time_zone_name.unwrap_or(""))?, trimmed)
        };
        let rule = cron_schedule::parse_rule(expr).map_err(unparseable)?;
        let parsed = Schedule {
            text: schedule.to_string(),
            rule,
            zone,
        };
        // An expression no date satisfies is refused at once rather than at its first use.
        if parsed.next(Instant::default()).is_none() {
            return Err(ScheduleError::NeverDue {
                schedule: schedule.to_string(),
            });
        }
        Ok(parsed)
    }

    /// The first time the schedule falls due strictly after `after`, if any.
    pub fn next(&self, after: Instant) -> Option<Instant> {
        match &self.rule {
            CronRule::Cron(cron) => {
                let zoned = after.to_time().0.to_zoned(self.zone.clone());
                let next = cron.find_next_occurrence(&zoned, false).ok()?;
                Some(Instant::from_time(&Time(next.timestamp())))
            }
            // As Go cron's constant-delay schedule: the delay after `after`'s whole second.
            CronRule::Every(every) => {
                let whole = std::time::Duration::from_secs(after.0.as_secs());
                whole.checked_add(*every).map(Instant)
            }
        }
    }

    /// The schedule as written.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// How many start times were missed since the last one taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// None.
    None,
    /// A few, walked one by one to find the most recent.
    Few,
    /// More than [`TOO_MANY_MISSED`].
    Many,
}

/// The start times around `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    /// Where the search began: the last schedule time, the creation time, or the deadline.
    pub earliest: Instant,
    /// The most recent start time not after `now`, if one is unmet.
    pub most_recent: Option<Instant>,
    /// How many were missed.
    pub missed: Missed,
}

/// The most recent start time at or before `now` after `earliest` (the last schedule time, or
/// the creation time), no earlier than `now - deadline` when a deadline is given.
pub fn most_recent(
    schedule: &Schedule,
    earliest: Instant,
    deadline_seconds: Option<i64>,
    now: Instant,
) -> Due {
    let mut earliest = earliest;
    if let Some(secs) = deadline_seconds {
        let secs = std::time::Duration::from_secs(u64::try_from(secs).unwrap_or(0));
        let deadline = Instant(now.0.saturating_sub(secs));
        if deadline > earliest {
            earliest = deadline;
        }
    }
    let none = Due {
        earliest,
        most_recent: None,
        missed: Missed::None,
    };
    let Some(t1) = schedule.next(earliest) else {
        return none;
    };
    if now < t1 {
        return none;
    }
    let Some(t2) = schedule.next(t1).filter(|t2| now >= *t2) else {
        return Due {
            most_recent: Some(t1),
            ..none
        };
    };
    // As Kubernetes does: estimate the number missed from the gap between two start times,
    // jump close to the end, and walk the last few exactly (irregular schedules need it).
    let between = t2.since(t1).as_secs().max(1);
    let elapsed = now.since(t1).as_secs();
    let missed_count = i64::try_from(elapsed / between + 1).unwrap_or(i64::MAX);
    let jump = between.saturating_mul(u64::try_from(missed_count - 2).unwrap_or(0));
    let mut t = schedule.next(t1.after(std::time::Duration::from_secs(jump)).min(now));
    let mut most_recent = None;
    // Start no later than t1 so the walk never skips the last due time.
    if t.is_none_or(|x| x > now) {
        t = Some(t1);
    }
    while let Some(x) = t.filter(|x| *x <= now) {
        most_recent = Some(x);
        t = schedule.next(x);
    }
    Due {
        earliest,
        most_recent,
        missed: if missed_count > TOO_MANY_MISSED {
            Missed::Many
        } else {
            Missed::Few
        },
    }
}
