//! Defaults, and the create rules other than lifecycle policies.

use std::collections::BTreeMap;

use volcano_api::k8s_openapi::api::core::v1::Container;

use super::*;

// ---- defaults (mutate_job.go) ----

#[test]
fn defaults_fill_what_volcano_fills() {
    let mut unnamed = task("", 4);
    unnamed.min_available = None;
    let mut partial = task("worker", 5);
    partial.min_available = Some(2);
    partial.max_retry = Some(7);
    let mut j = job("train", vec![unnamed, partial]);
    default_job(&mut j);

    let spec = &j.spec;
    assert_eq!(spec.queue, "default");
    assert_eq!(spec.scheduler_name, "volcano");
    assert_eq!(spec.max_retry, Some(3));
    assert_eq!(spec.tasks[0].name, "default0");
    assert_eq!(spec.tasks[0].min_available, Some(4));
    assert_eq!(spec.tasks[0].max_retry, Some(3));
    assert_eq!(spec.tasks[1].name, "worker");
    assert_eq!(spec.tasks[1].min_available, Some(2));
    assert_eq!(spec.tasks[1].max_retry, Some(7));
    assert_eq!(
        spec.min_available,
        Some(6),
        "4 from replicas + 2 from the task's minimum"
    );
}

#[test]
fn defaults_keep_what_the_user_set_and_replace_go_zero_values() {
    let mut j = job("train", vec![task("a", 3)]);
    j.spec.queue = "q1".into();
    j.spec.scheduler_name = "other".into();
    j.spec.max_retry = Some(0);
    j.spec.min_available = Some(0);
    j.spec.tasks[0].max_retry = Some(0);
    default_job(&mut j);
    assert_eq!(j.spec.queue, "q1");
    assert_eq!(j.spec.scheduler_name, "other");
    assert_eq!(j.spec.max_retry, Some(3), "Volcano patches maxRetry 0 to 3");
    assert_eq!(
        j.spec.min_available,
        Some(3),
        "Volcano patches minAvailable 0 to the sum"
    );
    assert_eq!(j.spec.tasks[0].max_retry, Some(3));

    let mut kept = job("train", vec![task("a", 3)]);
    kept.spec.min_available = Some(1);
    kept.spec.max_retry = Some(5);
    default_job(&mut kept);
    assert_eq!(kept.spec.min_available, Some(1));
    assert_eq!(kept.spec.max_retry, Some(5));
}

#[test]
fn defaults_set_dns_policy_for_host_network_pods() {
    let mut j = job("train", vec![task("a", 1), task("b", 1)]);
    for t in &mut j.spec.tasks {
        if let Some(pod) = t.template.spec.as_mut() {
            pod.host_network = Some(t.name == "a");
        }
    }
    default_job(&mut j);
    let policy = |i: usize| {
        j.spec.tasks[i]
            .template
            .spec
            .as_ref()
            .and_then(|p| p.dns_policy.clone())
    };
    assert_eq!(policy(0).as_deref(), Some("ClusterFirstWithHostNet"));
    assert_eq!(policy(1), None);
}

// ---- job-level counts ----

#[test]
fn job_min_available_above_total_replicas() {
    let mut j = good_job();
    j.spec.min_available = Some(4);
    assert_only(
        &j,
        "spec.minAvailable",
        "job 'minAvailable' should not be greater than total replicas in tasks",
    );
    j.spec.min_available = Some(3);
    assert_eq!(validate_job(&j), Ok(()));
}

#[test]
fn negative_job_counts() {
    let mut j = good_job();
    j.spec.min_available = Some(-1);
    assert_only(&j, "spec.minAvailable", "job 'minAvailable' must be >= 0");

    let mut j = good_job();
    j.spec.max_retry = Some(-1);
    assert_only(&j, "spec.maxRetry", "'maxRetry' cannot be less than zero");

    let mut j = good_job();
    j.spec.ttl_seconds_after_finished = Some(-5);
    assert_only(
        &j,
        "spec.ttlSecondsAfterFinished",
        "'ttlSecondsAfterFinished' cannot be less than zero",
    );
    j.spec.ttl_seconds_after_finished = Some(0);
    assert_eq!(validate_job(&j), Ok(()));
}

#[test]
fn min_success_must_be_at_least_one() {
    let mut j = good_job();
    j.spec.min_success = Some(0);
    assert_only(
        &j,
        "spec.minSuccess",
        "Invalid value: 0: should be greater than or equal to 1",
    );
    j.spec.min_success = Some(1);
    assert_eq!(validate_job(&j), Ok(()));
}

#[test]
fn a_job_needs_a_task() {
    let mut j = job("train", vec![]);
    default_job(&mut j);
    assert_only(&j, "spec.tasks", "No task specified in job spec");
}

// ---- tasks ----

#[test]
fn duplicate_task_names() {
    let mut j = good_job();
    j.spec.tasks[1].name = "ps".into();
    assert_only(&j, "spec.tasks[1].name", "duplicated task name ps");
}

#[test]
fn task_names_are_dns_labels() {
    let mut j = good_job();
    j.spec.tasks[0].name = "Ps".into();
    assert_starts(
        &j,
        "spec.tasks[0].name",
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'",
    );

    let mut j = good_job();
    j.spec.tasks[0].name = "p.s".into();
    assert_only(&j, "spec.tasks[0].name", "must not contain dots");
}

#[test]
fn long_task_names_and_long_pod_names() {
    let mut j = good_job();
    j.spec.tasks[0].name = "p".repeat(64);
    assert_has(
        &j,
        "spec.tasks[0].name",
        "must be no more than 63 characters",
    );

    // A legal task name whose pods (`train-<task>-0`) would be too long.
    let mut j = good_job();
    let name = "p".repeat(60);
    j.spec.tasks[0].name = name.clone();
    assert_only(
        &j,
        "spec.tasks[0].name",
        &format!(
            "create pod with name train-{name}-0 validate failed \
             [name part must be no more than 63 characters]"
        ),
    );
}

#[test]
fn job_names_are_qualified_names() {
    let mut j = good_job();
    j.metadata.name = Some("-train".into());
    assert_starts(
        &j,
        "metadata.name",
        "create job with name -train validate failed [name part must consist of",
    );
}

#[test]
fn negative_replicas() {
    let mut j = good_job();
    j.spec.tasks[1].replicas = -1;
    j.spec.tasks[1].min_available = None;
    j.spec.min_available = Some(0);
    assert_only(
        &j,
        "spec.tasks[1].replicas",
        "'replicas' < 0 in task: worker, job: train",
    );
}

#[test]
fn task_min_available_bounds() {
    let mut j = good_job();
    j.spec.tasks[1].min_available = Some(3);
    assert_only(
        &j,
        "spec.tasks[1].minAvailable",
        "'minAvailable' is greater than 'replicas' in task: worker, job: train",
    );

    j.spec.tasks[1].min_available = Some(-1);
    assert_only(
        &j,
        "spec.tasks[1].minAvailable",
        "'minAvailable' < 0 in task: worker, job: train",
    );
}

#[test]
fn task_max_retry_is_not_negative() {
    let mut j = good_job();
    j.spec.tasks[0].max_retry = Some(-1);
    assert_only(
        &j,
        "spec.tasks[0].maxRetry",
        "Invalid value: -1: should be greater than or equal to 0",
    );
}

#[test]
fn pod_templates_need_named_unique_containers() {
    let mut j = good_job();
    j.spec.tasks[0].template.spec = None;
    assert_only(
        &j,
        "spec.tasks[0].template.spec.containers",
        "Required value",
    );

    let mut j = good_job();
    if let Some(pod) = j.spec.tasks[1].template.spec.as_mut() {
        pod.containers.push(pod.containers[0].clone());
        pod.init_containers = Some(vec![Container::default()]);
    }
    let all = violations(validate_job(&j));
    assert_eq!(
        all,
        [
            (
                "spec.tasks[1].template.spec.initContainers[0].name".to_string(),
                "Required value".to_string()
            ),
            (
                "spec.tasks[1].template.spec.containers[1].name".to_string(),
                "Duplicate value: \"main\"".to_string()
            ),
        ]
    );
}

// ---- plugins ----

#[test]
fn unknown_plugins_are_rejected_and_known_ones_admitted() {
    let mut j = good_job();
    j.spec.plugins = BTreeMap::from([
        ("svc".to_string(), vec![]),
        ("env".to_string(), vec![]),
        ("ssh".to_string(), vec![]),
    ]);
    assert_eq!(validate_job(&j), Ok(()));

    j.spec.plugins.insert("horovod".to_string(), vec![]);
    assert_only(
        &j,
        "spec.plugins.horovod",
        "unable to find job plugin: horovod (known plugins: env, hcclrank, mpi, pytorch, ray, \
         ssh, svc, tensorflow)",
    );
}

// ---- volumes ----

#[test]
fn volumes() {
    let mut j = good_job();
    j.spec.volumes = vec![claim("/data", "data-pvc")];
    assert_eq!(validate_job(&j), Ok(()));

    j.spec.volumes = vec![claim("", "data-pvc")];
    assert_only(&j, "spec.volumes[0].mountPath", "mountPath is required");

    j.spec.volumes = vec![claim("/data", "a"), claim("/data", "b")];
    assert_only(
        &j,
        "spec.volumes[1].mountPath",
        "duplicated mountPath: /data",
    );

    j.spec.volumes = vec![claim("/data", "")];
    assert_only(
        &j,
        "spec.volumes[0]",
        "either VolumeClaim or VolumeClaimName must be specified",
    );

    j.spec.volumes = vec![claim("/data", "data-pvc")];
    j.spec.volumes[0].volume_claim = Some(serde_json::json!({"accessModes": ["ReadWriteOnce"]}));
    assert_starts(
        &j,
        "spec.volumes[0]",
        "conflict: If you want to use an existing PVC",
    );

    j.spec.volumes[0].volume_claim_name.clear();
    assert_eq!(validate_job(&j), Ok(()), "a claim template alone is fine");

    j.spec.volumes = vec![claim("/data", "Data_PVC")];
    assert_starts(
        &j,
        "spec.volumes[0].volumeClaimName",
        "invalid VolumeClaimName Data_PVC : [a lowercase RFC 1123 subdomain must consist of",
    );
}

// ---- dependsOn ----

#[test]
fn dependencies_forming_a_dag_are_admitted() {
    let mut j = good_job();
    j.spec.tasks.push(task("eval", 1));
    j.spec.tasks[1].depends_on = depends(&["ps"]);
    j.spec.tasks[2].depends_on = depends(&["ps", "worker"]);
    assert_eq!(validate_job(&j), Ok(()));
}

#[test]
fn dependency_cycles_are_rejected() {
    let mut j = good_job();
    j.spec.tasks[0].depends_on = depends(&["worker"]);
    j.spec.tasks[1].depends_on = depends(&["ps"]);
    assert_only(
        &j,
        "spec.tasks[0].dependsOn",
        "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG): \
         tasks ps, worker wait on a cycle",
    );

    let mut j = good_job();
    j.spec.tasks[1].depends_on = depends(&["worker"]);
    assert_only(
        &j,
        "spec.tasks[1].dependsOn",
        "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG): \
         task worker waits on a cycle",
    );
}

#[test]
fn dependencies_on_unknown_or_repeated_tasks_are_rejected() {
    let mut j = good_job();
    j.spec.tasks[1].depends_on = depends(&["ps", "chief"]);
    assert_only(
        &j,
        "spec.tasks[1].dependsOn.name[1]",
        "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG): \
         task worker depends on chief, which is no task of the job",
    );

    j.spec.tasks[1].depends_on = depends(&["ps", "ps"]);
    assert_only(
        &j,
        "spec.tasks[1].dependsOn.name[1]",
        "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG): \
         task worker lists ps twice",
    );
}
