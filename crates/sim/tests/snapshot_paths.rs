//! The simulator schedules from the incremental cache, as a scheduler on a cluster does. Here
//! every kept snapshot is also checked against one built from all objects: any change the
//! store makes that the cache does not follow (a node going down or shrinking, a pod ending,
//! an eviction, a Job deleted with its pods) fails the run.

use std::path::Path;

use volcano_controllers::admission;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::generate::{GenerateSpec, generate};
use volcano_sim::metrics::SimMetrics;
use volcano_sim::simulate::{SimOptions, simulate};

fn options() -> ManagerOptions {
    ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    }
}

fn run(mut objects: volcano_api::Objects, check_snapshots: bool) -> SimMetrics {
    let sources = Default::default();
    for j in &mut objects.jobs {
        admission::default_job(j);
    }
    let opts = SimOptions {
        timings: false,
        check_snapshots,
        ..Default::default()
    };
    let conf = SchedulerConf::default_conf();
    match simulate(objects, &sources, &conf, &opts, options(), &mut |_| {}) {
        Ok(m) => m,
        Err(e) => panic!("the run failed: {e}"),
    }
}

#[test]
fn a_day_with_node_failures_and_a_shrink_keeps_both_snapshot_paths_equal() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sim/day.yaml");
    let scenario = match volcano_api::scenario::load_paths(&[path]) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let checked = run(scenario.objects.clone(), true);
    assert!(
        checked.summary.sessions > 100,
        "{} sessions",
        checked.summary.sessions
    );
}

#[test]
fn a_generated_workload_with_failures_keeps_both_snapshot_paths_equal() {
    let spec: GenerateSpec = match "nodes=12,gpu-nodes=4,jobs=60,over=2h,fail-rate=0.2".parse() {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let objects = generate(&spec, 5);
    let checked = run(objects.clone(), true);
    let unchecked = run(objects, false);
    assert_eq!(
        format!("{:?}", checked.jobs),
        format!("{:?}", unchecked.jobs),
        "checking changes nothing"
    );
    assert!(checked.summary.sessions > 10);
}
