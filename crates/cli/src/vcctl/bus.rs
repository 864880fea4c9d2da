//! The bus Commands vcctl creates to ask a controller to act on a Job or a Queue: suspend and
//! resume a job, open and close a queue. The controllers consume (delete) them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use kube::api::{ApiResource, DynamicObject};
use kube::core::TypeMeta;
use volcano_api::bus::{BusAction, Command};

/// The controller reference to `object`, as Go's `metav1.NewControllerRef` makes it; `None`
/// when the object has no name or uid (the API server always sets both).
pub fn controller_ref<K: Resource<DynamicType = ()>>(object: &K) -> Option<OwnerReference> {
    let meta = object.meta();
    Some(OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: meta.name.clone().filter(|n| !n.is_empty())?,
        uid: meta.uid.clone().filter(|u| !u.is_empty())?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// The Command asking for `action` on `target`, in `namespace`: named
/// `<target>-<action in lower case>-<random>` by the server, and owned by the target so it
/// goes away with it if no controller consumes it.
pub fn command(target: OwnerReference, namespace: &str, action: BusAction) -> Command {
    Command {
        metadata: ObjectMeta {
            generate_name: Some(format!(
                "{}-{}-",
                target.name,
                action.as_str().to_lowercase()
            )),
            namespace: Some(namespace.to_string()),
            owner_references: Some(vec![target.clone()]),
            ..ObjectMeta::default()
        },
        action: action.as_str().to_string(),
        target: Some(target),
        reason: String::new(),
        message: String::new(),
    }
}

/// The API resource of Commands, to send them as [`DynamicObject`]s.
pub fn api_resource() -> ApiResource {
    ApiResource::erase::<Command>(&())
}

/// `cmd` as the API server wants it on create. The shared `Command` type serializes without
/// `apiVersion` and `kind` (it has no `TypeMeta`), and the server refuses an object without
/// them, so the Command is sent as a dynamic object that carries both.
pub fn as_dynamic(cmd: &Command) -> Result<DynamicObject, serde_json::Error> {
    let mut data = serde_json::to_value(cmd)?;
    if let Some(fields) = data.as_object_mut() {
        fields.remove("metadata");
    }
    Ok(DynamicObject {
        types: Some(TypeMeta {
            api_version: Command::api_version(&()).into_owned(),
            kind: Command::kind(&()).into_owned(),
        }),
        metadata: cmd.metadata.clone(),
        data,
    })
}

#[cfg(test)]
mod tests {
    use volcano_api::batch::{Job, JobSpec};
    use volcano_api::scheduling::{Queue, QueueSpec};

    use super::*;

    #[test]
    fn a_job_command_targets_and_is_owned_by_the_job() {
        let mut job = Job::new("train", JobSpec::default());
        job.metadata.namespace = Some("team".into());
        assert!(controller_ref(&job).is_none(), "no uid yet");
        job.metadata.uid = Some("u-1".into());
        let target = controller_ref(&job).unwrap();
        let cmd = command(target, "team", BusAction::AbortJob);
        let json = serde_json::to_value(as_dynamic(&cmd).unwrap()).unwrap();
        let owner = serde_json::json!({
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": "train",
            "uid": "u-1",
            "controller": true,
            "blockOwnerDeletion": true,
        });
        assert_eq!(
            json,
            serde_json::json!({
                "apiVersion": "bus.volcano.sh/v1alpha1",
                "kind": "Command",
                "metadata": {
                    "generateName": "train-abortjob-",
                    "namespace": "team",
                    "ownerReferences": [owner],
                },
                "action": "AbortJob",
                "target": owner,
            })
        );
    }

    #[test]
    fn a_queue_command_targets_the_queue() {
        let mut queue = Queue::new("q1", QueueSpec::default());
        queue.metadata.uid = Some("u-2".into());
        let cmd = command(
            controller_ref(&queue).unwrap(),
            "default",
            BusAction::CloseQueue,
        );
        assert_eq!(
            cmd.metadata.generate_name.as_deref(),
            Some("q1-closequeue-")
        );
        assert_eq!(cmd.action, "CloseQueue");
        let target = cmd.target.unwrap();
        assert_eq!(
            (
                target.api_version.as_str(),
                target.kind.as_str(),
                target.name.as_str()
            ),
            ("scheduling.volcano.sh/v1beta1", "Queue", "q1")
        );
    }
}
