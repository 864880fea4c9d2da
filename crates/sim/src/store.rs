//! The object store: what the API server holds, and the watch events its changes produce.

use std::collections::BTreeMap;

use volcano_api::Objects;
use volcano_api::batch::Job;
use volcano_api::bus::Command;
use volcano_api::k8s_openapi::api::core::v1::{Pod, PodStatus};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::scheduling::{PodGroup, Queue, QueueStatus};
use volcano_controllers::change::{Change, Owned};
use volcano_controllers::manager::Watch;
use volcano_controllers::time::Instant;

/// A watch event with the objects owned, to feed to the controllers after the store changed.
#[derive(Debug, Clone)]
pub enum Watched {
    /// A Job changed.
    Job(Option<Box<Job>>, Option<Box<Job>>),
    /// A pod changed.
    Pod(Option<Box<Pod>>, Option<Box<Pod>>),
    /// A PodGroup changed.
    PodGroup(Option<Box<PodGroup>>, Option<Box<PodGroup>>),
    /// A queue changed.
    Queue(Option<Box<Queue>>, Option<Box<Queue>>),
    /// A Command was created.
    Command(Box<Command>),
}

impl Watched {
    /// As the controllers take it.
    pub fn as_watch(&self) -> Watch<'_> {
        match self {
            Watched::Job(o, n) => Watch::Job {
                old: o.as_deref(),
                new: n.as_deref(),
            },
            Watched::Pod(o, n) => Watch::Pod {
                old: o.as_deref(),
                new: n.as_deref(),
            },
            Watched::PodGroup(o, n) => Watch::PodGroup {
                old: o.as_deref(),
                new: n.as_deref(),
            },
            Watched::Queue(o, n) => Watch::Queue {
                old: o.as_deref(),
                new: n.as_deref(),
            },
            Watched::Command(c) => Watch::Command(c),
        }
    }
}

/// A change the store refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// The object to change does not exist.
    #[error("{kind} {namespace}/{name} not found")]
    NotFound {
        /// Kind.
        kind: &'static str,
        /// Namespace (empty for cluster-scoped kinds).
        namespace: String,
        /// Name.
        name: String,
    },
}

fn not_found(kind: &'static str, namespace: &str, name: &str) -> ApplyError {
    ApplyError::NotFound {
        kind,
        namespace: namespace.to_string(),
        name: name.to_string(),
    }
}

/// The objects of the cluster.
#[derive(Debug, Clone, Default)]
pub struct Store {
    /// The objects the scheduler and controllers read.
    pub objects: Objects,
    /// Objects created on jobs' behalf (Services, ConfigMaps, Secrets...), by kind/ns/name.
    pub owned: BTreeMap<(String, String, String), Owned>,
    /// Events recorded, in order.
    pub events: Vec<volcano_api::event::Event>,
    created: u64,
}

fn is(meta: &ObjectMeta, namespace: &str, name: &str) -> bool {
    meta.namespace.as_deref().unwrap_or_default() == namespace
        && meta.name.as_deref().unwrap_or_default() == name
}

/// A UUID-shaped uid derived from what is being created, so runs are reproducible.
fn derived_uid(seed: &str) -> String {
    // FNV-1a, twice with different offsets, gives 128 well-mixed bits without a dependency.
    let fnv = |offset: u64| {
        seed.bytes().fold(offset, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    let (a, b) = (fnv(0xcbf2_9ce4_8422_2325), fnv(0x6c62_272e_07bb_0142));
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        (b >> 48) & 0xfff,
        b & 0xffff_ffff_ffff
    )
}

impl Store {
    /// A store holding `objects`. Jobs without a uid get one, as the API server would have
    /// given them, since the names of what their controller creates carry it. Other objects
    /// are kept as written: the scheduler's tie-breaks read uids and creation times, and a
    /// scenario that leaves them out means "no preference".
    pub fn new(mut objects: Objects) -> Self {
        for job in &mut objects.jobs {
            let meta = &mut job.metadata;
            if meta.uid.as_deref().unwrap_or_default().is_empty() {
                meta.uid = Some(derived_uid(&format!(
                    "Job/{}/{}",
                    meta.namespace.as_deref().unwrap_or_default(),
                    meta.name.as_deref().unwrap_or_default()
                )));
            }
        }
        Store {
            objects,
            ..Default::default()
        }
    }

    fn new_meta(&mut self, kind: &str, meta: &mut ObjectMeta, now: Instant) {
        self.created += 1;
        meta.uid = Some(derived_uid(&format!(
            "{kind}/{}/{}/{}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
            self.created
        )));
        meta.creation_timestamp = Some(now.to_time());
        meta.resource_version = Some(self.created.to_string());
    }

    /// A Job by namespace and name.
    pub fn job(&self, namespace: &str, name: &str) -> Option<&Job> {
        self.objects
            .jobs
            .iter()
            .find(|j| is(&j.metadata, namespace, name))
    }

    /// A pod by namespace and name.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<&Pod> {
        self.objects
            .pods
            .iter()
            .find(|p| is(&p.metadata, namespace, name))
    }

    /// Applies one change as the API server would, returning the watch events it causes.
    /// Creating something that exists is not an error and changes nothing, as controllers
    /// treat AlreadyExists.
    pub fn apply(&mut self, change: &Change, now: Instant) -> Result<Vec<Watched>, ApplyError> {
        let objs = &mut self.objects;
        Ok(match change {
            Change::CreatePod(pod) => {
                let (ns, name) = ns_name(&pod.metadata);
                if objs.pods.iter().any(|p| is(&p.metadata, &ns, &name)) {
                    return Ok(Vec::new());
                }
                let mut pod = (**pod).clone();
                self.new_meta("Pod", &mut pod.metadata, now);
                let status = pod.status.get_or_insert_with(PodStatus::default);
                if status.phase.is_none() {
                    status.phase = Some("Pending".to_string());
                }
                self.objects.pods.push(pod.clone());
                vec![Watched::Pod(None, Some(Box::new(pod)))]
            }
            Change::PatchPodAnnotations {
                namespace,
                name,
                annotations,
            } => {
                let pod = objs
                    .pods
                    .iter_mut()
                    .find(|p| is(&p.metadata, namespace, name))
                    .ok_or_else(|| not_found("Pod", namespace, name))?;
                let old = pod.clone();
                merge_annotations(&mut pod.metadata, annotations);
                vec![Watched::Pod(
                    Some(Box::new(old)),
                    Some(Box::new(pod.clone())),
                )]
            }
            Change::DeletePod { namespace, name } => {
                let i = objs
                    .pods
                    .iter()
                    .position(|p| is(&p.metadata, namespace, name))
                    .ok_or_else(|| not_found("Pod", namespace, name))?;
                let old = objs.pods.remove(i);
                vec![Watched::Pod(Some(Box::new(old)), None)]
            }
            Change::CreatePodGroup(pg) => {
                let (ns, name) = ns_name(&pg.metadata);
                if objs.pod_groups.iter().any(|p| is(&p.metadata, &ns, &name)) {
                    return Ok(Vec::new());
                }
                let mut pg = (**pg).clone();
                self.new_meta("PodGroup", &mut pg.metadata, now);
                self.objects.pod_groups.push(pg.clone());
                vec![Watched::PodGroup(None, Some(Box::new(pg)))]
            }
            Change::UpdatePodGroupSpec {
                namespace,
                name,
                spec,
            } => {
                let pg = objs
                    .pod_groups
                    .iter_mut()
                    .find(|p| is(&p.metadata, namespace, name))
                    .ok_or_else(|| not_found("PodGroup", namespace, name))?;
                let old = pg.clone();
                pg.spec = (**spec).clone();
                vec![Watched::PodGroup(
                    Some(Box::new(old)),
                    Some(Box::new(pg.clone())),
                )]
            }
            Change::DeletePodGroup { namespace, name } => {
                let i = objs
                    .pod_groups
                    .iter()
                    .position(|p| is(&p.metadata, namespace, name))
                    .ok_or_else(|| not_found("PodGroup", namespace, name))?;
                let old = objs.pod_groups.remove(i);
                vec![Watched::PodGroup(Some(Box::new(old)), None)]
            }
            Change::UpdateJobStatus {
                namespace,
                name,
                status,
            } => {
                let job = objs
                    .jobs
                    .iter_mut()
                    .find(|j| is(&j.metadata, namespace, name))
                    .ok_or_else(|| not_found("Job", namespace, name))?;
                let old = job.clone();
                job.status = Some((**status).clone());
                vec![Watched::Job(
                    Some(Box::new(old)),
                    Some(Box::new(job.clone())),
                )]
            }
            Change::DeleteJob { namespace, name } => {
                let i = objs
                    .jobs
                    .iter()
                    .position(|j| is(&j.metadata, namespace, name))
                    .ok_or_else(|| not_found("Job", namespace, name))?;
                let old = objs.jobs.remove(i);
                let mut watched =
                    self.collect_garbage(old.metadata.uid.as_deref().unwrap_or_default());
                watched.push(Watched::Job(Some(Box::new(old)), None));
                watched
            }
            Change::PatchQueueState { name, state } => {
                let q = find_queue(objs, name)?;
                let old = q.clone();
                q.status.get_or_insert_with(QueueStatus::default).state = state.clone();
                vec![Watched::Queue(
                    Some(Box::new(old)),
                    Some(Box::new(q.clone())),
                )]
            }
            Change::PatchQueueParent { name, parent } => {
                let q = find_queue(objs, name)?;
                let old = q.clone();
                q.spec.parent = parent.clone();
                vec![Watched::Queue(
                    Some(Box::new(old)),
                    Some(Box::new(q.clone())),
                )]
            }
            Change::PatchQueueAnnotations { name, annotations } => {
                let q = find_queue(objs, name)?;
                let old = q.clone();
                merge_annotations(&mut q.metadata, annotations);
                vec![Watched::Queue(
                    Some(Box::new(old)),
                    Some(Box::new(q.clone())),
                )]
            }
            Change::DeleteCommand { namespace, name } => {
                let i = objs
                    .commands
                    .iter()
                    .position(|c| is(&c.metadata, namespace, name))
                    .ok_or_else(|| not_found("Command", namespace, name))?;
                objs.commands.remove(i);
                Vec::new()
            }
            Change::Create(owned) => {
                let (ns, name) = owned.namespace_and_name();
                self.owned
                    .entry((owned.kind().to_string(), ns, name))
                    .or_insert_with(|| (**owned).clone());
                Vec::new()
            }
            Change::Update(owned) => {
                let (ns, name) = owned.namespace_and_name();
                self.owned
                    .insert((owned.kind().to_string(), ns, name), (**owned).clone());
                Vec::new()
            }
            Change::Delete {
                kind,
                namespace,
                name,
            } => {
                self.owned
                    .remove(&(kind.to_string(), namespace.clone(), name.clone()));
                Vec::new()
            }
            Change::Event(e) => {
                self.events.push(e.clone());
                Vec::new()
            }
        })
    }

    /// Deletes what the object with `owner_uid` owns, as Kubernetes' garbage collector does
    /// after a foreground deletion.
    fn collect_garbage(&mut self, owner_uid: &str) -> Vec<Watched> {
        if owner_uid.is_empty() {
            return Vec::new();
        }
        let owned_by = |meta: &ObjectMeta| {
            meta.owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == owner_uid)
        };
        let mut watched = Vec::new();
        let (gone, kept): (Vec<Pod>, Vec<Pod>) = std::mem::take(&mut self.objects.pods)
            .into_iter()
            .partition(|p| owned_by(&p.metadata));
        self.objects.pods = kept;
        watched.extend(
            gone.into_iter()
                .map(|p| Watched::Pod(Some(Box::new(p)), None)),
        );
        let (gone, kept): (Vec<PodGroup>, Vec<PodGroup>) =
            std::mem::take(&mut self.objects.pod_groups)
                .into_iter()
                .partition(|p| owned_by(&p.metadata));
        self.objects.pod_groups = kept;
        watched.extend(
            gone.into_iter()
                .map(|p| Watched::PodGroup(Some(Box::new(p)), None)),
        );
        self.owned.retain(|_, o| !o.is_owned_by(owner_uid));
        watched
    }

    /// Adds a Job, as `kubectl apply` would create it (admission is the caller's business).
    pub fn create_job(&mut self, mut job: Job, now: Instant) -> Watched {
        self.new_meta("Job", &mut job.metadata, now);
        self.objects.jobs.push(job.clone());
        Watched::Job(None, Some(Box::new(job)))
    }

    /// Adds a queue, as `kubectl apply` would create it; an existing queue of that name is
    /// left alone.
    pub fn create_queue(&mut self, mut queue: Queue, now: Instant) -> Option<Watched> {
        let name = queue.metadata.name.clone().unwrap_or_default();
        if find_queue(&mut self.objects, &name).is_ok() {
            return None;
        }
        self.new_meta("Queue", &mut queue.metadata, now);
        self.objects.queues.push(queue.clone());
        Some(Watched::Queue(None, Some(Box::new(queue))))
    }

    /// Replaces a queue's spec, as `kubectl apply` would.
    pub fn update_queue_spec(
        &mut self,
        name: &str,
        spec: volcano_api::scheduling::QueueSpec,
    ) -> Result<Watched, ApplyError> {
        let queue = self
            .objects
            .queues
            .iter_mut()
            .find(|q| q.metadata.name.as_deref() == Some(name))
            .ok_or_else(|| not_found("Queue", "", name))?;
        let old = queue.clone();
        queue.spec = spec;
        Ok(Watched::Queue(
            Some(Box::new(old)),
            Some(Box::new(queue.clone())),
        ))
    }

    /// Adds a Command, as `vcctl` would create it.
    pub fn create_command(&mut self, mut cmd: Command, now: Instant) -> Watched {
        self.new_meta("Command", &mut cmd.metadata, now);
        self.objects.commands.push(cmd.clone());
        Watched::Command(Box::new(cmd))
    }

    /// Replaces a pod's status, as its kubelet would report it.
    pub fn set_pod_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: PodStatus,
    ) -> Result<Watched, ApplyError> {
        let pod = self
            .objects
            .pods
            .iter_mut()
            .find(|p| is(&p.metadata, namespace, name))
            .ok_or_else(|| not_found("Pod", namespace, name))?;
        let old = pod.clone();
        pod.status = Some(status);
        Ok(Watched::Pod(
            Some(Box::new(old)),
            Some(Box::new(pod.clone())),
        ))
    }
}

fn ns_name(meta: &ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

fn find_queue<'o>(objs: &'o mut Objects, name: &str) -> Result<&'o mut Queue, ApplyError> {
    objs.queues
        .iter_mut()
        .find(|q| q.metadata.name.as_deref() == Some(name))
        .ok_or_else(|| not_found("Queue", "", name))
}

fn merge_annotations(meta: &mut ObjectMeta, patch: &BTreeMap<String, Option<String>>) {
    let annotations = meta.annotations.get_or_insert_with(BTreeMap::new);
    for (k, v) in patch {
        match v {
            Some(v) => {
                annotations.insert(k.clone(), v.clone());
            }
            None => {
                annotations.remove(k);
            }
        }
    }
}
