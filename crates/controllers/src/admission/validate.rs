//! The validating webhook on create (`validateJobCreate` in Volcano's `admit_job.go`, with the
//! checks Volcano moved into the CRD schema and its ValidatingAdmissionPolicy).

use std::collections::{BTreeMap, BTreeSet};

use volcano_api::batch::{Job, TaskSpec, VolumeSpec};

use super::Violations;
use super::names::{
    dns1123_label_errors, dns1123_subdomain_errors, go_list, qualified_name_errors,
};
use super::policies::validate_policies;
use crate::job_plugins::{KNOWN, MpiPlugin, check_args};

const NOT_A_DAG: &str =
    "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)";

/// Checks a Job as Volcano's validating webhook does on create, after [`super::default_job`]:
/// counts and bounds, task names, lifecycle policies, plugins, volumes, task dependencies and
/// the basics of each pod template. The queue is checked apart, by [`super::check_queue`].
pub fn validate_job(job: &Job) -> Result<(), super::AdmissionError> {
    let mut out = Violations::default();
    let spec = &job.spec;
    let job_name = job.metadata.name.as_deref().unwrap_or("");

    if spec.min_available.is_some_and(|m| m < 0) {
        out.push("spec.minAvailable", "job 'minAvailable' must be >= 0");
    }
    if spec.max_retry.is_some_and(|r| r < 0) {
        out.push("spec.maxRetry", "'maxRetry' cannot be less than zero");
    }
    if spec.ttl_seconds_after_finished.is_some_and(|t| t < 0) {
        out.push(
            "spec.ttlSecondsAfterFinished",
            "'ttlSecondsAfterFinished' cannot be less than zero",
        );
    }
    if let Some(min) = spec.min_success.filter(|m| *m < 1) {
        // Only the CRD schema (`minimum: 1`) bounds minSuccess; this is the API server's text.
        out.push(
            "spec.minSuccess",
            format!("Invalid value: {min}: should be greater than or equal to 1"),
        );
    }
    if spec.tasks.is_empty() {
        out.push("spec.tasks", "No task specified in job spec");
    }

    let mut first_index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut total_replicas: i64 = 0;
    for (index, task) in spec.tasks.iter().enumerate() {
        total_replicas += i64::from(task.replicas);
        let at = format!("spec.tasks[{index}]");
        let name_errors = dns1123_label_errors(&task.name);
        if !name_errors.is_empty() {
            out.push(format!("{at}.name"), name_errors.join("; "));
        }
        if first_index.insert(task.name.as_str(), index).is_some() {
            out.push(
                format!("{at}.name"),
                format!("duplicated task name {}", task.name),
            );
        }
        validate_task(job_name, index, task, &mut out);
    }

    let job_name_errors = qualified_name_errors(job_name);
    if !job_name_errors.is_empty() {
        out.push(
            "metadata.name",
            format!(
                "create job with name {job_name} validate failed {}",
                go_list(&job_name_errors)
            ),
        );
    }
    if spec
        .min_available
        .is_some_and(|m| i64::from(m) > total_replicas)
    {
        out.push(
            "spec.minAvailable",
            "job 'minAvailable' should not be greater than total replicas in tasks",
        );
    }
    validate_policies(&spec.policies, "spec.policies", &mut out);
    for (name, args) in &spec.plugins {
        if KNOWN.contains(&name.as_str()) {
            if let Err(e) = check_args(name, args) {
                out.push(format!("spec.plugins.{name}"), e.to_string());
            }
        } else {
            out.push(
                format!("spec.plugins.{name}"),
                format!(
                    "unable to find job plugin: {name} (known plugins: {})",
                    KNOWN.join(", ")
                ),
            );
        }
    }
    validate_mpi_master(job, &mut out);
    validate_volumes(&spec.volumes, &mut out);
    validate_dependencies(&spec.tasks, &mut out);
    out.into_result()
}

fn validate_task(job_name: &str, index: usize, task: &TaskSpec, out: &mut Violations) {
    let at = format!("spec.tasks[{index}]");
    let name = &task.name;
    if task.replicas < 0 {
        out.push(
            format!("{at}.replicas"),
            format!("'replicas' < 0 in task: {name}, job: {job_name}"),
        );
    }
    if let Some(min) = task.min_available {
        if min < 0 {
            out.push(
                format!("{at}.minAvailable"),
                format!("'minAvailable' < 0 in task: {name}, job: {job_name}"),
            );
        } else if min > task.replicas {
            out.push(
                format!("{at}.minAvailable"),
                format!(
                    "'minAvailable' is greater than 'replicas' in task: {name}, job: {job_name}"
                ),
            );
        }
    }
    if let Some(retry) = task.max_retry.filter(|r| *r < 0) {
        // Only the CRD schema (`minimum: 0`) bounds a task's maxRetry; the API server's text.
        out.push(
            format!("{at}.maxRetry"),
            format!("Invalid value: {retry}: should be greater than or equal to 0"),
        );
    }
    validate_policies(&task.policies, &format!("{at}.policies"), out);

    // Pods are named `<job>-<task>-<index>`; Volcano refuses a job whose pods could not exist.
    let pod_name = format!("{job_name}-{name}-{index}");
    let pod_name_errors = qualified_name_errors(&pod_name);
    if !pod_name_errors.is_empty() {
        out.push(
            format!("{at}.name"),
            format!(
                "create pod with name {pod_name} validate failed {}",
                go_list(&pod_name_errors)
            ),
        );
    }
    validate_template(&at, task, out);
}

/// The cheap part of the Kubernetes pod template validation Volcano runs on each task:
/// at least one container, and container names that are present, DNS labels and unique.
/// Resources, probes, volumes and the rest are left to the API server.
fn validate_template(at: &str, task: &TaskSpec, out: &mut Violations) {
    let spec_at = format!("{at}.template.spec");
    let pod = task.template.spec.as_ref();
    let containers = pod.map(|p| p.containers.as_slice()).unwrap_or_default();
    if containers.is_empty() {
        out.push(format!("{spec_at}.containers"), "Required value");
    }
    let init = pod
        .and_then(|p| p.init_containers.as_deref())
        .unwrap_or_default();
    let mut names: BTreeSet<&str> = BTreeSet::new();
    let all = init
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("{spec_at}.initContainers[{i}].name"), c))
        .chain(
            containers
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("{spec_at}.containers[{i}].name"), c)),
        );
    for (field, container) in all {
        if container.name.is_empty() {
            out.push(field, "Required value");
            continue;
        }
        let errors = dns1123_label_errors(&container.name);
        if !errors.is_empty() {
            out.push(
                field,
                format!("Invalid value: {:?}: {}", container.name, errors.join(", ")),
            );
        } else if !names.insert(container.name.as_str()) {
            out.push(field, format!("Duplicate value: {:?}", container.name));
        }
    }
}

/// The one framework check Volcano's webhook makes: `mpirun` starts on the master, so an `mpi`
/// job must have the master task its arguments name. (Arguments that do not parse are
/// reported with the other plugin checks.)
fn validate_mpi_master(job: &Job, out: &mut Violations) {
    let Some(args) = job.spec.plugins.get("mpi") else {
        return;
    };
    let Ok(mpi) = MpiPlugin::from_args(args) else {
        return;
    };
    if !job.spec.tasks.iter().any(|t| t.name == mpi.master) {
        out.push(
            "spec.plugins.mpi",
            format!(
                "The specified mpi master task was not found: no task is named {:?}",
                mpi.master
            ),
        );
    }
}

/// `validateIO` in Volcano's `util.go`.
fn validate_volumes(volumes: &[VolumeSpec], out: &mut Violations) {
    let mut mount_paths: BTreeSet<&str> = BTreeSet::new();
    for (i, volume) in volumes.iter().enumerate() {
        let at = format!("spec.volumes[{i}]");
        if volume.mount_path.is_empty() {
            out.push(format!("{at}.mountPath"), "mountPath is required");
        } else if !mount_paths.insert(volume.mount_path.as_str()) {
            out.push(
                format!("{at}.mountPath"),
                format!("duplicated mountPath: {}", volume.mount_path),
            );
        }
        let has_name = !volume.volume_claim_name.is_empty();
        match (has_name, volume.volume_claim.is_some()) {
            (false, false) => out.push(
                &at,
                "either VolumeClaim or VolumeClaimName must be specified",
            ),
            (true, true) => out.push(
                &at,
                "conflict: If you want to use an existing PVC, just specify VolumeClaimName. \
                 If you want to create a new PVC, you do not need to specify VolumeClaimName",
            ),
            (true, false) => {
                let errors = dns1123_subdomain_errors(&volume.volume_claim_name);
                if !errors.is_empty() {
                    out.push(
                        format!("{at}.volumeClaimName"),
                        format!(
                            "invalid VolumeClaimName {} : {}",
                            volume.volume_claim_name,
                            go_list(&errors)
                        ),
                    );
                }
            }
            (false, true) => {}
        }
    }
}

/// Volcano accepts `dependsOn` only if a topological order of the tasks exists. A name that is
/// no task, or one listed twice, leaves its task's in-degree unreachable in Volcano's sort, so
/// those are rejected too, with the entry named.
fn validate_dependencies(tasks: &[TaskSpec], out: &mut Violations) {
    let index: BTreeMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    let mut waits_on: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); tasks.len()];
    for (i, task) in tasks.iter().enumerate() {
        let Some(depends) = &task.depends_on else {
            continue;
        };
        for (j, dep) in depends.name.iter().enumerate() {
            let field = format!("spec.tasks[{i}].dependsOn.name[{j}]");
            match index.get(dep.as_str()) {
                None => out.push(
                    field,
                    format!(
                        "{NOT_A_DAG}: task {} depends on {dep}, which is no task of the job",
                        task.name
                    ),
                ),
                Some(&d) => {
                    if !waits_on[i].insert(d) {
                        out.push(
                            field,
                            format!("{NOT_A_DAG}: task {} lists {dep} twice", task.name),
                        );
                    }
                }
            }
        }
    }

    // Released in rounds rather than from a work list: a job has a handful of tasks.
    let mut released = vec![false; tasks.len()];
    loop {
        let ready: Vec<usize> = (0..tasks.len())
            .filter(|&i| !released[i] && waits_on[i].iter().all(|&d| released[d]))
            .collect();
        if ready.is_empty() {
            break;
        }
        for i in ready {
            released[i] = true;
        }
    }
    let blocked: Vec<usize> = (0..tasks.len()).filter(|&i| !released[i]).collect();
    if let Some(&first) = blocked.first() {
        let names: Vec<&str> = blocked.iter().map(|&i| tasks[i].name.as_str()).collect();
        let who = match names.as_slice() {
            [one] => format!("task {one} waits"),
            many => format!("tasks {} wait", many.join(", ")),
        };
        out.push(
            format!("spec.tasks[{first}].dependsOn"),
            format!("{NOT_A_DAG}: {who} on a cycle"),
        );
    }
}
