//! Volcano's admission webhooks, run in process with the rules of
//! `volcano_controllers::admission::review`, the same the webhook server answers with on a
//! cluster: Jobs, Queues and PodGroups are defaulted and validated, replicas' budget annotations
//! checked (only objects the API server would send: `Endpoint::is_sent`). A refused object
//! is not stored, and the client gets the error a cluster running Volcano's webhooks gives: 400,
//! "admission webhook ... denied the request: <reason>".
//!
//! Unlike Volcano, whose mutating webhook runs on create only, Job defaults are applied on
//! update too. Otherwise a second `kubectl apply` of an unchanged Job file is refused: kubectl
//! sends the task list as written, without the `maxRetry` and `minAvailable` the first create
//! defaulted, and the update rules see those fields change.

use serde_json::Value;
use volcano_api::custom_resource;
use volcano_api::scheduling::Queue;
use volcano_controllers::admission::{
    AdmissionSettings, AdmissionView, Endpoint, Operation, Request, Verdict, review,
};

use super::Store;
use crate::error::ApiError;
use crate::kinds::{self, KindInfo};

fn is_volcano_job(kind: &KindInfo) -> bool {
    kind.group == "batch.volcano.sh" && kind.resource == "jobs"
}

fn denied_by(endpoint: Endpoint, why: &str) -> ApiError {
    ApiError::bad_request(format!(
        "admission webhook \"{}\" denied the request: {why}",
        endpoint.webhook_name()
    ))
}

/// The queues of the store, as the rules look them up.
struct StoreView<'a>(&'a Store);

impl AdmissionView for StoreView<'_> {
    fn queue(&self, name: &str) -> Option<Queue> {
        let kind = kinds::find("queues")?;
        let q = self.0.stored(kind, None, name).ok()?;
        custom_resource::from_value((*q).clone()).ok()
    }

    fn queues(&self) -> Vec<Queue> {
        self.0.queues()
    }
}

impl Store {
    /// Runs the webhooks registered for `operation` on `kind`, mutating ones first, as the API
    /// server calls them; `object` takes the defaults.
    fn admit(
        &self,
        kind: &KindInfo,
        operation: Operation,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let settings = AdmissionSettings::default();
        let view = StoreView(self);
        let mut object = object;
        for endpoint in Endpoint::ALL {
            let (group, resource) = endpoint.resource();
            // Job defaults apply on update too (see the module's note).
            let registered = endpoint.operations().contains(&operation)
                || (endpoint == Endpoint::JobsMutate && operation == Operation::Update);
            if group != kind.group
                || resource != kind.resource
                || !registered
                || !endpoint.is_sent(object.as_deref())
            {
                continue;
            }
            let request = Request {
                endpoint,
                operation,
                object: object.as_deref(),
                old_object: old,
            };
            match review(request, &view, &settings) {
                Verdict::Denied(why) => return Err(denied_by(endpoint, &why)),
                Verdict::Allowed(patch) if !patch.is_empty() => {
                    let Some(target) = object.as_deref_mut() else {
                        continue;
                    };
                    let patch: json_patch::Patch = serde_json::from_value(patch.to_json())
                        .map_err(|e| denied_by(endpoint, &format!("bad patch: {e}")))?;
                    json_patch::patch(target, &patch)
                        .map_err(|e| denied_by(endpoint, &format!("bad patch: {e}")))?;
                }
                Verdict::Allowed(_) => {}
            }
        }
        Ok(())
    }

    /// Defaults and validates an object being created.
    pub(super) fn admit_create(&self, kind: &KindInfo, object: &mut Value) -> Result<(), ApiError> {
        if is_volcano_job(kind) {
            custom_resource::ensure_spec(object);
        }
        self.admit(kind, Operation::Create, Some(object), None)
    }

    /// Defaults and validates an update: Volcano lets a Job change only its replicas,
    /// minAvailable and priority class.
    pub(super) fn admit_update(
        &self,
        kind: &KindInfo,
        old: &Value,
        new: &mut Value,
    ) -> Result<(), ApiError> {
        if is_volcano_job(kind) && old.get("spec") == new.get("spec") {
            return Ok(());
        }
        self.admit(kind, Operation::Update, Some(new), Some(old))
    }

    /// Refuses the deletion of a queue that must stay (`default`, `root`, one whose PodGroups
    /// hold resources, a parent).
    pub(super) fn admit_delete(&self, kind: &KindInfo, old: &Value) -> Result<(), ApiError> {
        self.admit(kind, Operation::Delete, None, Some(old))
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
