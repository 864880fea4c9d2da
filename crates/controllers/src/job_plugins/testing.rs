//! Builders for plugin tests: a job reads like `job("ns", "tf").task("ps", 2)`.

use volcano_api::batch::{Job, JobSpec, JobStatus, TaskSpec};
use volcano_api::k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub(super) struct JobBuilder(Job);

pub(super) fn job(namespace: &str, name: &str) -> JobBuilder {
    let mut job = Job::new(name, JobSpec::default());
    job.metadata.namespace = Some(namespace.to_string());
    job.metadata.uid = Some(format!("uid-{name}"));
    job.status = Some(JobStatus::default());
    JobBuilder(job)
}

impl JobBuilder {
    pub(super) fn task(mut self, name: &str, replicas: i32) -> Self {
        self.0.spec.tasks.push(TaskSpec {
            name: name.to_string(),
            replicas,
            template: PodTemplateSpec {
                metadata: None,
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "main".to_string(),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..TaskSpec::default()
        });
        self
    }

    /// Fixes a task template's hostname and subdomain (empty means unset).
    pub(super) fn task_hostname(mut self, task: &str, hostname: &str, subdomain: &str) -> Self {
        let set = |v: &str| (!v.is_empty()).then(|| v.to_string());
        for t in self.0.spec.tasks.iter_mut().filter(|t| t.name == task) {
            if let Some(spec) = t.template.spec.as_mut() {
                spec.hostname = set(hostname);
                spec.subdomain = set(subdomain);
            }
        }
        self
    }

    pub(super) fn build(self) -> Job {
        self.0
    }
}

/// A pod of `task` as the job controller hands it to plugins: named `<job>-<task>-<index>`, with
/// its index and task annotated and labelled as the job controller does, one container and one
/// init container.
pub(super) fn pod(job: &Job, task: &str, index: u32) -> Pod {
    let job_name = job.metadata.name.clone().unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("{job_name}-{task}-{index}")),
            namespace: job.metadata.namespace.clone(),
            annotations: Some(
                [
                    (volcano_api::keys::TASK_INDEX.to_string(), index.to_string()),
                    (volcano_api::keys::TASK_SPEC.to_string(), task.to_string()),
                ]
                .into(),
            ),
            labels: Some(
                [
                    (volcano_api::keys::TASK_INDEX.to_string(), index.to_string()),
                    (volcano_api::keys::TASK_SPEC.to_string(), task.to_string()),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".to_string(),
                ..Container::default()
            }],
            init_containers: Some(vec![Container {
                name: "setup".to_string(),
                ..Container::default()
            }]),
            ..PodSpec::default()
        }),
        status: None,
    }
}

/// Every container of a pod, init containers last.
pub(super) fn containers(pod: &Pod) -> Vec<&Container> {
    pod.spec
        .iter()
        .flat_map(|s| {
            s.containers
                .iter()
                .chain(s.init_containers.iter().flatten())
        })
        .collect()
}
