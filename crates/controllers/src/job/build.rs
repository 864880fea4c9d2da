//! What a Job turns into: its PodGroup and its pods, named and labelled as Volcano's job
//! controller names and labels them, so tools written for Volcano find them.

use std::collections::BTreeMap;

use volcano_api::batch::{Job, TaskSpec};
use volcano_api::k8s_openapi::api::core::v1::{
    PersistentVolumeClaimVolumeSource, Pod, PodSpec, Volume, VolumeMount,
};
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, ObjectMeta, OwnerReference,
};
use volcano_api::keys;
use volcano_api::resources::{format_amount, pod_requests};
use volcano_api::scheduling::{PodGroup, PodGroupSpec, ResourceList, SubGroupPolicySpec};

/// Name of a job's pod: `<job>-<task>-<index>`.
pub fn pod_name(job: &str, task: &str, index: i32) -> String {
    format!("{job}-{task}-{index}")
}

/// Name of a job's PodGroup: `<job>-<job uid>` (plain `<job>` for a job with no uid yet).
pub fn pod_group_name(job: &Job) -> String {
    let name = job.metadata.name.as_deref().unwrap_or_default();
    match job.metadata.uid.as_deref() {
        Some(uid) if !uid.is_empty() => format!("{name}-{uid}"),
        _ => name.to_string(),
    }
}

/// The owner reference that makes the Job the controller of what it creates.
///
/// Unlike Volcano's, it does not set `blockOwnerDeletion`. Where the
/// OwnerReferencesPermissionEnforcement admission plugin is on, an API server checks that flag
/// against the Job kind's REST mapping, which it lacks for a while after it starts (up to half a
/// minute): every pod and PodGroup of every Job was refused with "cannot find RESTMapping" after
/// each API server restart. Without the flag the garbage collector still deletes what a Job
/// owns; only a foreground deletion of the Job no longer waits for its pods.
pub fn controller_ref(job: &Job) -> OwnerReference {
    OwnerReference {
        api_version: "batch.volcano.sh/v1alpha1".into(),
        kind: "Job".into(),
        name: job.metadata.name.clone().unwrap_or_default(),
        uid: job.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

/// The queue a job runs in (`default` when unset).
pub fn job_queue(job: &Job) -> &str {
    if job.spec.queue.is_empty() {
        keys::DEFAULT_QUEUE
    } else {
        &job.spec.queue
    }
}

/// A task's gang minimum: its `minAvailable`, else its fewest partitions' pods, else its
/// replicas.
pub fn task_min_member(task: &TaskSpec) -> i32 {
    if let Some(m) = task.min_available {
        return m;
    }
    match &task.partition_policy {
        Some(p) if p.min_partitions != 0 && p.partition_size != 0 => {
            p.min_partitions.saturating_mul(p.partition_size)
        }
        _ => task.replicas,
    }
}

/// The PodGroup spec a job asks for.
pub fn pod_group_spec(job: &Job, priority_of: &dyn Fn(&str) -> Option<i32>) -> PodGroupSpec {
    PodGroupSpec {
        min_member: job.spec.min_available.unwrap_or(0),
        min_task_member: job
            .spec
            .tasks
            .iter()
            .map(|t| (t.name.clone(), task_min_member(t)))
            .collect(),
        queue: job_queue(job).to_string(),
        priority_class_name: job.spec.priority_class_name.clone(),
        min_resources: Some(min_resources(job, priority_of)),
        network_topology: job.spec.network_topology.clone(),
        sub_group_policy: sub_group_policy(job),
    }
}

/// One sub-group policy per task with a partition policy, as Volcano's job controller writes
/// them: the task's pods, split by their partition label.
fn sub_group_policy(job: &Job) -> Option<Vec<SubGroupPolicySpec>> {
    let policies: Vec<SubGroupPolicySpec> = job
        .spec
        .tasks
        .iter()
        .filter_map(|t| {
            let p = t.partition_policy.as_ref()?;
            Some(SubGroupPolicySpec {
                name: t.name.clone(),
                sub_group_size: Some(p.partition_size),
                min_sub_groups: Some(p.min_partitions),
                label_selector: Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([(
                        keys::TASK_SPEC.to_string(),
                        t.name.clone(),
                    )])),
                    ..LabelSelector::default()
                }),
                match_label_keys: vec![keys::PARTITION_ID.to_string()],
                network_topology: p.network_topology.clone(),
            })
        })
        .collect();
    (!policies.is_empty()).then_some(policies)
}

/// A new PodGroup for a job.
pub fn pod_group(job: &Job, priority_of: &dyn Fn(&str) -> Option<i32>) -> PodGroup {
    let mut pg = PodGroup::new(&pod_group_name(job), pod_group_spec(job, priority_of));
    pg.metadata.namespace = job.metadata.namespace.clone();
    pg.metadata.annotations = job.metadata.annotations.clone();
    pg.metadata.labels = job.metadata.labels.clone();
    pg.metadata.owner_references = Some(vec![controller_ref(job)]);
    pg
}

/// Resources the gang needs to start, as Volcano computes them: tasks ordered by their
/// template's priority (highest first); when the job's minimum is below the tasks' minimums,
/// the first `minAvailable` pods in that order; otherwise each task's minimum, topped up to the
/// job's minimum from the remaining replicas in the same order.
pub fn min_resources(job: &Job, priority_of: &dyn Fn(&str) -> Option<i32>) -> ResourceList {
    let mut tasks: Vec<(i32, &TaskSpec)> = job
        .spec
        .tasks
        .iter()
        .map(|t| {
            let class = t
                .template
                .spec
                .as_ref()
                .and_then(|s| s.priority_class_name.as_deref())
                .unwrap_or_default();
            (priority_of(class).unwrap_or(0), t)
        })
        .collect();
    // A stable sort keeps the spec's order among tasks of equal priority.
    tasks.sort_by_key(|t| std::cmp::Reverse(t.0));
    let job_min = job.spec.min_available.unwrap_or(0);
    let task_mins: i32 = job.spec.tasks.iter().map(task_min_member).sum();
    let mut total: BTreeMap<String, i64> = BTreeMap::new();
    let mut add = |task: &TaskSpec, count: i32| {
        if count <= 0 {
            return;
        }
        let empty = PodSpec::default();
        let spec = task.template.spec.as_ref().unwrap_or(&empty);
        // Quantities were checked on admission; one that still fails adds nothing.
        for (name, v) in pod_requests(spec).unwrap_or_default() {
            let e = total.entry(name).or_default();
            *e = e.saturating_add(v.saturating_mul(i64::from(count)));
        }
    };
    if job_min < task_mins {
        let mut left = job_min;
        for (_, t) in &tasks {
            let n = left.min(t.replicas);
            add(t, n);
            left -= n;
            if left <= 0 {
                break;
            }
        }
    } else {
        let mut placed = 0;
        for (_, t) in &tasks {
            let n = task_min_member(t).min(job_min - placed);
            add(t, n);
            placed += n;
        }
        let mut left = job_min - placed;
        for (_, t) in &tasks {
            if left <= 0 {
                break;
            }
            let n = (t.replicas - task_min_member(t)).min(left).max(0);
            add(t, n);
            left -= n;
        }
    }
    total
        .into_iter()
        .map(|(name, v)| {
            let q = Quantity(format_amount(&name, v));
            (name, q)
        })
        .collect()
}

/// A new pod for replica `index` of `task`, before plugins adjust it.
pub fn pod(job: &Job, task: &TaskSpec, index: i32) -> Pod {
    let job_name = job.metadata.name.as_deref().unwrap_or_default();
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    let template = &task.template;
    let mut spec = template.spec.clone().unwrap_or_default();
    if spec
        .scheduler_name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        let name = if job.spec.scheduler_name.is_empty() {
            keys::DEFAULT_SCHEDULER_NAME
        } else {
            &job.spec.scheduler_name
        };
        spec.scheduler_name = Some(name.to_string());
    }
    if spec
        .priority_class_name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
        && !job.spec.priority_class_name.is_empty()
    {
        spec.priority_class_name = Some(job.spec.priority_class_name.clone());
    }
    mount_volumes(job, &mut spec);

    let meta = template.metadata.clone().unwrap_or_default();
    let mut annotations = meta.annotations.unwrap_or_default();
    let mut labels = meta.labels.unwrap_or_default();
    let index_text = index.to_string();
    let status = job.status.clone().unwrap_or_default();
    let queue = job_queue(job).to_string();
    for (k, v) in [
        (keys::TASK_INDEX, index_text.clone()),
        (keys::TASK_SPEC, task.name.clone()),
        (keys::GROUP_NAME, pod_group_name(job)),
        (keys::JOB_NAME, job_name.to_string()),
        (keys::QUEUE_NAME, queue.clone()),
        (keys::JOB_VERSION, status.version.to_string()),
        (keys::TEMPLATE_UID, format!("{job_name}-{}", task.name)),
        (keys::JOB_RETRY_COUNT, status.retry_count.to_string()),
    ] {
        annotations.insert(k.to_string(), v);
    }
    let job_annotations = job.metadata.annotations.clone().unwrap_or_default();
    for k in [keys::PREEMPTABLE, keys::COOLDOWN_TIME, keys::REVOCABLE_ZONE] {
        if let Some(v) = job_annotations.get(k) {
            annotations.insert(k.to_string(), v.clone());
        }
    }
    // Only one disruption-budget form is copied: the minimum wins over the maximum.
    if let Some(v) = job_annotations.get(keys::JDB_MIN_AVAILABLE) {
        annotations.insert(keys::JDB_MIN_AVAILABLE.to_string(), v.clone());
    } else if let Some(v) = job_annotations.get(keys::JDB_MAX_UNAVAILABLE) {
        annotations.insert(keys::JDB_MAX_UNAVAILABLE.to_string(), v.clone());
    }
    for (k, v) in [
        (keys::TASK_INDEX, index_text),
        (keys::JOB_NAME, job_name.to_string()),
        (keys::TASK_SPEC, task.name.clone()),
        (keys::JOB_NAMESPACE, namespace.clone()),
        (keys::QUEUE_NAME, queue),
    ] {
        labels.insert(k.to_string(), v);
    }
    if let Some(p) = &task.partition_policy {
        // A partition size below 1 puts every pod in partition 0, as Volcano does.
        let partition = if p.partition_size > 0 {
            index / p.partition_size
        } else {
            0
        };
        labels.insert(keys::PARTITION_ID.to_string(), partition.to_string());
    }
    let job_labels = job.metadata.labels.clone().unwrap_or_default();
    for k in [keys::PREEMPTABLE, keys::COOLDOWN_TIME] {
        if let Some(v) = job_labels.get(k) {
            labels.insert(k.to_string(), v.clone());
        }
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(job_name, &task.name, index)),
            namespace: Some(namespace),
            owner_references: Some(vec![controller_ref(job)]),
            labels: Some(labels),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// Mounts each of the job's volumes into every container; one volume per claim.
fn mount_volumes(job: &Job, spec: &mut PodSpec) {
    let job_name = job.metadata.name.as_deref().unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    for (i, v) in job.spec.volumes.iter().enumerate() {
        let claim = claim_name(job_name, i, &v.volume_claim_name);
        if !seen.insert(claim.clone()) {
            continue;
        }
        let volume_name = format!("{job_name}-volume-{i}");
        spec.volumes.get_or_insert_with(Vec::new).push(Volume {
            name: volume_name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.clone(),
                read_only: None,
            }),
            ..Default::default()
        });
        for c in &mut spec.containers {
            c.volume_mounts
                .get_or_insert_with(Vec::new)
                .push(VolumeMount {
                    name: volume_name.clone(),
                    mount_path: v.mount_path.clone(),
                    ..Default::default()
                });
        }
    }
}

/// The claim a job volume mounts: the named one, or the one the controller creates for it.
pub fn claim_name(job: &str, index: usize, named: &str) -> String {
    if named.is_empty() {
        format!("{job}-volume-{index}")
    } else {
        named.to_string()
    }
}
