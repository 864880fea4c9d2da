//! A read-only, indexed view of the cluster's objects, as the controllers query it.

/// The view is rebuilt for every controller turn, so its index hashes with foldhash rather
/// than SipHash: the keys are object names the cluster already holds, and the index is never
/// kept.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use volcano_api::Objects;
use volcano_api::batch::Job;
use volcano_api::bus::Command;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::keys;
use volcano_api::scheduling::{PodGroup, Queue};

/// `(namespace, name)`.
pub type NamespacedName = (String, String);

/// Indexes over a set of objects: jobs, pods by job, PodGroups by name and by queue, queues.
/// Hash maps, never iterated: lists keep the objects' order, and a view is rebuilt after every
/// change the controllers make, so building it must be cheap.
pub struct ClusterView<'a> {
    objects: &'a Objects,
    jobs: HashMap<(&'a str, &'a str), usize>,
    pods_by_job: HashMap<(&'a str, &'a str), Vec<usize>>,
    pods: HashMap<(&'a str, &'a str), usize>,
    pod_groups: HashMap<(&'a str, &'a str), usize>,
    pod_groups_by_queue: HashMap<&'a str, Vec<usize>>,
    queues: HashMap<&'a str, usize>,
}

fn ns_name(
    meta: &volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> (&str, &str) {
    (
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

/// The queue a PodGroup is in, with the default for an empty `spec.queue`.
pub fn pod_group_queue(pg: &PodGroup) -> &str {
    if pg.spec.queue.is_empty() {
        keys::DEFAULT_QUEUE
    } else {
        &pg.spec.queue
    }
}

/// A pod's annotation, if set.
pub fn pod_annotation<'p>(pod: &'p Pod, key: &str) -> Option<&'p str> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// The Volcano Job a pod was created for, if any: its controller owner reference of kind Job.
pub fn owning_job(pod: &Pod) -> Option<&str> {
    pod.metadata
        .owner_references
        .as_deref()?
        .iter()
        .find(|o| o.kind == "Job" && o.api_version.starts_with("batch.volcano.sh/"))
        .map(|o| o.name.as_str())
}

impl<'a> ClusterView<'a> {
    /// Indexes `objects`.
    pub fn new(objects: &'a Objects) -> Self {
        let mut view = ClusterView {
            objects,
            jobs: HashMap::with_capacity_and_hasher(objects.jobs.len(), Default::default()),
            pods_by_job: HashMap::with_capacity_and_hasher(objects.jobs.len(), Default::default()),
            pods: HashMap::with_capacity_and_hasher(objects.pods.len(), Default::default()),
            pod_groups: HashMap::with_capacity_and_hasher(
                objects.pod_groups.len(),
                Default::default(),
            ),
            pod_groups_by_queue: HashMap::with_capacity_and_hasher(
                objects.queues.len(),
                Default::default(),
            ),
            queues: HashMap::with_capacity_and_hasher(objects.queues.len(), Default::default()),
        };
        for (i, job) in objects.jobs.iter().enumerate() {
            view.jobs.insert(ns_name(&job.metadata), i);
        }
        for (i, pod) in objects.pods.iter().enumerate() {
            let (ns, name) = ns_name(&pod.metadata);
            view.pods.insert((ns, name), i);
            if let Some(job) = owning_job(pod) {
                view.pods_by_job.entry((ns, job)).or_default().push(i);
            }
        }
        for (i, pg) in objects.pod_groups.iter().enumerate() {
            view.pod_groups.insert(ns_name(&pg.metadata), i);
            view.pod_groups_by_queue
                .entry(pod_group_queue(pg))
                .or_default()
                .push(i);
        }
        for (i, q) in objects.queues.iter().enumerate() {
            view.queues
                .insert(q.metadata.name.as_deref().unwrap_or_default(), i);
        }
        view
    }

    /// The objects viewed.
    pub fn objects(&self) -> &'a Objects {
        self.objects
    }

    /// A Job by namespace and name.
    pub fn job(&self, namespace: &str, name: &str) -> Option<&'a Job> {
        self.jobs
            .get(&(namespace, name))
            .map(|&i| &self.objects.jobs[i])
    }

    /// A pod by namespace and name.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<&'a Pod> {
        self.pods
            .get(&(namespace, name))
            .map(|&i| &self.objects.pods[i])
    }

    /// The pods a Job owns.
    pub fn pods_of_job(&self, namespace: &str, job: &str) -> Vec<&'a Pod> {
        self.pods_by_job
            .get(&(namespace, job))
            .into_iter()
            .flatten()
            .map(|&i| &self.objects.pods[i])
            .collect()
    }

    /// A PodGroup by namespace and name.
    pub fn pod_group(&self, namespace: &str, name: &str) -> Option<&'a PodGroup> {
        self.pod_groups
            .get(&(namespace, name))
            .map(|&i| &self.objects.pod_groups[i])
    }

    /// The PodGroups in a queue.
    pub fn pod_groups_in_queue(&self, queue: &str) -> Vec<&'a PodGroup> {
        self.pod_groups_by_queue
            .get(queue)
            .into_iter()
            .flatten()
            .map(|&i| &self.objects.pod_groups[i])
            .collect()
    }

    /// A queue by name.
    pub fn queue(&self, name: &str) -> Option<&'a Queue> {
        self.queues.get(name).map(|&i| &self.objects.queues[i])
    }

    /// Every queue.
    pub fn queues(&self) -> &'a [Queue] {
        &self.objects.queues
    }

    /// Every Command.
    pub fn commands(&self) -> &'a [Command] {
        &self.objects.commands
    }
}
