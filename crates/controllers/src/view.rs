//! A read-only view of the cluster's objects, as the controllers query it: borrowed from the
//! object store's indexes, so a controller turn costs its lookups, not a re-index.

use volcano_api::Objects;
use volcano_api::batch::Job;
use volcano_api::bus::Command;
use volcano_api::k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_api::{NamespacedName, ObjectStore};

pub use volcano_api::store::{owning_job, pod_group_queue};

/// The cluster as the controllers see it during one turn.
#[derive(Clone, Copy)]
pub struct ClusterView<'a> {
    store: &'a ObjectStore,
}

/// A pod's annotation, if set.
pub fn pod_annotation<'p>(pod: &'p Pod, key: &str) -> Option<&'p str> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

impl<'a> ClusterView<'a> {
    /// The view of `store`.
    pub fn new(store: &'a ObjectStore) -> Self {
        ClusterView { store }
    }

    /// The objects viewed.
    pub fn objects(&self) -> &'a Objects {
        self.store.objects()
    }

    /// A Job by namespace and name.
    pub fn job(&self, namespace: &str, name: &str) -> Option<&'a Job> {
        self.store.get(&NamespacedName::new(namespace, name))
    }

    /// A pod by namespace and name.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<&'a Pod> {
        self.store.get(&NamespacedName::new(namespace, name))
    }

    /// A ReplicaSet by namespace and name.
    pub fn replica_set(&self, namespace: &str, name: &str) -> Option<&'a ReplicaSet> {
        self.store.get(&NamespacedName::new(namespace, name))
    }

    /// A StatefulSet by namespace and name.
    pub fn stateful_set(&self, namespace: &str, name: &str) -> Option<&'a StatefulSet> {
        self.store.get(&NamespacedName::new(namespace, name))
    }

    /// The pods a Job owns.
    pub fn pods_of_job(&self, namespace: &str, job: &str) -> Vec<&'a Pod> {
        self.store.pods_of_job(namespace, job)
    }

    /// A PodGroup by namespace and name.
    pub fn pod_group(&self, namespace: &str, name: &str) -> Option<&'a PodGroup> {
        self.store.get(&NamespacedName::new(namespace, name))
    }

    /// The PodGroups in a queue.
    pub fn pod_groups_in_queue(&self, queue: &str) -> Vec<&'a PodGroup> {
        self.store.pod_groups_in_queue(queue)
    }

    /// A queue by name.
    pub fn queue(&self, name: &str) -> Option<&'a Queue> {
        self.store.get(&NamespacedName::cluster(name))
    }

    /// Every queue.
    pub fn queues(&self) -> &'a [Queue] {
        &self.objects().queues
    }

    /// Every Command.
    pub fn commands(&self) -> &'a [Command] {
        &self.objects().commands
    }
}
