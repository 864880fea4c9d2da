//! `volcano schedule`: load, pick the configuration, run sessions with frozen time, print.

use std::path::Path;

use volcano_api::scenario::{LoadError, ObjectKey, load_paths, queue_warnings};
use volcano_api::{Scenario, keys};
use volcano_controllers::admission;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_scheduler::conf::{SchedulerConf, Skipped};
use volcano_sim::ClusterError;
use volcano_sim::schedule::{self, Run};

use crate::output;
use crate::{Failure, Format, ScheduleArgs};

/// Sessions run when `--sessions` is not given and the cluster keeps changing.
pub const MAX_DEFAULT_SESSIONS: u32 = 10;

/// Runs the subcommand.
pub fn run(args: &ScheduleArgs) -> Result<(), Failure> {
    let mut scenario =
        load_paths(&args.files).map_err(|e: LoadError| Failure::Input(e.to_string()))?;
    admit_jobs(&mut scenario)?;
    for warning in queue_warnings(&scenario.objects) {
        tracing::warn!("{warning}");
    }
    let conf = configuration(args.conf.as_deref(), &scenario)?;
    let (limit, until_quiet) = match args.sessions {
        Some(n) => (n, false),
        None => (MAX_DEFAULT_SESSIONS, true),
    };
    let controllers = ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    };
    let run: Run = schedule::run(scenario.objects, &conf, limit, until_quiet, controllers)
        .map_err(|e| match e {
            ClusterError::Snapshot(e) => Failure::Input(e.to_string()),
            other => Failure::Internal(other.into()),
        })?;
    let text = match args.output {
        Format::Json => output::json(&run).map_err(|e| Failure::Internal(e.into()))?,
        Format::Text => output::text(&run),
    };
    output::print(&text)
}

/// Runs Volcano's Job admission (defaults, then validation) on every Job of the scenario, as
/// the API server's webhooks would before the Job exists.
pub(crate) fn admit_jobs(s: &mut Scenario) -> Result<(), Failure> {
    for job in &mut s.objects.jobs {
        admission::default_job(job);
        if let Err(e) = admission::validate_job(job) {
            let key = ObjectKey {
                kind: "Job".to_string(),
                namespace: job.metadata.namespace.clone().unwrap_or_default(),
                name: job.metadata.name.clone().unwrap_or_default(),
            };
            let at = s
                .sources
                .get(&key)
                .map_or(String::new(), |src| format!("{src}: "));
            return Err(Failure::Input(format!(
                "{at}{key}: rejected by admission: {e}"
            )));
        }
    }
    Ok(())
}

fn warn_skipped(skipped: &Skipped) {
    for a in &skipped.actions {
        tracing::warn!("action {a} is not implemented in volcano-rs yet; it is skipped");
    }
    for p in &skipped.plugins {
        tracing::warn!("plugin {p} is not implemented in volcano-rs yet; it is skipped");
    }
}

/// `--conf FILE`, else the scenario's ConfigMap, else the built-in default.
pub(crate) fn configuration(
    path: Option<&Path>,
    scenario: &Scenario,
) -> Result<SchedulerConf, Failure> {
    let (conf, skipped) = if let Some(path) = path {
        return read_conf_file(path);
    } else if let Some(c) = &scenario.scheduler_conf {
        SchedulerConf::parse(&c.text).map_err(|e| {
            Failure::Input(format!(
                "{}: ConfigMap: field data.{}: {e}",
                c.source,
                keys::SCHEDULER_CONF_KEY
            ))
        })?
    } else {
        (SchedulerConf::default_conf(), Skipped::default())
    };
    warn_skipped(&skipped);
    Ok(conf)
}

/// A scheduler configuration file: `volcano-scheduler.conf`, or a ConfigMap holding one.
pub fn read_conf_file(path: &Path) -> Result<SchedulerConf, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::Input(format!(
            "{}: cannot read the scheduler configuration: {e}",
            path.display()
        ))
    })?;
    let conf_text = conf_from_config_map(&text).unwrap_or(text);
    let (conf, skipped) = SchedulerConf::parse(&conf_text)
        .map_err(|e| Failure::Input(format!("{}: {e}", path.display())))?;
    warn_skipped(&skipped);
    Ok(conf)
}

/// The configuration text inside a ConfigMap document, if `text` is one.
fn conf_from_config_map(text: &str) -> Option<String> {
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).ok()?;
    if v.get("kind")?.as_str()? != "ConfigMap" {
        return None;
    }
    v.get("data")?
        .get(keys::SCHEDULER_CONF_KEY)?
        .as_str()
        .map(str::to_string)
}
