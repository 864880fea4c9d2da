//! Job controller plugins (`spec.plugins`): `svc`, `env` and `ssh` add Services, ConfigMaps,
//! Secrets and environment to a job's pods, as Volcano's do.

use std::collections::BTreeMap;

use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::Pod;

use crate::change::Change;

mod env;
mod ssh;
mod svc;

pub use env::EnvPlugin;
pub use ssh::{SshKeySource, SshPlugin};
pub use svc::SvcPlugin;

/// A plugin that cannot do its work for a job (bad arguments, a key that cannot be made).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("job plugin {plugin}: {message}")]
pub struct PluginError {
    /// The plugin's name.
    pub plugin: &'static str,
    /// What went wrong.
    pub message: String,
}

/// A job controller plugin. Each hook is pure: it reads the job and returns what to change.
pub trait JobPlugin {
    /// The name users write under `spec.plugins`.
    fn name(&self) -> &'static str;

    /// Adjusts a pod the controller is about to create (hostname, env, volumes...).
    fn on_pod_create(&self, job: &Job, pod: &mut Pod) -> Result<(), PluginError>;

    /// Objects to create when the job is first initiated. `controlled` is the job's
    /// `status.controlledResources`: a plugin records what it created there, and creates
    /// nothing when its entry is already present.
    fn on_job_add(
        &self,
        job: &Job,
        controlled: &mut BTreeMap<String, String>,
    ) -> Result<Vec<Change>, PluginError>;

    /// Objects to update on every later sync of the job (scaling changes host lists).
    fn on_job_update(&self, job: &Job) -> Result<Vec<Change>, PluginError>;

    /// Objects to delete when the job is killed for good or deleted.
    fn on_job_delete(
        &self,
        job: &Job,
        controlled: &mut BTreeMap<String, String>,
    ) -> Result<Vec<Change>, PluginError>;
}

/// What the plugins need from their environment.
pub struct PluginContext<'a> {
    /// Where the `ssh` plugin gets key pairs.
    pub ssh_keys: &'a dyn SshKeySource,
}

/// The plugins a job names, with their arguments, in name order. An unknown name is an error
/// naming it (admission rejects such jobs before they get here).
pub fn plugins_of<'a>(
    job: &Job,
    ctx: &PluginContext<'a>,
) -> Result<Vec<Box<dyn JobPlugin + 'a>>, PluginError> {
    job.spec
        .plugins
        .iter()
        .map(|(name, args)| plugin(name, args, ctx))
        .collect()
}

/// Builds one plugin by name from its arguments.
pub fn plugin<'a>(
    name: &str,
    args: &[String],
    ctx: &PluginContext<'a>,
) -> Result<Box<dyn JobPlugin + 'a>, PluginError> {
    match name {
        "svc" => Err(SvcPlugin::from_args(args).err().unwrap_or(PluginError {
            plugin: "svc",
            message: String::new(),
        })),
        "env" => Err(EnvPlugin::from_args(args).err().unwrap_or(PluginError {
            plugin: "env",
            message: String::new(),
        })),
        "ssh" => Err(SshPlugin::from_args(args, ctx.ssh_keys)
            .err()
            .unwrap_or(PluginError {
                plugin: "ssh",
                message: String::new(),
            })),
        other => Err(PluginError {
            plugin: "unknown",
            message: format!("no job plugin named {other:?}; volcano-rs has svc, env and ssh"),
        }),
    }
}

/// The names `spec.plugins` may use.
pub const KNOWN: &[&str] = &["env", "ssh", "svc"];
