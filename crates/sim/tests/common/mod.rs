//! Running a scenario text through the simulator as `volcano sim` does: loaded, its Jobs
//! admitted, the controllers on default retries with placeholder ssh keys.

use std::path::Path;

use volcano_controllers::admission;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::metrics::SimMetrics;
use volcano_sim::simulate::{SimOptions, simulate};

/// The metrics of `text` (named `file` in errors) run under `conf` with `opts`; a scenario
/// that does not load or run fails the test with its error.
pub fn simulate_text(
    file: &str,
    text: &str,
    conf: &SchedulerConf,
    opts: &SimOptions,
) -> SimMetrics {
    let mut s =
        volcano_api::scenario::load_str(Path::new(file), text).unwrap_or_else(|e| panic!("{e}"));
    for j in &mut s.objects.jobs {
        admission::default_job(j);
        admission::validate_job(j).unwrap_or_else(|e| panic!("{e}"));
    }
    let controllers = ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    };
    simulate(s.objects, &s.sources, conf, opts, controllers, &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"))
}
