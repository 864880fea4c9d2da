//! One entry point per input that reaches volcano-rs from outside: a scenario file, a resource
//! quantity, a `volcano-scheduler.conf`, a Volcano Job. Each takes raw bytes and must return
//! without panicking or hanging whatever they hold; where a property is cheap to state
//! (quantities round-trip, defaulting is idempotent) it is checked too, with a panic naming it.
//!
//! The cargo-fuzz targets under `fuzz/` call these, and `tests/replay.rs` runs every input of
//! `fuzz/corpus` and `fuzz/regressions` through them on stable Rust, so CI replays the corpus
//! without fuzzing.

use std::path::Path;

use volcano_api::batch::Job;
use volcano_api::quantity::{format_milli, parse_milli, parse_value};
use volcano_api::scenario::load_str;
use volcano_controllers::admission::{default_job, validate_job, validate_job_update};
use volcano_scheduler::cache::{CacheOptions, build_snapshot};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::framework::SessionOptions;

/// A fuzz target: takes any bytes, returns or panics.
pub type Target = fn(&[u8]);

/// The fuzz targets, by the name of their corpus folder.
pub const TARGETS: &[(&str, Target)] = &[
    ("scenario", scenario),
    ("quantity", quantity),
    ("scheduler_conf", scheduler_conf),
    ("job_validation", job_validation),
];

/// Loads the bytes as a scenario file and, when they load, schedules one session of it with its
/// own configuration (or the default one), as `volcano schedule` does.
pub fn scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(scenario) = load_str(Path::new("fuzz.yaml"), text) else {
        return;
    };
    let conf = match &scenario.scheduler_conf {
        Some(c) => match SchedulerConf::parse(&c.text) {
            Ok((conf, _)) => conf,
            Err(_) => return,
        },
        None => SchedulerConf::default_conf(),
    };
    if let Ok(snap) = build_snapshot(&scenario.objects, &CacheOptions::default()) {
        let _ = volcano_scheduler::run_session(snap, &conf, SessionOptions::default());
    }
}

/// Parses the bytes as a Kubernetes quantity. Whole units and thousandths must agree (both
/// round up, so the units are the thousandths divided by 1000, rounded up), and thousandths
/// must survive formatting and parsing again.
pub fn quantity(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let milli = parse_milli(text);
    let value = parse_value(text);
    if let (Ok(m), Ok(v)) = (&milli, &value) {
        let from_milli = m.div_euclid(1000) + i64::from(m.rem_euclid(1000) != 0);
        assert_eq!(*v, from_milli, "units and thousandths of {text:?} disagree");
    }
    if let Ok(m) = milli {
        let shown = format_milli(m);
        assert_eq!(
            parse_milli(&shown).ok(),
            Some(m),
            "{text:?} is {m} thousandths, shown as {shown:?}, which does not parse back"
        );
    }
}

/// Parses the bytes as a `volcano-scheduler.conf`.
pub fn scheduler_conf(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = SchedulerConf::parse(text);
}

/// Reads the bytes as a Volcano Job (YAML or JSON) and runs it through admission as the local
/// control plane does: defaults, then validation on create and on an update to itself.
/// Defaulting must be idempotent: a second `kubectl apply` of a defaulted Job changes nothing.
pub fn job_validation(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut job) = serde_yaml_ng::from_str::<Job>(text) else {
        return;
    };
    let _ = validate_job(&job);
    default_job(&mut job);
    let once = serde_json::to_value(&job).ok();
    default_job(&mut job);
    assert_eq!(
        once,
        serde_json::to_value(&job).ok(),
        "defaulting a Job twice changed it"
    );
    if validate_job(&job).is_ok() {
        let _ = validate_job_update(&job, &job);
    }
}
