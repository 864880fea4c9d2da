//! Job controller plugins (`spec.plugins`): `svc`, `env` and `ssh` add Services, ConfigMaps,
//! Secrets and environment to a job's pods, as Volcano's do; the distributed-framework plugins
//! (`mpi`, `pytorch`, `tensorflow`, `ray`, `hcclrank`) wire up one training framework each.
//! They sit beside the job
//! controller rather than inside it because admission, which the controller consults for a Job
//! no webhook has seen, checks their arguments too.

use std::collections::BTreeMap;

use volcano_api::batch::{Job, TaskSpec};
use volcano_api::k8s_openapi::api::core::v1::{Pod, PodSpec, Volume, VolumeMount};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use volcano_api::keys;

use crate::change::Change;

mod env;
mod flags;
mod framework;
mod ssh;
mod svc;

pub use env::EnvPlugin;
pub use framework::{HcclRankPlugin, MpiPlugin, PytorchPlugin, RayPlugin, TensorflowPlugin};
pub use ssh::{PlaceholderSshKeys, SshKeyPair, SshKeySource, SshPlugin};
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
    /// nothing when its entry is already present. By default it creates nothing but records
    /// itself all the same, as Volcano's plugins do: tools that read `controlledResources`
    /// expect the entry.
    fn on_job_add(
        &self,
        _job: &Job,
        controlled: &mut BTreeMap<String, String>,
    ) -> Result<Vec<Change>, PluginError> {
        record(controlled, self.name());
        Ok(Vec::new())
    }

    /// Objects to update on every later sync of the job (scaling changes host lists); none
    /// by default.
    fn on_job_update(&self, _job: &Job) -> Result<Vec<Change>, PluginError> {
        Ok(Vec::new())
    }

    /// Objects to delete when the job is killed for good or deleted; by default only the
    /// plugin's record goes.
    fn on_job_delete(
        &self,
        _job: &Job,
        controlled: &mut BTreeMap<String, String>,
    ) -> Result<Vec<Change>, PluginError> {
        forget(controlled, self.name());
        Ok(Vec::new())
    }
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
        "svc" => Ok(Box::new(SvcPlugin::from_args(args)?)),
        "env" => Ok(Box::new(EnvPlugin::from_args(args)?)),
        "ssh" => Ok(Box::new(SshPlugin::from_args(args, ctx.ssh_keys)?)),
        "mpi" => Ok(Box::new(MpiPlugin::from_args(args)?)),
        "pytorch" => Ok(Box::new(PytorchPlugin::from_args(args)?)),
        "tensorflow" => Ok(Box::new(TensorflowPlugin::from_args(args)?)),
        "ray" => Ok(Box::new(RayPlugin::from_args(args)?)),
        "hcclrank" => Ok(Box::new(HcclRankPlugin::from_args(args)?)),
        other => Err(PluginError {
            plugin: "unknown",
            message: format!(
                "no job plugin named {other:?}; known plugins: {}",
                KNOWN.join(", ")
            ),
        }),
    }
}

/// Whether `args` are arguments plugin `name` takes: the webhook refuses a Job whose plugin
/// arguments do not parse, so it does not fail later at its first sync.
pub fn check_args(name: &str, args: &[String]) -> Result<(), PluginError> {
    let ctx = PluginContext {
        ssh_keys: &PlaceholderSshKeys,
    };
    plugin(name, args, &ctx).map(|_| ())
}

/// The names `spec.plugins` may use.
pub const KNOWN: &[&str] = &[
    "env",
    "hcclrank",
    "mpi",
    "pytorch",
    "ray",
    "ssh",
    "svc",
    "tensorflow",
];

impl PluginError {
    fn new(plugin: &'static str, message: impl Into<String>) -> Self {
        PluginError {
            plugin,
            message: message.into(),
        }
    }
}

/// The `status.controlledResources` key under which a plugin records its work (Volcano's
/// `plugin-<name>`, with the plugin name as value).
fn controlled_key(plugin: &str) -> String {
    format!("plugin-{plugin}")
}

fn is_recorded(controlled: &BTreeMap<String, String>, plugin: &str) -> bool {
    controlled
        .get(&controlled_key(plugin))
        .is_some_and(|v| v == plugin)
}

fn record(controlled: &mut BTreeMap<String, String>, plugin: &str) {
    controlled.insert(controlled_key(plugin), plugin.to_string());
}

fn forget(controlled: &mut BTreeMap<String, String>, plugin: &str) {
    controlled.remove(&controlled_key(plugin));
}

fn job_name(job: &Job) -> &str {
    job.metadata.name.as_deref().unwrap_or_default()
}

fn job_namespace(job: &Job) -> &str {
    job.metadata.namespace.as_deref().unwrap_or_default()
}

/// Metadata of an object owned by `job`: same namespace, the job as controlling owner, so that
/// Kubernetes garbage-collects it with the job even if no plugin ever deletes it.
fn owned_meta(job: &Job, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: job.metadata.namespace.clone(),
        owner_references: Some(vec![OwnerReference {
            api_version: "batch.volcano.sh/v1alpha1".to_string(),
            kind: "Job".to_string(),
            name: job_name(job).to_string(),
            // A job read from the API server always has a UID; a hand-built one may not, and
            // then the owner reference is simply inert.
            uid: job.metadata.uid.clone().unwrap_or_default(),
            controller: Some(true),
            // Not set, for the reason given at `build::controller_ref`.
            block_owner_deletion: None,
        }]),
        ..ObjectMeta::default()
    }
}

/// The labels the job controller puts on every pod of a job, which selectors use to find them.
fn job_pod_labels(job: &Job) -> BTreeMap<String, String> {
    BTreeMap::from([
        (keys::JOB_NAME.to_string(), job_name(job).to_string()),
        (
            keys::JOB_NAMESPACE.to_string(),
            job_namespace(job).to_string(),
        ),
    ])
}

/// A pod's stable host identity: `name` is its hostname, `fqdn` is `hostname.subdomain`,
/// resolvable through the job's headless Service.
struct Host {
    name: String,
    fqdn: String,
}

/// The hosts of a task, one per replica, named as the `svc` plugin names its pods. A template
/// that fixes its own hostname makes every replica the same host, so it is listed once.
fn task_hosts(job: &Job, task: &TaskSpec) -> Vec<Host> {
    let spec = task.template.spec.as_ref();
    let fixed_hostname = spec
        .and_then(|s| s.hostname.as_deref())
        .filter(|h| !h.is_empty());
    let subdomain = spec
        .and_then(|s| s.subdomain.as_deref())
        .filter(|s| !s.is_empty())
        .unwrap_or(job_name(job));
    let replicas = task.replicas.max(0);
    let count = if fixed_hostname.is_some() {
        replicas.min(1)
    } else {
        replicas
    };
    (0..count)
        .map(|i| {
            let name = match fixed_hostname {
                Some(h) => h.to_string(),
                None => format!("{}-{}-{i}", job_name(job), task.name),
            };
            let fqdn = format!("{name}.{subdomain}");
            Host { name, fqdn }
        })
        .collect()
}

fn pod_spec(pod: &mut Pod) -> &mut PodSpec {
    pod.spec.get_or_insert_with(PodSpec::default)
}

/// Adds `volume` to the pod and mounts it in every container, init containers included, since
/// an init step often needs the same files (host lists, SSH keys) as the main one.
fn mount_everywhere(pod: &mut Pod, volume: Volume, mount: &VolumeMount) {
    let spec = pod_spec(pod);
    spec.volumes.get_or_insert_with(Vec::new).push(volume);
    let inits = spec.init_containers.iter_mut().flatten();
    for container in spec.containers.iter_mut().chain(inits) {
        container
            .volume_mounts
            .get_or_insert_with(Vec::new)
            .push(mount.clone());
    }
}

#[cfg(test)]
mod testing;

#[cfg(test)]
mod tests {
    use super::testing::job;
    use super::*;

    struct NoKeys;
    impl SshKeySource for NoKeys {
        fn key_pair(&self, _job: &Job) -> Result<SshKeyPair, PluginError> {
            Err(PluginError::new("ssh", "no keys in this test"))
        }
    }

    #[test]
    fn builds_every_known_plugin_by_name() {
        let ctx = PluginContext { ssh_keys: &NoKeys };
        for name in KNOWN {
            let built = plugin(name, &[], &ctx);
            assert_eq!(built.map(|p| p.name()).ok(), Some(*name));
        }
    }

    #[test]
    fn unknown_plugin_name_is_named_in_the_error() {
        let ctx = PluginContext { ssh_keys: &NoKeys };
        let err = plugin("horovod", &[], &ctx).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "job plugin unknown: no job plugin named \"horovod\"; known plugins: env, \
                 hcclrank, mpi, pytorch, ray, ssh, svc, tensorflow"
            )
        );
    }

    #[test]
    fn bad_arguments_surface_through_the_factory() {
        let ctx = PluginContext { ssh_keys: &NoKeys };
        let err = plugin("svc", &["--nope".to_string()], &ctx).err();
        assert_eq!(err.map(|e| e.plugin), Some("svc"));
    }

    #[test]
    fn plugins_of_follows_the_job_spec_in_name_order() {
        let mut j = job("ns", "tf").task("ps", 1).build();
        j.spec.plugins.insert("svc".into(), vec![]);
        j.spec.plugins.insert("env".into(), vec![]);
        let ctx = PluginContext { ssh_keys: &NoKeys };
        let names: Vec<_> = plugins_of(&j, &ctx)
            .map(|ps| ps.iter().map(|p| p.name()).collect())
            .unwrap_or_default();
        assert_eq!(names, vec!["env", "svc"]);
    }

    #[test]
    fn a_fixed_template_hostname_is_one_host() {
        let j = job("ns", "tf")
            .task("ps", 3)
            .task_hostname("ps", "boss", "")
            .build();
        let hosts: Vec<_> = task_hosts(&j, &j.spec.tasks[0])
            .into_iter()
            .map(|h| h.fqdn)
            .collect();
        assert_eq!(hosts, vec!["boss.tf"]);
    }

    #[test]
    fn owned_objects_name_the_job_as_controller() {
        let j = job("ns", "tf").build();
        let meta = owned_meta(&j, "tf-svc".into());
        let owner = meta.owner_references.unwrap_or_default();
        assert_eq!(owner.len(), 1);
        assert_eq!(owner[0].api_version, "batch.volcano.sh/v1alpha1");
        assert_eq!(owner[0].kind, "Job");
        assert_eq!(owner[0].name, "tf");
        assert_eq!(owner[0].uid, "uid-tf");
        assert_eq!(owner[0].controller, Some(true));
        assert_eq!(meta.namespace.as_deref(), Some("ns"));
    }
}
