//! Volcano Jobs (`batch.volcano.sh/v1alpha1`): tasks made from pod templates.

use volcano_api::Objects;
use volcano_api::batch::{Job, JobSpec, TaskSpec};
use volcano_api::k8s_openapi::api::core::v1::PodTemplateSpec;
use volcano_api::keys;

use super::{AddTo, Template};

/// A Job: queue, minAvailable, tasks.
#[derive(Debug, Clone)]
pub struct JobBuilder {
    namespace: String,
    name: String,
    spec: JobSpec,
}

/// A Job with no tasks, for the volcano scheduler, in the default queue.
pub fn job(namespace: &str, name: &str) -> JobBuilder {
    JobBuilder {
        namespace: namespace.to_string(),
        name: name.to_string(),
        spec: JobSpec {
            scheduler_name: keys::DEFAULT_SCHEDULER_NAME.to_string(),
            ..JobSpec::default()
        },
    }
}

impl JobBuilder {
    /// `spec.queue`.
    pub fn queue(mut self, q: &str) -> Self {
        self.spec.queue = q.to_string();
        self
    }

    /// `spec.minAvailable`.
    pub fn min_available(mut self, n: i32) -> Self {
        self.spec.min_available = Some(n);
        self
    }

    /// `spec.priorityClassName`.
    pub fn priority_class(mut self, name: &str) -> Self {
        self.spec.priority_class_name = name.to_string();
        self
    }

    /// `spec.maxRetry`.
    pub fn max_retry(mut self, n: i32) -> Self {
        self.spec.max_retry = Some(n);
        self
    }

    /// A task `name` of `replicas` pods made from `t` (restart policy `Never`).
    pub fn task(mut self, name: &str, replicas: i32, t: Template) -> Self {
        let mut spec = t.spec(&self.spec.scheduler_name, None);
        spec.restart_policy = Some("Never".to_string());
        self.spec.tasks.push(TaskSpec {
            name: name.to_string(),
            replicas,
            template: PodTemplateSpec {
                metadata: None,
                spec: Some(spec),
            },
            ..TaskSpec::default()
        });
        self
    }

    /// The Job object, without status (as a user applies it).
    pub fn build(self) -> Job {
        let mut j = Job::new(&self.name, self.spec);
        j.metadata.namespace = Some(self.namespace);
        j
    }
}

impl AddTo for JobBuilder {
    fn add_to(self, objs: &mut Objects) {
        objs.jobs.push(self.build());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{GI, cluster};

    #[test]
    fn a_job_carries_its_tasks_queue_and_minimum() {
        let objs = cluster()
            .with(
                job("ns", "train")
                    .queue("q1")
                    .min_available(3)
                    .task("ps", 1, Template::default().cpu(1))
                    .task("worker", 2, Template::default().cpu(2).mem_gi(4)),
            )
            .objects();
        let j = &objs.jobs[0];
        assert_eq!(j.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(j.spec.queue, "q1");
        assert_eq!(j.spec.min_available, Some(3));
        let replicas: Vec<(&str, i32)> = j
            .spec
            .tasks
            .iter()
            .map(|t| (t.name.as_str(), t.replicas))
            .collect();
        assert_eq!(replicas, [("ps", 1), ("worker", 2)]);
        let worker = j.spec.tasks[1].template.spec.as_ref();
        let requests = worker
            .and_then(|s| s.containers[0].resources.as_ref())
            .and_then(|r| r.requests.as_ref());
        assert_eq!(
            requests.and_then(|r| r.get("memory")).map(|q| q.0.clone()),
            Some((4 * GI).to_string())
        );
    }
}
