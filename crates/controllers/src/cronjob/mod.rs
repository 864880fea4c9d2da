//! The CronJob controller, sans-IO: from a CronJob, the Jobs it owns and the time, the Jobs to
//! create and delete, its new status, its events, and when to look again. As Volcano's (which
//! follows Kubernetes' CronJob controller): missed start times, `startingDeadlineSeconds`,
//! concurrency policies, suspension and history limits.

pub mod controller;
pub mod schedule;
pub mod sync;

pub use controller::{CronJobController, CronJobWork};
pub use schedule::{Schedule, ScheduleError};
pub use sync::{CronJobEvent, CronJobSync, sync_cron_job};

#[cfg(test)]
mod tests;
