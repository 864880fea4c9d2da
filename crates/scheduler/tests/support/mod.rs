//! What the scheduler's tests share that is the scheduler's own: parsing a configuration,
//! running a session over built objects the way a cluster would (cache, then one session), and
//! applying its decisions before the next. The objects come from `volcano_testkit::build`, the
//! named configurations from `volcano_testkit::conf`.

use volcano_api::Objects;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use volcano_api::k8s_openapi::jiff::Timestamp;
use volcano_scheduler::cache::{CacheOptions, apply_decisions, build_snapshot};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::framework::{Decisions, SessionOptions};

/// Parses a `volcano-scheduler.conf` text; panics with the parse error (test input is ours).
pub fn conf(text: &str) -> SchedulerConf {
    match SchedulerConf::parse(text) {
        Ok((c, _skipped)) => c,
        Err(e) => panic!("test configuration does not parse: {e}\n{text}"),
    }
}

/// Session options of the `i`-th session: UID `session-<i>`, clock at `i` seconds, so that
/// two runs of one input see the same session.
pub fn session_options(i: u32) -> SessionOptions {
    SessionOptions {
        uid: format!("session-{i}"),
        now: Some(Time(
            Timestamp::from_second(i64::from(i)).unwrap_or(Timestamp::UNIX_EPOCH),
        )),
        ..Default::default()
    }
}

/// Runs session number `i` over `objs` with `conf`; panics if the cache rejects the objects
/// (the builders only make valid ones).
pub fn run_session_n(objs: &Objects, conf: &SchedulerConf, i: u32) -> Decisions {
    let snap = match build_snapshot(objs, &CacheOptions::default()) {
        Ok(s) => s,
        Err(e) => panic!("the cache rejected the test objects: {e}"),
    };
    volcano_scheduler::run_session(snap, conf, session_options(i))
}

/// Applies a session's decisions as the cluster would before the next session: bound pods get
/// `spec.nodeName`, evicted pods disappear, PodGroup status and Queue `status.allocated` are
/// written.
pub fn apply(objs: &mut Objects, d: &Decisions) {
    apply_decisions(objs, d);
}
