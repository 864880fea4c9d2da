//! Volcano's Job admission webhooks, run in process: a Volcano Job is defaulted
//! (`mutatejob.volcano.sh`) and validated (`validatejob.volcano.sh`) on create and update, with
//! the rules of `volcano_controllers::admission`. A refused Job is not stored, and the client
//! gets the error a cluster running Volcano's webhooks gives: 400, "admission webhook ...
//! denied the request: <reason>".
//!
//! A Job to a queue that is not Open is admitted and waits Pending, where Volcano's webhook
//! refuses it; a missing queue, the root queue and a parent queue are refused as in Volcano.
//!
//! Unlike Volcano, whose mutating webhook runs on create only, defaults are applied on update
//! too. Otherwise a second `kubectl apply` of an unchanged Job file is refused: kubectl sends
//! the task list as written, without the `maxRetry` and `minAvailable` the first create
//! defaulted, and the update rules see those fields change.

use serde_json::Value;
use volcano_api::batch::Job;
use volcano_api::custom_resource;
use volcano_api::scheduling::Queue;
use volcano_controllers::admission::{
    self, AdmissionError, check_leaf_queue, check_queue, check_queue_deletion, validate_job_update,
};

use super::meta::meta_str;
use super::{Store, validate};
use crate::error::{ApiError, Reason};
use crate::kinds::{self, KindInfo};

const VALIDATING_WEBHOOK: &str = "validatejob.volcano.sh";

fn is_volcano_job(kind: &KindInfo) -> bool {
    kind.group == "batch.volcano.sh" && kind.resource == "jobs"
}

fn denied(e: &AdmissionError) -> ApiError {
    denied_with(&e.to_string())
}

fn denied_with(why: &str) -> ApiError {
    ApiError::bad_request(format!(
        "admission webhook \"{VALIDATING_WEBHOOK}\" denied the request: {why}"
    ))
}

/// Reads a Job body; a body that is not a Job is invalid, as the CRD's schema would find. A
/// Job without `spec` reads as one with an empty spec, which validation then explains.
fn parse_job(kind: &KindInfo, object: &Value) -> Result<Job, ApiError> {
    custom_resource::from_value(object.clone())
        .map_err(|e| ApiError::invalid(kind, meta_str(object, "name"), &e.to_string()))
}

/// Applies Volcano's Job defaults to `object` as the webhook's JSON patch would, so fields this
/// server does not model are kept as written; returns the defaulted Job.
fn default_in_place(kind: &KindInfo, object: &mut Value) -> Result<Job, ApiError> {
    // The defaults patch fields under `spec`, so it must exist to be patched.
    custom_resource::ensure_spec(object);
    let mut job = parse_job(kind, object)?;
    let internal = |e: &dyn std::fmt::Display| {
        ApiError::new(
            Reason::InternalError,
            format!("defaulting the Job failed: {e}"),
        )
    };
    let before = serde_json::to_value(&job).map_err(|e| internal(&e))?;
    admission::default_job(&mut job);
    let after = serde_json::to_value(&job).map_err(|e| internal(&e))?;
    json_patch::patch(object, &json_patch::diff(&before, &after)).map_err(|e| internal(&e))?;
    Ok(job)
}

/// The part of Kubernetes' pod template validation Volcano's webhook runs on each task that
/// the API server would otherwise refuse only when the pods are created: the containers'
/// resources, after the defaulting of requests from limits. Worded as Volcano's
/// `validateTaskTemplate`: `spec.task[0].template.spec.containers[0].resources.limits:
/// Required value: ... `.
fn check_templates(object: &Value) -> Result<(), ApiError> {
    let tasks = object.pointer("/spec/tasks").and_then(Value::as_array);
    let mut message = String::new();
    for (index, task) in tasks.into_iter().flatten().enumerate() {
        let mut spec = task
            .pointer("/template/spec")
            .cloned()
            .unwrap_or(Value::Null);
        default_requests(&mut spec);
        let errors = validate::pod_spec_errors(kinds::pods(), &spec, "template.spec")
            .map_err(|e| denied_with(&e.message))?;
        if !errors.is_empty() {
            message.push_str(&format!("spec.task[{index}]."));
            for e in errors {
                message.push_str(&format!("{e}. "));
            }
        }
    }
    if message.is_empty() {
        Ok(())
    } else {
        Err(denied_with(&message))
    }
}

/// Kubernetes' defaulting of a missing request to the limit of the same resource.
fn default_requests(spec: &mut Value) {
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers {
            let Some(limits) = c
                .pointer("/resources/limits")
                .and_then(Value::as_object)
                .cloned()
            else {
                continue;
            };
            let Some(resources) = c.get_mut("resources").and_then(Value::as_object_mut) else {
                continue;
            };
            let requests = resources
                .entry("requests")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Some(requests) = requests.as_object_mut() {
                for (name, qty) in limits {
                    requests.entry(name).or_insert(qty);
                }
            }
        }
    }
}

impl Store {
    /// Defaults and validates a Job being created; other kinds pass untouched.
    pub(super) fn admit_create(&self, kind: &KindInfo, object: &mut Value) -> Result<(), ApiError> {
        if !is_volcano_job(kind) {
            return Ok(());
        }
        let job = default_in_place(kind, object)?;
        admission::validate_job(&job).map_err(|e| denied(&e))?;
        check_templates(object)?;
        let queues = self.queues();
        let name = job.spec.queue.as_str();
        let queue = queues
            .iter()
            .find(|q| q.metadata.name.as_deref() == Some(name));
        match check_queue(name, queue) {
            Ok(()) => {}
            // Volcano's webhook also refuses a queue that is not Open. Here such a Job is
            // admitted and held Pending, as the scheduler holds every job of a closed queue: a
            // user who closes a queue for maintenance sees new work wait rather than fail.
            Err(_) if queue.is_some() && name != "root" => {}
            Err(e) => return Err(denied(&e)),
        }
        let children = queues.iter().filter(|q| q.spec.parent == name).count();
        check_leaf_queue(name, children).map_err(|e| denied(&e))
    }

    /// Defaults and validates an update of a Job: Volcano lets only replicas, minAvailable and
    /// the priority class change.
    pub(super) fn admit_update(
        &self,
        kind: &KindInfo,
        old: &Value,
        new: &mut Value,
    ) -> Result<(), ApiError> {
        if !is_volcano_job(kind) || old.get("spec") == new.get("spec") {
            return Ok(());
        }
        let job = default_in_place(kind, new)?;
        validate_job_update(&parse_job(kind, old)?, &job).map_err(|e| denied(&e))
    }

    /// Refuses the deletion of a queue that must stay (`default`, `root`, one whose PodGroups
    /// hold resources, a parent), as the ValidatingAdmissionPolicy of `deploy/` does on a
    /// cluster, with its message.
    pub(super) fn admit_delete(&self, kind: &KindInfo, old: &Value) -> Result<(), ApiError> {
        if kind.group != "scheduling.volcano.sh" || kind.resource != "queues" {
            return Ok(());
        }
        let Ok(queue) = custom_resource::from_value::<Queue>(old.clone()) else {
            return Ok(());
        };
        let name = queue.metadata.name.clone().unwrap_or_default();
        let mut children: Vec<String> = self
            .queues()
            .into_iter()
            .filter(|q| q.spec.parent == name && q.metadata.name.as_deref() != Some(&name))
            .filter_map(|q| q.metadata.name)
            .collect();
        children.sort();
        check_queue_deletion(&queue, &children).map_err(|e| {
            let message = format!(
                "{} \"{name}\" is forbidden: ValidatingAdmissionPolicy 'volcano-queue-deletion' \
                 with binding 'volcano-queue-deletion' denied request: {}",
                kind.qualified(),
                e.message
            );
            ApiError::about(Reason::Forbidden, kind, &name, message)
        })
    }

    /// The Queues stored. A Queue written without `spec` has the defaults; one that cannot be
    /// read at all counts as absent.
    fn queues(&self) -> Vec<Queue> {
        let Some(kind) = kinds::find("queues") else {
            return Vec::new();
        };
        self.objects[kind.index()]
            .values()
            .filter_map(|q| custom_resource::from_value((**q).clone()).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::kinds;
    use crate::store::{Store, StoreOptions, WriteOptions};

    fn job(name: &str, resources: serde_json::Value) -> serde_json::Value {
        json!({"metadata": {"name": name}, "spec": {"queue": "default", "tasks": [{"name": "t",
            "replicas": 1, "template": {"spec": {"containers": [
                {"name": "c", "image": "busybox", "resources": resources}]}}}]}})
    }

    #[test]
    fn a_task_asking_an_extended_resource_without_limit_is_denied_as_volcano_does() {
        let mut s = Store::new(StoreOptions::default(), 0);
        let jobs = kinds::find("jobs").unwrap();
        let w = WriteOptions::default();
        let bad = job("bad", json!({"requests": {"nvidia.com/gpu": "1"}}));
        let e = s.create(jobs, Some("default"), bad, &w).unwrap_err();
        assert_eq!(e.code(), 400);
        assert_eq!(
            e.message,
            "admission webhook \"validatejob.volcano.sh\" denied the request: spec.task[0].template.spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources. "
        );
        // A limit alone is the request too.
        let good = job("good", json!({"limits": {"nvidia.com/gpu": "1"}}));
        s.create(jobs, Some("default"), good, &w).unwrap();
    }
}
