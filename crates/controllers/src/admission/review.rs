//! One admission request, answered by Volcano's rules: the entry point both the webhook server
//! (`volcano webhook-manager`) and the local API server (`volcano up`) call, so the two refuse
//! and default the same objects with the same words. It sends each request to the rules of its
//! endpoint (`pod`, `podgroup`, `queue`, ...); the words they share are in `request`.

use serde_json::Value;
use volcano_api::batch::Job;
use volcano_api::cronjob::CronJob;
use volcano_api::custom_resource;
use volcano_api::flow::JobFlow;
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_api::spec_checks::{check_cron_job, check_job_flow};
use volcano_api::topology::HyperNode;

use super::request::{
    AdmissionSettings, AdmissionView, Endpoint, Operation, Patch, Request, Verdict,
};
use super::{AdmissionError, check_leaf_queue, check_queue, default_job, validate_job};
use super::{pod, podgroup, queue, queue_delete, update, validate_hyper_node};

/// Volcano's text for an operation an endpoint does not handle.
fn unexpected(op: Operation, expected: &str) -> Verdict {
    Verdict::Denied(format!(
        "invalid operation `{}`, expect operation to be {expected}",
        op.as_str()
    ))
}

fn decode<K: serde::de::DeserializeOwned>(
    object: Option<&Value>,
    kind: &str,
) -> Result<K, Verdict> {
    let Some(object) = object else {
        return Err(Verdict::Denied(format!("the request has no {kind} object")));
    };
    custom_resource::from_value(object.clone())
        .map_err(|e| Verdict::Denied(format!("failed to decode {kind}: {e}")))
}

/// Answers one request. The PodGroup mutating endpoint admits without defaults, and the pod
/// one only names the pod's PodGroup: the namespace's default queue and the resource-group
/// rules they apply in Volcano need configuration volcano-rs does not read yet.
pub fn review(
    request: Request<'_>,
    view: &dyn AdmissionView,
    settings: &AdmissionSettings,
) -> Verdict {
    match run(request, view, settings) {
        Ok(v) | Err(v) => v,
    }
}

fn run(
    request: Request<'_>,
    view: &dyn AdmissionView,
    settings: &AdmissionSettings,
) -> Result<Verdict, Verdict> {
    let op = request.operation;
    Ok(match request.endpoint {
        Endpoint::JobsMutate => match op {
            Operation::Create | Operation::Update => {
                Verdict::Allowed(job_defaults(request.object)?)
            }
            _ => unexpected(op, "`CREATE`"),
        },
        Endpoint::JobsValidate => match op {
            Operation::Create => {
                let job: Job = decode(request.object, "Job")?;
                let checked = validate_new_job(&job, view).map_err(|e| e.to_string());
                // The task templates as the API server will judge their pods, on the object as
                // sent (fields the Job type does not model included).
                let templates = || {
                    request
                        .object
                        .map_or(Ok(()), super::pod_resources::check_task_templates)
                };
                Verdict::from_result(checked.and_then(|()| templates()))
            }
            Operation::Update => {
                let job: Job = decode(request.object, "Job")?;
                let old: Job = decode(request.old_object, "Job")?;
                if job.spec == old.spec {
                    Verdict::Allowed(Patch::default())
                } else {
                    Verdict::from_result(
                        update::validate_job_update(&old, &job).map_err(|e| e.to_string()),
                    )
                }
            }
            _ => unexpected(op, "`CREATE` or `UPDATE`"),
        },
        Endpoint::QueuesMutate => match op {
            Operation::Create => match request.object {
                Some(object) => Verdict::Allowed(queue::default_queue(object)),
                None => {
                    decode::<Queue>(None, "Queue").map(|_| Verdict::Allowed(Patch::default()))?
                }
            },
            _ => unexpected(op, "`CREATE`"),
        },
        Endpoint::QueuesValidate => match op {
            Operation::Create | Operation::Update => {
                let q: Queue = decode(request.object, "Queue")?;
                let old: Option<Queue> = match op {
                    Operation::Update => Some(decode(request.old_object, "Queue")?),
                    _ => None,
                };
                Verdict::from_result(queue::validate_queue(&q, old.as_ref(), view, settings))
            }
            Operation::Delete => {
                let q: Queue = decode(request.old_object, "Queue")?;
                Verdict::from_result(queue_delete::check_queue_deletion(&q, view))
            }
            Operation::Connect => unexpected(op, "`CREATE`, `UPDATE` or `DELETE`"),
        },
        Endpoint::PodGroupsMutate => match op {
            Operation::Create => Verdict::Allowed(Patch::default()),
            _ => unexpected(op, "`CREATE`"),
        },
        Endpoint::PodsMutate => match (op, request.object) {
            (Operation::Create, Some(object)) => {
                Verdict::Allowed(pod::mutate_pod(object, settings))
            }
            (Operation::Create, None) => Verdict::Allowed(Patch::default()),
            _ => unexpected(op, "`CREATE`"),
        },
        Endpoint::PodGroupsValidate => match op {
            Operation::Create => {
                let pg: PodGroup = decode(request.object, "PodGroup")?;
                Verdict::from_result(podgroup::validate_podgroup(&pg, view))
            }
            _ => Verdict::Denied(format!("unsupported operation {}", op.as_str())),
        },
        Endpoint::PodsValidate => match op {
            Operation::Create => {
                let Some(object) = request.object else {
                    return Err(Verdict::Denied("the request has no Pod object".into()));
                };
                Verdict::from_result(pod::validate_pod(object, settings))
            }
            _ => Verdict::Denied("expect operation to be 'CREATE'".into()),
        },
        Endpoint::CronJobsValidate => match op {
            Operation::Create | Operation::Update => {
                let cj: CronJob = decode(request.object, "CronJob")?;
                Verdict::from_result(check_cron_job(&cj).map_err(|e| e.to_string()))
            }
            _ => Verdict::Denied("expect operation to be 'CREATE' or 'UPDATE'".into()),
        },
        Endpoint::JobFlowsValidate => match op {
            Operation::Create | Operation::Update => {
                let flow: JobFlow = decode(request.object, "JobFlow")?;
                Verdict::from_result(check_job_flow(&flow).map_err(|e| e.volcano_message()))
            }
            _ => Verdict::Denied("expect operation to be 'CREATE' or 'UPDATE'".into()),
        },
        Endpoint::HyperNodesValidate => match op {
            Operation::Create | Operation::Update => {
                let hn: HyperNode = decode(request.object, "HyperNode")?;
                Verdict::from_result(validate_hyper_node(&hn))
            }
            _ => Verdict::Denied("expect operation to be 'CREATE' or 'UPDATE'".into()),
        },
    })
}

/// The defaults of a Job as a patch of the object as sent, so fields the Job type does not
/// model are left as written.
fn job_defaults(object: Option<&Value>) -> Result<Patch, Verdict> {
    let mut job: Job = decode(object, "Job")?;
    let internal =
        |e: serde_json::Error| Verdict::Denied(format!("defaulting the Job failed: {e}"));
    let before = serde_json::to_value(&job).map_err(internal)?;
    default_job(&mut job);
    let after = serde_json::to_value(&job).map_err(internal)?;
    let mut patch = Patch::default();
    if object.is_some_and(|o| o.get("spec").is_none_or(Value::is_null)) {
        patch.add("/spec", serde_json::json!({}));
    }
    let diff = serde_json::to_value(json_patch::diff(&before, &after)).map_err(internal)?;
    if let Value::Array(ops) = diff {
        patch.0.extend(ops);
    }
    Ok(patch)
}

/// Volcano's rules for a Job being created, after its defaults: the Job itself, then its
/// queue (exists, Open, not root, a leaf).
pub fn validate_new_job(job: &Job, view: &dyn AdmissionView) -> Result<(), AdmissionError> {
    validate_job(job)?;
    let name = match job.spec.queue.as_str() {
        "" => super::DEFAULT_QUEUE,
        name => name,
    };
    check_queue(name, view.queue(name).as_ref())?;
    let children = queue::children_of(view, name).len();
    check_leaf_queue(name, children)
}
