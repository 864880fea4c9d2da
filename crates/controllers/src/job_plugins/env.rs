//! The `env` plugin: tells each container which replica of its task it is, through
//! `VC_TASK_INDEX` and its older spelling `VK_TASK_INDEX`.

use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::{EnvVar, Pod};
use volcano_api::keys;

use super::flags::Flags;
use super::{JobPlugin, PluginError, pod_spec};

const NAME: &str = "env";

/// Environment variables carrying the pod's index within its task.
const INDEX_ENV: [&str; 2] = ["VK_TASK_INDEX", "VC_TASK_INDEX"];

/// The `env` plugin. It takes no arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvPlugin;

impl EnvPlugin {
    /// Accepts an empty argument list; any flag is an error naming it.
    pub fn from_args(args: &[String]) -> Result<Self, PluginError> {
        Flags::parse(NAME, args, &[])?;
        Ok(EnvPlugin)
    }
}

/// The pod's index within its task: the job controller's annotation, or else the last
/// `-`-separated part of a `<job>-<task>-<index>` name, which is where Volcano reads it.
fn task_index(pod: &Pod) -> String {
    let annotated = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::TASK_INDEX));
    if let Some(index) = annotated {
        return index.clone();
    }
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let parts: Vec<&str> = name.split('-').collect();
    match parts.as_slice() {
        [_, _, .., last] => (*last).to_string(),
        _ => String::new(),
    }
}

impl JobPlugin for EnvPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_pod_create(&self, _job: &Job, pod: &mut Pod) -> Result<(), PluginError> {
        let index = task_index(pod);
        let spec = pod_spec(pod);
        let inits = spec.init_containers.iter_mut().flatten();
        for container in spec.containers.iter_mut().chain(inits) {
            let env = container.env.get_or_insert_with(Vec::new);
            env.extend(INDEX_ENV.iter().map(|name| EnvVar {
                name: (*name).to_string(),
                value: Some(index.clone()),
                value_from: None,
            }));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::testing::{containers, job, pod};
    use super::*;

    fn index_env(pod: &Pod) -> Vec<Vec<(String, String)>> {
        containers(pod)
            .iter()
            .map(|c| {
                c.env
                    .iter()
                    .flatten()
                    .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn every_container_learns_its_task_index() {
        let j = job("ns", "tf").task("worker", 4).build();
        let mut p = pod(&j, "worker", 3);
        EnvPlugin.on_pod_create(&j, &mut p).unwrap();
        let expected = vec![
            ("VK_TASK_INDEX".to_string(), "3".to_string()),
            ("VC_TASK_INDEX".to_string(), "3".to_string()),
        ];
        assert_eq!(
            index_env(&p),
            vec![expected.clone(), expected],
            "container and init container"
        );
    }

    #[test]
    fn without_the_annotation_the_index_comes_from_the_pod_name() {
        let j = job("ns", "my-job").task("worker", 8).build();
        let mut p = pod(&j, "worker", 7);
        p.metadata.annotations = None;
        EnvPlugin.on_pod_create(&j, &mut p).unwrap();
        assert_eq!(index_env(&p)[0][1].1, "7");

        p.metadata.name = Some("lonely".into());
        assert_eq!(task_index(&p), "");
    }

    #[test]
    fn takes_no_arguments() {
        assert_eq!(EnvPlugin::from_args(&[]), Ok(EnvPlugin));
        let err = EnvPlugin::from_args(&["--index-offset=1".to_string()]).map_err(|e| e.message);
        assert_eq!(
            err,
            Err("unknown flag --index-offset: this plugin takes no arguments".to_string())
        );
    }

    #[test]
    fn records_itself_in_controlled_resources() {
        let j = job("ns", "tf").build();
        let mut controlled = BTreeMap::new();
        let changes = EnvPlugin.on_job_add(&j, &mut controlled).unwrap();
        assert!(changes.is_empty());
        assert_eq!(
            controlled.get("plugin-env").map(String::as_str),
            Some("env")
        );
        EnvPlugin.on_job_delete(&j, &mut controlled).unwrap();
        assert!(controlled.is_empty());
    }
}
