//! What an admission request is and how it is answered: the endpoints Volcano serves, the
//! operation, the request, the verdict and its JSON patch, and what the rules may look at
//! besides the object (the queues, the webhook-manager's settings). Below `review` and the rules
//! of every endpoint, which all speak these words.

use serde_json::Value;
use volcano_api::scheduling::Queue;

use super::DEFAULT_SCHEDULER;

/// The labels that mark a replica, one per webhook entry of `deploy/65-admission-webhooks.yaml`
/// (`objectSelector`, `Exists`): a Deployment's, a StatefulSet's or DaemonSet's, a batch/v1
/// Job's. The API server sends the pod webhooks only pods carrying one. Checking `matchConditions`
/// converts the whole pod for each webhook, so a bare pod costs nothing only if labels alone
/// exclude it.
pub const REPLICA_LABELS: [&str; 3] = [
    "pod-template-hash",
    "controller-revision-hash",
    "batch.kubernetes.io/controller-uid",
];

/// The namespaces whose objects are never sent to a webhook (a `matchCondition` on
/// `request.namespace` in `deploy/65-admission-webhooks.yaml`), as Volcano's webhook manager
/// leaves them out by default: the webhook's own pods and the cluster's system pods always
/// start.
pub const UNREVIEWED_NAMESPACES: [&str; 2] = ["volcano-system", "kube-system"];

/// Whether the API server sends `pod` to the pod webhooks of our configurations: it carries
/// one of [`REPLICA_LABELS`].
pub fn is_sent_to_pod_webhooks(pod: &Value) -> bool {
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
    labels.is_some_and(|l| REPLICA_LABELS.iter().any(|k| l.contains_key(*k)))
}

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
    /// `/podgroups/mutate`: PodGroup defaults on create (none here: see [`review`](super::review())).
    PodGroupsMutate,
    /// `/podgroups/validate`: a new PodGroup's queue and network topology.
    PodGroupsValidate,
    /// `/pods/mutate`: pod defaults on create (none here: see [`review`](super::review())).
    PodsMutate,
    /// `/pods/validate`: a new pod's disruption-budget annotations.
    PodsValidate,
    /// `/cronjobs/validate`: a CronJob's name, schedule, time zone and limits.
    CronJobsValidate,
    /// `/jobflows/validate`: a JobFlow's dependencies name its flows and form no cycle.
    JobFlowsValidate,
    /// `/hypernodes/validate`: a HyperNode's members and their selectors.
    HyperNodesValidate,
}

impl Endpoint {
    /// Every endpoint, mutating ones first (the order the API server calls them in).
    pub const ALL: [Endpoint; 11] = [
        Endpoint::JobsMutate,
        Endpoint::QueuesMutate,
        Endpoint::PodGroupsMutate,
        Endpoint::PodsMutate,
        Endpoint::JobsValidate,
        Endpoint::QueuesValidate,
        Endpoint::PodGroupsValidate,
        Endpoint::PodsValidate,
        Endpoint::CronJobsValidate,
        Endpoint::JobFlowsValidate,
        Endpoint::HyperNodesValidate,
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
            Endpoint::CronJobsValidate => "/cronjobs/validate",
            Endpoint::JobFlowsValidate => "/jobflows/validate",
            Endpoint::HyperNodesValidate => "/hypernodes/validate",
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
            Endpoint::CronJobsValidate => "validatecronjob.volcano.sh",
            Endpoint::JobFlowsValidate => "validatejobflow.volcano.sh",
            Endpoint::HyperNodesValidate => "validatehypernode.volcano.sh",
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
            Endpoint::CronJobsValidate => ("batch.volcano.sh", "cronjobs"),
            Endpoint::JobFlowsValidate => ("flow.volcano.sh", "jobflows"),
            Endpoint::HyperNodesValidate => ("topology.volcano.sh", "hypernodes"),
        }
    }

    /// Whether the API server sends it `object`, by our configurations' `objectSelector` and
    /// the namespace `matchCondition` (their other conditions are checked again by `review`):
    /// nothing of [`UNREVIEWED_NAMESPACES`]; of the rest, the pod endpoints
    /// are sent replicas only ([`is_sent_to_pod_webhooks`]), the others every object of their
    /// resource.
    pub fn is_sent(self, object: Option<&Value>) -> bool {
        let namespace = object
            .and_then(|o| o.pointer("/metadata/namespace"))
            .and_then(Value::as_str);
        if namespace.is_some_and(|ns| UNREVIEWED_NAMESPACES.contains(&ns)) {
            return false;
        }
        match self {
            Endpoint::PodsMutate | Endpoint::PodsValidate => {
                object.is_some_and(is_sent_to_pod_webhooks)
            }
            _ => true,
        }
    }

    /// The operations it is registered for, as Volcano registers it.
    pub fn operations(self) -> &'static [Operation] {
        match self {
            Endpoint::JobsValidate
            | Endpoint::CronJobsValidate
            | Endpoint::JobFlowsValidate
            | Endpoint::HyperNodesValidate => &[Operation::Create, Operation::Update],
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
            scheduler_names: vec![DEFAULT_SCHEDULER.to_string()],
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
    /// Allowed without a patch, or denied with the rule's reason.
    pub(super) fn from_result(r: Result<(), String>) -> Verdict {
        match r {
            Ok(()) => Verdict::Allowed(Patch::default()),
            Err(message) => Verdict::Denied(message),
        }
    }
}
