//! What a controller asks the cluster to do. Every change names the fields it owns, so a caller
//! can send it as a patch of those fields only: no full-object writes that conflict with another
//! writer.

use std::collections::BTreeMap;

use volcano_api::batch::{Job, JobStatus};
use volcano_api::cronjob::CronJobStatus;
use volcano_api::event::Event;
use volcano_api::flow::{JobFlowStatus, JobTemplateStatus};
use volcano_api::k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, Secret, Service,
};
use volcano_api::k8s_openapi::api::networking::v1::NetworkPolicy;
use volcano_api::scheduling::{PodGroup, PodGroupSpec};
use volcano_api::topology::HyperNode;

/// An object a controller creates on a job's behalf (through its plugins or its volumes).
#[derive(Debug, Clone, PartialEq)]
pub enum Owned {
    /// A headless Service for the job's pods (`svc` plugin).
    Service(Service),
    /// A ConfigMap (`svc` plugin host lists).
    ConfigMap(ConfigMap),
    /// A Secret (`ssh` plugin keys).
    Secret(Secret),
    /// A NetworkPolicy (`svc` plugin).
    NetworkPolicy(NetworkPolicy),
    /// A claim for a job volume.
    PersistentVolumeClaim(PersistentVolumeClaim),
}

impl Owned {
    /// The object's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Owned::Service(_) => "Service",
            Owned::ConfigMap(_) => "ConfigMap",
            Owned::Secret(_) => "Secret",
            Owned::NetworkPolicy(_) => "NetworkPolicy",
            Owned::PersistentVolumeClaim(_) => "PersistentVolumeClaim",
        }
    }

    /// Whether an owner reference of the object names `uid`.
    pub fn is_owned_by(&self, uid: &str) -> bool {
        self.meta()
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == uid)
    }

    fn meta(&self) -> &volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        match self {
            Owned::Service(o) => &o.metadata,
            Owned::ConfigMap(o) => &o.metadata,
            Owned::Secret(o) => &o.metadata,
            Owned::NetworkPolicy(o) => &o.metadata,
            Owned::PersistentVolumeClaim(o) => &o.metadata,
        }
    }

    /// The object's namespace and name.
    pub fn namespace_and_name(&self) -> (String, String) {
        let meta = self.meta();
        (
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        )
    }
}

/// One change to the cluster.
#[derive(Debug, Clone)]
pub enum Change {
    /// Create a pod; an existing pod of that name is left alone.
    CreatePod(Box<Pod>),
    /// Merge these annotations into a pod's (`None` removes the key).
    PatchPodAnnotations {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// Keys to set or remove.
        annotations: BTreeMap<String, Option<String>>,
    },
    /// Delete a pod.
    DeletePod {
        /// Namespace.
        namespace: String,
        /// Pod name.
        name: String,
    },
    /// Create a PodGroup; an existing one of that name is left alone.
    CreatePodGroup(Box<PodGroup>),
    /// Replace a PodGroup's spec (the job controller owns it; the scheduler owns the status).
    UpdatePodGroupSpec {
        /// Namespace.
        namespace: String,
        /// PodGroup name.
        name: String,
        /// The new spec.
        spec: Box<PodGroupSpec>,
    },
    /// Delete a PodGroup.
    DeletePodGroup {
        /// Namespace.
        namespace: String,
        /// PodGroup name.
        name: String,
    },
    /// Write a Job's status (the job controller is its only writer).
    UpdateJobStatus {
        /// Namespace.
        namespace: String,
        /// Job name.
        name: String,
        /// The new status.
        status: Box<JobStatus>,
    },
    /// Delete a Job (TTL after finishing).
    DeleteJob {
        /// Namespace.
        namespace: String,
        /// Job name.
        name: String,
    },
    /// Patch `status.state` of a queue, the only status field the queue controller writes.
    PatchQueueState {
        /// Queue name.
        name: String,
        /// The new state.
        state: String,
    },
    /// Patch `spec.parent` of a queue that has none.
    PatchQueueParent {
        /// Queue name.
        name: String,
        /// The parent queue.
        parent: String,
    },
    /// Merge these annotations into a queue's (`None` removes the key).
    PatchQueueAnnotations {
        /// Queue name.
        name: String,
        /// Keys to set or remove.
        annotations: BTreeMap<String, Option<String>>,
    },
    /// Delete a Command once it is consumed.
    DeleteCommand {
        /// Namespace.
        namespace: String,
        /// Command name.
        name: String,
    },
    /// Create an object on a job's behalf; an existing one of that name is left alone.
    Create(Box<Owned>),
    /// Replace an object created on a job's behalf (its data changed); creates it if missing.
    Update(Box<Owned>),
    /// Delete an object created on a job's behalf.
    Delete {
        /// Kind (`Service`, `ConfigMap`, ...).
        kind: &'static str,
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// Record an event.
    Event(Event),
    /// Create a Volcano Job (a CronJob's run); an existing one of that name is left alone.
    CreateJob(Box<Job>),
    /// Write a CronJob's status (the CronJob controller is its only writer).
    UpdateCronJobStatus {
        /// Namespace.
        namespace: String,
        /// CronJob name.
        name: String,
        /// The new status.
        status: Box<CronJobStatus>,
    },
    /// Write a JobFlow's status (the JobFlow controller is its only writer).
    UpdateJobFlowStatus {
        /// Namespace.
        namespace: String,
        /// JobFlow name.
        name: String,
        /// The new status.
        status: Box<JobFlowStatus>,
    },
    /// Write a JobTemplate's status (the JobTemplate controller is its only writer).
    UpdateJobTemplateStatus {
        /// Namespace.
        namespace: String,
        /// JobTemplate name.
        name: String,
        /// The new status.
        status: Box<JobTemplateStatus>,
    },
    /// Create a discovered HyperNode; an existing one of that name is left alone.
    CreateHyperNode(Box<HyperNode>),
    /// Replace a discovered HyperNode's spec and merge in its labels and annotations (the
    /// discovery source owns them; other labels stay).
    UpdateHyperNode(Box<HyperNode>),
    /// Delete a discovered HyperNode its source no longer describes.
    DeleteHyperNode {
        /// HyperNode name.
        name: String,
    },
    /// Patch `status.nodeCount` of a HyperNode, the only status field the HyperNode
    /// controller writes.
    UpdateHyperNodeStatus {
        /// HyperNode name.
        name: String,
        /// The nodes it holds, through its member HyperNodes too.
        node_count: i64,
    },
}

impl Change {
    /// The event reason that names this change's failure, in Kubernetes' words
    /// (`FailedCreate`, as the ReplicaSet and Volcano job controllers say of pods).
    pub fn failure_reason(&self) -> &'static str {
        match self {
            Change::CreatePod(_) | Change::CreatePodGroup(_) | Change::Create(_) => "FailedCreate",
            Change::DeletePod { .. }
            | Change::DeletePodGroup { .. }
            | Change::DeleteJob { .. }
            | Change::DeleteCommand { .. }
            | Change::Delete { .. } => "FailedDelete",
            Change::PatchPodAnnotations { .. }
            | Change::UpdatePodGroupSpec { .. }
            | Change::UpdateJobStatus { .. }
            | Change::PatchQueueState { .. }
            | Change::PatchQueueParent { .. }
            | Change::PatchQueueAnnotations { .. }
            | Change::Update(_) => "FailedUpdate",
            Change::Event(_) => "FailedRecord",
            Change::CreateJob(_) | Change::CreateHyperNode(_) => "FailedCreate",
            Change::DeleteHyperNode { .. } => "FailedDelete",
            Change::UpdateHyperNode(_) | Change::UpdateHyperNodeStatus { .. } => "FailedUpdate",
            Change::UpdateCronJobStatus { .. }
            | Change::UpdateJobFlowStatus { .. }
            | Change::UpdateJobTemplateStatus { .. } => "FailedUpdate",
        }
    }
}
