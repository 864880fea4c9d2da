//! `volcano schedule`: load, pick the configuration, run sessions with frozen time, print.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use volcano_api::scenario::{LoadError, load_paths};
use volcano_api::{Scenario, keys};
use volcano_scheduler::conf::{SchedulerConf, Skipped};

use crate::driver::{Run, run_sessions};
use crate::output;
use crate::{Failure, Format, ScheduleArgs};

/// Sessions run when `--sessions` is not given and the cluster keeps changing.
pub const MAX_DEFAULT_SESSIONS: u32 = 10;

/// Runs the subcommand.
pub fn run(args: &ScheduleArgs) -> Result<(), Failure> {
    let scenario = load_paths(&args.files).map_err(|e: LoadError| Failure::Input(e.to_string()))?;
    refuse_unsupported(&scenario)?;
    let conf = configuration(args.conf.as_deref(), &scenario)?;
    let (limit, until_quiet) = match args.sessions {
        Some(n) => (n, false),
        None => (MAX_DEFAULT_SESSIONS, true),
    };
    let run: Run = run_sessions(scenario.objects, &conf, limit, until_quiet)
        .map_err(|e| Failure::Input(e.to_string()))?;
    let text = match args.output {
        Format::Json => output::json(&run).map_err(|e| Failure::Internal(e.into()))?,
        Format::Text => output::text(&run),
    };
    let mut out = std::io::stdout().lock();
    match out
        .write_all(text.as_bytes())
        .and_then(|_| out.write_all(b"\n"))
    {
        // A reader that stopped early (`| head`) is not an error worth reporting.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other
            .context("writing the result to stdout")
            .map_err(Failure::Internal),
    }
}

fn refuse_unsupported(s: &Scenario) -> Result<(), Failure> {
    let first = |kind: &str| {
        s.sources
            .iter()
            .find(|(k, _)| k.kind == kind)
            .map(|(k, src)| format!("{src}: {k}"))
    };
    if let Some(at) = first("Job") {
        return Err(Failure::Input(format!(
            "{at}: Volcano Jobs need the job controller, which volcano-rs does not have yet; \
             describe the workload as a PodGroup and its Pods for now"
        )));
    }
    if let Some(at) = first("Command") {
        return Err(Failure::Input(format!(
            "{at}: Commands are carried out by the controllers, which volcano-rs does not have yet"
        )));
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
fn configuration(path: Option<&Path>, scenario: &Scenario) -> Result<SchedulerConf, Failure> {
    let (conf, skipped) = if let Some(path) = path {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Failure::Input(format!(
                "{}: cannot read the scheduler configuration: {e}",
                path.display()
            ))
        })?;
        let conf_text = conf_from_config_map(&text).unwrap_or(text);
        SchedulerConf::parse(&conf_text)
            .map_err(|e| Failure::Input(format!("{}: {e}", path.display())))?
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
