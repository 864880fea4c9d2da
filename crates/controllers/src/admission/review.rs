//! One admission request, answered by Volcano's rules: the entry point both the webhook server
//! (`volcano webhook-manager`) and the local API server (`volcano up`) call, so the two refuse
//! and default the same objects with the same words.

use serde_json::Value;
use volcano_api::batch::Job;
use volcano_api::custom_resource;
use volcano_api::scheduling::{PodGroup, Queue};

use super::{AdmissionError, check_leaf_queue, check_queue, default_job, validate_job};
use super::{pod, podgroup, queue, queue_delete, update};

/// Volcano's webhook endpoints, by the path each is served on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    /// `/jobs/mutate`: Job defaults on create.
    JobsMutate,
    /// `/jobs/validate`: Job rules on create and update.
    JobsValidate,
    /// `/queues/mutate`: queue defaults on create.
    QueuesMutate,
    /// `/queues/validate`: queue rules on create, update and delete.
    QueuesValidate,
    /// `/podgroups/mutate`: PodGroup defaults on create (none here: see [`review`]).
    PodGroupsMutate,
    /// `/podgroups/validate`: a new PodGroup's queue and network topology.
    PodGroupsValidate,
    /// `/pods/mutate`: pod defaults on create (none here: see [`review`]).
    PodsMutate,
    /// `/pods/validate`: a new pod's disruption-budget annotations.
    PodsValidate,
}

impl Endpoint {
    /// Every endpoint, mutating ones first (the order the API server calls them in).
    pub const ALL: [Endpoint; 8] = [
        Endpoint::JobsMutate,
        Endpoint::QueuesMutate,
        Endpoint::PodGroupsMutate,
        Endpoint::PodsMutate,
        Endpoint::JobsValidate,
        Endpoint::QueuesValidate,
        Endpoint::PodGroupsValidate,
        Endpoint::PodsValidate,
    ];

    /// The HTTP path Volcano serves it on.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::JobsMutate => "/jobs/mutate",
            Endpoint::JobsValidate => "/jobs/validate",
            Endpoint::QueuesMutate => "/queues/mutate",
            Endpoint::QueuesValidate => "/queues/validate",
            Endpoint::PodGroupsMutate => "/podgroups/mutate",
            Endpoint::PodGroupsValidate => "/podgroups/validate",
            Endpoint::PodsMutate => "/pods/mutate",
            Endpoint::PodsValidate => "/pods/validate",
        }
    }

    /// The endpoint served on `path`.
    pub fn from_path(path: &str) -> Option<Endpoint> {
        Endpoint::ALL.into_iter().find(|e| e.path() == path)
    }

    /// The webhook's name in its configuration, which the API server quotes in a denial.
    pub fn webhook_name(self) -> &'static str {
        match self {
            Endpoint::JobsMutate => "mutatejob.volcano.sh",
            Endpoint::JobsValidate => "validatejob.volcano.sh",
            Endpoint::QueuesMutate => "mutatequeue.volcano.sh",
            Endpoint::QueuesValidate => "validatequeue.volcano.sh",
            Endpoint::PodGroupsMutate => "mutatepodgroup.volcano.sh",
            Endpoint::PodGroupsValidate => "validatepodgroup.volcano.sh",
            Endpoint::PodsMutate => "mutatepod.volcano.sh",
            Endpoint::PodsValidate => "validatepod.volcano.sh",
        }
    }

    /// Whether it answers with defaults rather than a verdict.
    pub fn is_mutating(self) -> bool {
        matches!(
            self,
            Endpoint::JobsMutate
                | Endpoint::QueuesMutate
                | Endpoint::PodGroupsMutate
                | Endpoint::PodsMutate
        )
    }

    /// The `(group, resource)` it reviews.
    pub fn resource(self) -> (&'static str, &'static str) {
        match self {
            Endpoint::JobsMutate | Endpoint::JobsValidate => ("batch.volcano.sh", "jobs"),
            Endpoint::QueuesMutate | Endpoint::QueuesValidate => {
                ("scheduling.volcano.sh", "queues")
            }
            Endpoint::PodGroupsMutate | Endpoint::PodGroupsValidate => {
                ("scheduling.volcano.sh", "podgroups")
            }
            Endpoint::PodsMutate | Endpoint::PodsValidate => ("", "pods"),
        }
    }

    /// The operations it is registered for, as Volcano registers it.
    pub fn operations(self) -> &'static [Operation] {
        match self {
            Endpoint::JobsValidate => &[Operation::Create, Operation::Update],
            Endpoint::QueuesValidate => &[Operation::Create, Operation::Update, Operation::Delete],
            _ => &[Operation::Create],
        }
    }
}

/// What is being done to the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A create.
    Create,
    /// An update (including patches and status writes that reach the webhook).
    Update,
    /// A delete.
    Delete,
    /// A connect (exec, attach, port-forward).
    Connect,
}

impl Operation {
    /// Reads the `operation` of an AdmissionReview request.
    pub fn parse(s: &str) -> Option<Operation> {
        match s {
            "CREATE" => Some(Operation::Create),
            "UPDATE" => Some(Operation::Update),
            "DELETE" => Some(Operation::Delete),
            "CONNECT" => Some(Operation::Connect),
            _ => None,
        }
    }

    /// The name an AdmissionReview and a webhook rule use.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// What the rules may look at besides the object under review.
pub trait AdmissionView {
    /// The queue named `name`, if it exists.
    fn queue(&self, name: &str) -> Option<Queue>;
    /// Every queue.
    fn queues(&self) -> Vec<Queue>;
}

/// The switches Volcano's webhook-manager takes on its command line.
#[derive(Debug, Clone)]
pub struct AdmissionSettings {
    /// Pods naming one of these schedulers are reviewed by the pod webhooks.
    pub scheduler_names: Vec<String>,
    /// The deepest a queue tree may be (root counts as depth 1).
    pub max_queue_depth: usize,
    /// Refuse changes of the root queue's capability, deserved and guarantee.
    pub enable_root_queue_protection: bool,
}

impl Default for AdmissionSettings {
    fn default() -> Self {
        AdmissionSettings {
            scheduler_names: vec![super::DEFAULT_SCHEDULER.to_string()],
            max_queue_depth: 5,
            enable_root_queue_protection: true,
        }
    }
}

/// A JSON patch (RFC 6902), as a webhook answers with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Patch(pub Vec<Value>);

impl Patch {
    /// Adds (or replaces) the value at `path`.
    pub fn add(&mut self, path: &str, value: Value) {
        self.0
            .push(serde_json::json!({"op": "add", "path": path, "value": value}));
    }

    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The patch as the JSON array a webhook answers with.
    pub fn to_json(&self) -> Value {
        Value::Array(self.0.clone())
    }
}

/// One request: the endpoint it came to, the operation, and the objects.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The endpoint.
    pub endpoint: Endpoint,
    /// The operation.
    pub operation: Operation,
    /// The object as it would be stored (absent on delete).
    pub object: Option<&'a Value>,
    /// The object as stored before (update and delete).
    pub old_object: Option<&'a Value>,
}

/// The answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Admitted, with the defaults to apply (empty for validating endpoints).
    Allowed(Patch),
    /// Refused, with the reason in Volcano's words.
    Denied(String),
}

impl Verdict {
    fn from_result(r: Result<(), String>) -> Verdict {
        match r {
            Ok(()) => Verdict::Allowed(Patch::default()),
            Err(message) => Verdict::Denied(message),
        }
    }
}

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

/// Answers one request. The PodGroup and pod mutating endpoints admit without defaults: the
/// namespace's default queue and the resource-group rules they apply in Volcano need
/// configuration volcano-rs does not read yet.
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
        Endpoint::PodGroupsMutate | Endpoint::PodsMutate => match op {
            Operation::Create => Verdict::Allowed(Patch::default()),
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
