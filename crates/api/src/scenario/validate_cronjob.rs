//! The checks Volcano's CronJob admission webhook makes, framed by the file and document.

use super::LoadError;
use super::site::Site;
use crate::cronjob::CronJob;
use crate::spec_checks::check_cron_job;

/// Checks the name, schedule, time zone and limits of a CronJob.
pub(super) fn cron_job(site: &Site, cj: &CronJob) -> Result<(), LoadError> {
    check_cron_job(cj).map_err(|e| site.field_error(e.field, e.message))
}
