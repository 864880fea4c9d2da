//! Volcano's distributed-framework plugins: `mpi`, `pytorch`, `tensorflow`, `ray` and
//! `hcclrank`. Each tells the pods of one training framework who their peers are, in the
//! environment, ports and commands that framework reads. They rely on the `svc` plugin for the
//! DNS names they hand out (`<pod>.<job>`); the mutating webhook adds it for them.

use volcano_api::batch::{Job, TaskSpec};
use volcano_api::k8s_openapi::api::core::v1::{Container, ContainerPort, EnvVar, Pod};
use volcano_api::keys;

use super::job_name;

mod hcclrank;
mod mpi;
mod pytorch;
mod ray;
mod tensorflow;

pub use hcclrank::HcclRankPlugin;
pub use mpi::MpiPlugin;
pub use pytorch::PytorchPlugin;
pub use ray::RayPlugin;
pub use tensorflow::TensorflowPlugin;

/// Task name Volcano assumes for a pod without a `volcano.sh/task-spec` annotation.
const DEFAULT_TASK: &str = "default";

/// The task a pod belongs to, as Volcano's `GetTaskKey` reads it.
fn task_key(pod: &Pod) -> &str {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::TASK_SPEC))
        .map(String::as_str)
        .filter(|t| !t.is_empty())
        .unwrap_or(DEFAULT_TASK)
}

/// The pod's index within its task as the pytorch and tensorflow plugins read it: the last
/// `-`-separated part of a `<job>-<task>-<index>` name (Volcano's `GetPodIndexUnderTask`).
fn index_from_name(pod: &Pod) -> Option<&str> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let parts: Vec<&str> = name.split('-').collect();
    match parts.as_slice() {
        [_, _, .., last] => Some(*last),
        _ => None,
    }
}

/// The pod's index parsed as a number, or a message naming the pod when its name carries none.
fn numeric_index_from_name(pod: &Pod) -> Result<i64, String> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let text = index_from_name(pod).unwrap_or_default();
    text.parse::<i64>()
        .map_err(|_| format!("pod {name:?} has no replica index: its name should end in -<index>"))
}

/// The task of `job` named `name`.
fn find_task<'j>(job: &'j Job, name: &str) -> Option<&'j TaskSpec> {
    job.spec.tasks.iter().find(|t| t.name == name)
}

/// The DNS name of replica `index` of `task`: the template's hostname or the pod name, under
/// the template's subdomain or the job's headless Service (Volcano's `MakeDomainName`). Unlike
/// the `svc` host lists, a fixed hostname is repeated for every replica, as Volcano does.
fn domain_name(job: &Job, task: &TaskSpec, index: i64) -> String {
    let spec = task.template.spec.as_ref();
    let hostname = spec
        .and_then(|s| s.hostname.clone())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| format!("{}-{}-{index}", job_name(job), task.name));
    let subdomain = spec
        .and_then(|s| s.subdomain.as_deref())
        .filter(|s| !s.is_empty())
        .unwrap_or(job_name(job));
    format!("{hostname}.{subdomain}")
}

fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: Some(value.into()),
        value_from: None,
    }
}

/// Declares `port` on the container under `name`, unless some port of the container already
/// uses that number (whatever its name): the user's declaration wins.
fn open_port(container: &mut Container, name: &str, port: i32) {
    let ports = container.ports.get_or_insert_with(Vec::new);
    if ports.iter().any(|p| p.container_port == port) {
        return;
    }
    ports.push(ContainerPort {
        name: Some(name.to_string()),
        container_port: port,
        ..ContainerPort::default()
    });
}

/// A port flag's value, which must fit a container port.
fn port_flag(
    plugin: &'static str,
    flag: &str,
    value: Option<i64>,
    default: i32,
) -> Result<i32, super::PluginError> {
    match value {
        None => Ok(default),
        Some(v) => i32::try_from(v)
            .ok()
            .filter(|p| (1..=65535).contains(p))
            .ok_or_else(|| {
                super::PluginError::new(
                    plugin,
                    format!("flag --{flag} wants a port number from 1 to 65535, not {v}"),
                )
            }),
    }
}
