//! The checks Volcano's CronJob admission webhook makes: the name leaves room for the Jobs'
//! suffix, the schedule parses without a zone of its own, the zone exists, the limits are not
//! negative.

use super::FieldError;
use crate::cron_schedule;
use crate::cronjob::CronJob;

/// Created Jobs are named `<cronjob>-<minutes>`: up to 11 more characters within 63.
const MAX_NAME_LENGTH: usize = 52;

/// Checks the name, schedule, time zone and limits of a CronJob.
pub fn check_cron_job(cj: &CronJob) -> Result<(), FieldError> {
    let name = cj.metadata.name.as_deref().unwrap_or("");
    if name.len() > MAX_NAME_LENGTH {
        return Err(FieldError::new(
            "metadata.name",
            format!(
                "a CronJob name has at most {MAX_NAME_LENGTH} characters, so the names of its Jobs fit in 63; {name:?} has {}",
                name.len()
            ),
        ));
    }
    let spec = &cj.spec;
    if spec.schedule.trim().is_empty() {
        return Err(FieldError::new(
            "spec.schedule",
            "required; got an empty schedule",
        ));
    }
    if spec.schedule.contains("TZ") {
        return Err(FieldError::new(
            "spec.schedule",
            "must not hold TZ= or CRON_TZ=; name the zone in spec.timeZone",
        ));
    }
    cron_schedule::parse_rule(&spec.schedule).map_err(|e| {
        FieldError::new(
            "spec.schedule",
            format!("{:?} is not a valid cron expression: {e}", spec.schedule),
        )
    })?;
    if let Some(zone) = &spec.time_zone {
        if zone.is_empty() {
            return Err(FieldError::new(
                "spec.timeZone",
                "must be absent or a zone name, not empty",
            ));
        }
        cron_schedule::time_zone(zone).map_err(|e| {
            FieldError::new("spec.timeZone", format!("unknown time zone {zone:?}: {e}"))
        })?;
    }
    for (field, value) in [
        (
            "spec.startingDeadlineSeconds",
            spec.starting_deadline_seconds,
        ),
        (
            "spec.successfulJobsHistoryLimit",
            spec.successful_jobs_history_limit.map(i64::from),
        ),
        (
            "spec.failedJobsHistoryLimit",
            spec.failed_jobs_history_limit.map(i64::from),
        ),
    ] {
        if let Some(v) = value.filter(|v| *v < 0) {
            return Err(FieldError::new(
                field,
                format!("must be 0 or more, not {v}"),
            ));
        }
    }
    Ok(())
}
