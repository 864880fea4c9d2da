//! Scenario loading: Kubernetes objects from multi-document YAML files, checked as `kubectl
//! apply` and Volcano's admission webhooks would check them.
//!
//! Every error names the file, the document number (and line where known), the object's
//! kind/namespace/name and the field. Loading never panics, whatever the input.

// `LoadError` is the public error other crates match on and is built at most once per load,
// far from any hot path: boxing it would cost readers more than its size costs anyone.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};

use crate::batch::Job;
use crate::bus::Command;
use crate::cronjob::CronJob;
use crate::flow::{JobFlow, JobTemplate};
use crate::scheduling::{PodGroup, Queue};
use crate::topology::HyperNode;

mod cross;
mod decode;
mod documents;
mod flow;
mod load;
mod object;
mod site;
mod validate;
mod validate_cronjob;
mod warnings;

pub use load::{load_paths, load_str};
pub use warnings::queue_warnings;

/// Where an object came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The file, as given by the user.
    pub file: PathBuf,
    /// 1-based document number within the file.
    pub document: usize,
    /// 1-based line of the document's start, where known.
    pub line: Option<usize>,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: document {}", self.file.display(), self.document)?;
        if let Some(line) = self.line {
            write!(f, " (line {line})")?;
        }
        Ok(())
    }
}

/// Identity of an object: kind, namespace (empty for cluster-scoped kinds) and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// The object's kind (`Pod`, `PodGroup`, ...).
    pub kind: String,
    /// The namespace, empty for cluster-scoped objects.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// The objects of a scenario, each kind in the order the files list them.
#[derive(Debug, Clone, Default)]
pub struct Objects {
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Pods; namespace always set. Shared: a scheduler's cache holds the same pods.
    pub pods: Vec<Arc<Pod>>,
    /// PodGroups; namespace always set.
    pub pod_groups: Vec<PodGroup>,
    /// Queues (cluster-scoped).
    pub queues: Vec<Queue>,
    /// Volcano Jobs; namespace always set.
    pub jobs: Vec<Job>,
    /// Priority classes (cluster-scoped).
    pub priority_classes: Vec<PriorityClass>,
    /// Bus Commands; namespace always set.
    pub commands: Vec<Command>,
    /// Namespaces (cluster-scoped): their labels answer pod affinity's `namespaceSelector`.
    pub namespaces: Vec<Namespace>,
    /// PersistentVolumes (cluster-scoped).
    pub persistent_volumes: Vec<PersistentVolume>,
    /// PersistentVolumeClaims; namespace always set.
    pub persistent_volume_claims: Vec<PersistentVolumeClaim>,
    /// StorageClasses (cluster-scoped).
    pub storage_classes: Vec<StorageClass>,
    /// CSINodes (cluster-scoped): each node's CSI drivers and their attach limits.
    pub csi_nodes: Vec<CSINode>,
    /// ReplicaSets; namespace always set. Their annotations shape their pods' PodGroup.
    pub replica_sets: Vec<ReplicaSet>,
    /// StatefulSets; namespace always set. Their annotations shape their pods' PodGroup.
    pub stateful_sets: Vec<StatefulSet>,
    /// Deployments; namespace always set.
    pub deployments: Vec<Deployment>,
    /// Volcano CronJobs; namespace always set.
    pub cron_jobs: Vec<CronJob>,
    /// JobFlows; namespace always set.
    pub job_flows: Vec<JobFlow>,
    /// JobTemplates; namespace always set.
    pub job_templates: Vec<JobTemplate>,
    /// HyperNodes (cluster-scoped): the network domains over the nodes.
    pub hyper_nodes: Vec<HyperNode>,
}

/// The text of a `volcano-scheduler.conf` found in a ConfigMap, with where it came from.
#[derive(Debug, Clone)]
pub struct SchedulerConfText {
    /// The configuration text (YAML).
    pub text: String,
    /// Where it was found.
    pub source: Source,
}

/// A loaded, checked scenario.
#[derive(Debug, Clone, Default)]
pub struct Scenario {
    /// The objects.
    pub objects: Objects,
    /// The scheduler configuration, if a ConfigMap carried one.
    pub scheduler_conf: Option<SchedulerConfText>,
    /// Where each object came from.
    pub sources: BTreeMap<ObjectKey, Source>,
}

/// A scenario that cannot be loaded: what is wrong and exactly where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// File, document and line; `None` only for errors about a path as a whole.
    pub source: Option<Source>,
    /// The file when no document could be read at all (unreadable file, empty directory).
    pub path: Option<PathBuf>,
    /// `Kind ns/name` of the object, where known.
    pub object: Option<String>,
    /// Dotted path of the offending field (`spec.containers[0].resources.requests.cpu`).
    pub field: Option<String>,
    /// What is wrong, in words.
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.source, &self.path) {
            (Some(s), _) => write!(f, "{s}: ")?,
            (None, Some(p)) => write!(f, "{}: ", p.display())?,
            (None, None) => {}
        }
        if let Some(o) = &self.object {
            write!(f, "{o}: ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "field {field}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for LoadError {}

impl LoadError {
    /// An error about a whole path (unreadable file, directory with no YAML).
    pub fn for_path(path: &Path, message: impl Into<String>) -> Self {
        LoadError {
            source: None,
            path: Some(path.to_path_buf()),
            object: None,
            field: None,
            message: message.into(),
        }
    }
}
