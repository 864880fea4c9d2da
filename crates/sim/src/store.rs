//! The object store: what the API server holds, and the watch events its changes produce.

use std::collections::BTreeMap;

use volcano_api::batch::Job;
use volcano_api::bus::Command;
use volcano_api::cronjob::CronJob;
use volcano_api::flow::{JobFlow, JobTemplate};
use volcano_api::k8s_openapi::api::core::v1::{Pod, PodStatus};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::scheduling::{PodGroup, Queue, QueueStatus};
use volcano_api::store::Stored;
use volcano_api::topology::HyperNode;
use volcano_api::{NamespacedName, ObjectStore, Objects, WatchEvent};
use volcano_controllers::change::{Change, Owned};
use volcano_controllers::time::Instant;

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

/// The objects of the cluster: what the API server holds, indexed, journaling every change
/// for the scheduler's incremental snapshot.
#[derive(Debug, Clone, Default)]
pub struct Store {
    objects: ObjectStore,
    /// Objects created on jobs' behalf (Services, ConfigMaps, Secrets...), by kind/ns/name.
    pub owned: BTreeMap<(String, String, String), Owned>,
    /// Events recorded, in order.
    pub events: Vec<volcano_api::event::Event>,
    created: u64,
}

fn not_found_of<K: Stored>(key: &NamespacedName) -> ApplyError {
    not_found(K::KIND.as_str(), &key.namespace, &key.name)
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
        for cj in &mut objects.cron_jobs {
            let meta = &mut cj.metadata;
            if meta.uid.as_deref().unwrap_or_default().is_empty() {
                meta.uid = Some(derived_uid(&format!(
                    "CronJob/{}/{}",
                    meta.namespace.as_deref().unwrap_or_default(),
                    meta.name.as_deref().unwrap_or_default()
                )));
            }
            // A CronJob of time zero was created when the run began: its first start is the
            // first one after that.
            meta.creation_timestamp
                .get_or_insert_with(|| Instant::default().to_time());
        }
        Store {
            objects: ObjectStore::new(objects).journaling().keeping_order(),
            ..Default::default()
        }
    }

    /// The objects the scheduler and the controllers read.
    pub fn objects(&self) -> &Objects {
        self.objects.objects()
    }

    /// The indexed store, for a controller view.
    pub fn indexed(&self) -> &ObjectStore {
        &self.objects
    }

    /// The watch events since the last call, for the scheduler's incremental snapshot.
    pub fn take_journal(&mut self) -> Vec<WatchEvent> {
        self.objects.take_journal()
    }

    /// Takes the objects out.
    pub fn into_objects(self) -> Objects {
        self.objects.into_objects()
    }

    /// Changes an object in place, as a status or spec write would; the watch event.
    pub fn modify<K: Stored>(
        &mut self,
        key: &NamespacedName,
        change: impl FnOnce(&mut K),
    ) -> Result<WatchEvent, ApplyError> {
        self.objects
            .modify(key, change)
            .ok_or_else(|| not_found_of::<K>(key))
    }

    /// Deletes an object; the watch event.
    pub fn delete<K: Stored>(&mut self, key: &NamespacedName) -> Result<WatchEvent, ApplyError> {
        self.objects
            .delete::<K>(key)
            .ok_or_else(|| not_found_of::<K>(key))
    }

    /// Replaces an object (a node's state, as its kubelet or a disruption sets it); the watch
    /// event.
    pub fn upsert<K: Stored>(&mut self, obj: K) -> WatchEvent {
        self.objects.upsert(obj)
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
        self.objects.get(&NamespacedName::new(namespace, name))
    }

    /// A pod by namespace and name.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<&Pod> {
        self.objects.get(&NamespacedName::new(namespace, name))
    }

    /// Applies one change as the API server would, returning the watch events it causes.
    /// Creating something that exists is not an error and changes nothing, as controllers
    /// treat AlreadyExists.
    pub fn apply(&mut self, change: &Change, now: Instant) -> Result<Vec<WatchEvent>, ApplyError> {
        let key = NamespacedName::new;
        Ok(match change {
            Change::CreatePod(pod) => {
                if self
                    .objects
                    .contains::<Pod>(&NamespacedName::of(&pod.metadata))
                {
                    return Ok(Vec::new());
                }
                let mut pod = (**pod).clone();
                self.new_meta("Pod", &mut pod.metadata, now);
                let status = pod.status.get_or_insert_with(PodStatus::default);
                if status.phase.is_none() {
                    status.phase = Some("Pending".to_string());
                }
                vec![self.objects.upsert(pod)]
            }
            Change::PatchPodAnnotations {
                namespace,
                name,
                annotations,
            } => vec![self.modify::<Pod>(&key(namespace, name), |pod| {
                merge_annotations(&mut pod.metadata, annotations)
            })?],
            Change::DeletePod { namespace, name } => {
                vec![self.delete::<Pod>(&key(namespace, name))?]
            }
            Change::CreatePodGroup(pg) => {
                if self
                    .objects
                    .contains::<PodGroup>(&NamespacedName::of(&pg.metadata))
                {
                    return Ok(Vec::new());
                }
                let mut pg = (**pg).clone();
                self.new_meta("PodGroup", &mut pg.metadata, now);
                vec![self.objects.upsert(pg)]
            }
            Change::UpdatePodGroupSpec {
                namespace,
                name,
                spec,
            } => vec![
                self.modify::<PodGroup>(&key(namespace, name), |pg| pg.spec = (**spec).clone())?,
            ],
            Change::DeletePodGroup { namespace, name } => {
                vec![self.delete::<PodGroup>(&key(namespace, name))?]
            }
            Change::UpdateJobStatus {
                namespace,
                name,
                status,
            } => vec![self.modify::<Job>(&key(namespace, name), |job| {
                job.status = Some((**status).clone())
            })?],
            Change::DeleteJob { namespace, name } => {
                let old = self.delete::<Job>(&key(namespace, name))?;
                let uid = match &old {
                    WatchEvent::Job(Some(job), _) => job.metadata.uid.clone().unwrap_or_default(),
                    _ => String::new(),
                };
                let mut watched = self.collect_garbage(&uid);
                watched.push(old);
                watched
            }
            Change::PatchQueueState { name, state } => {
                vec![
                    self.modify::<Queue>(&NamespacedName::cluster(name.as_str()), |q| {
                        q.status.get_or_insert_with(QueueStatus::default).state = state.clone()
                    })?,
                ]
            }
            Change::PatchQueueParent { name, parent } => {
                vec![
                    self.modify::<Queue>(&NamespacedName::cluster(name.as_str()), |q| {
                        q.spec.parent = parent.clone()
                    })?,
                ]
            }
            Change::PatchQueueAnnotations { name, annotations } => {
                vec![
                    self.modify::<Queue>(&NamespacedName::cluster(name.as_str()), |q| {
                        merge_annotations(&mut q.metadata, annotations)
                    })?,
                ]
            }
            Change::DeleteCommand { namespace, name } => {
                // Nobody follows a Command's deletion: consumed is consumed.
                self.delete::<Command>(&key(namespace, name))?;
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
            Change::CreateJob(job) => {
                if self
                    .objects
                    .contains::<Job>(&NamespacedName::of(&job.metadata))
                {
                    return Ok(Vec::new());
                }
                // The API server's admission defaults it, as it does every Job.
                let mut job = (**job).clone();
                volcano_controllers::admission::default_job(&mut job);
                vec![self.create_job(job, now)]
            }
            Change::UpdateCronJobStatus {
                namespace,
                name,
                status,
            } => vec![self.modify::<CronJob>(&key(namespace, name), |cj| {
                cj.status = Some((**status).clone())
            })?],
            Change::UpdateJobFlowStatus {
                namespace,
                name,
                status,
            } => vec![self.modify::<JobFlow>(&key(namespace, name), |f| {
                f.status = Some((**status).clone())
            })?],
            Change::UpdateJobTemplateStatus {
                namespace,
                name,
                status,
            } => vec![self.modify::<JobTemplate>(&key(namespace, name), |t| {
                t.status = Some((**status).clone())
            })?],
            Change::CreateHyperNode(hn) => {
                if self
                    .objects
                    .contains::<HyperNode>(&NamespacedName::of(&hn.metadata))
                {
                    return Ok(Vec::new());
                }
                let mut hn = (**hn).clone();
                self.new_meta("HyperNode", &mut hn.metadata, now);
                vec![self.objects.upsert(hn)]
            }
            Change::UpdateHyperNode(hn) => {
                let name = hn.metadata.name.clone().unwrap_or_default();
                vec![
                    self.modify::<HyperNode>(&NamespacedName::cluster(name.as_str()), |h| {
                        h.spec = hn.spec.clone();
                        for (field, set) in [
                            (&mut h.metadata.labels, &hn.metadata.labels),
                            (&mut h.metadata.annotations, &hn.metadata.annotations),
                        ] {
                            if let Some(set) = set {
                                field
                                    .get_or_insert_with(Default::default)
                                    .extend(set.clone());
                            }
                        }
                    })?,
                ]
            }
            Change::DeleteHyperNode { name } => {
                vec![self.delete::<HyperNode>(&NamespacedName::cluster(name.as_str()))?]
            }
            Change::UpdateHyperNodeStatus { name, node_count } => vec![
                self.modify::<HyperNode>(&NamespacedName::cluster(name.as_str()), |h| {
                    h.status.get_or_insert_with(Default::default).node_count = *node_count
                })?,
            ],
        })
    }

    /// Deletes what the object with `owner_uid` owns, as Kubernetes' garbage collector does
    /// after a foreground deletion.
    fn collect_garbage(&mut self, owner_uid: &str) -> Vec<WatchEvent> {
        if owner_uid.is_empty() {
            return Vec::new();
        }
        let owned_by = |meta: &ObjectMeta| {
            meta.owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == owner_uid)
        };
        let mut watched = self.objects.delete_where::<Pod>(|p| owned_by(&p.metadata));
        watched.extend(
            self.objects
                .delete_where::<PodGroup>(|p| owned_by(&p.metadata)),
        );
        self.owned.retain(|_, o| !o.is_owned_by(owner_uid));
        watched
    }

    /// Adds a Job, as `kubectl apply` would create it (admission is the caller's business).
    pub fn create_job(&mut self, mut job: Job, now: Instant) -> WatchEvent {
        self.new_meta("Job", &mut job.metadata, now);
        self.objects.upsert(job)
    }

    /// Adds a queue, as `kubectl apply` would create it; an existing queue of that name is
    /// left alone.
    pub fn create_queue(&mut self, mut queue: Queue, now: Instant) -> Option<WatchEvent> {
        if self.objects.contains::<Queue>(&queue.key()) {
            return None;
        }
        self.new_meta("Queue", &mut queue.metadata, now);
        Some(self.objects.upsert(queue))
    }

    /// Replaces a queue's spec, as `kubectl apply` would.
    pub fn update_queue_spec(
        &mut self,
        name: &str,
        spec: volcano_api::scheduling::QueueSpec,
    ) -> Result<WatchEvent, ApplyError> {
        self.modify::<Queue>(&NamespacedName::cluster(name), |q| q.spec = spec)
    }

    /// Adds a Command, as `vcctl` would create it.
    pub fn create_command(&mut self, mut cmd: Command, now: Instant) -> WatchEvent {
        self.new_meta("Command", &mut cmd.metadata, now);
        self.objects.upsert(cmd)
    }

    /// Creates a JobFlow submitted during the run.
    pub fn create_job_flow(&mut self, mut flow: JobFlow, now: Instant) -> WatchEvent {
        self.new_meta("JobFlow", &mut flow.metadata, now);
        self.objects.upsert(flow)
    }

    /// Creates a JobTemplate submitted during the run.
    pub fn create_job_template(&mut self, mut template: JobTemplate, now: Instant) -> WatchEvent {
        self.new_meta("JobTemplate", &mut template.metadata, now);
        self.objects.upsert(template)
    }

    /// Replaces a pod's status, as its kubelet would report it.
    pub fn set_pod_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: PodStatus,
    ) -> Result<WatchEvent, ApplyError> {
        self.modify::<Pod>(&NamespacedName::new(namespace, name), |pod| {
            pod.status = Some(status)
        })
    }
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
