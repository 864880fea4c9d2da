//! Tests of the admission rules: each builds a job that breaks one rule and checks the field
//! and Volcano's reason.

use volcano_api::batch::{DependsOn, Job, JobSpec, LifecyclePolicy, TaskSpec, VolumeSpec};
use volcano_api::k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};

use super::{AdmissionError, default_job, validate_job};

mod create;
mod frameworks;
mod policies;
mod queue_and_update;
mod review;

/// A task of `replicas` pods with one container, as a user would write it.
fn task(name: &str, replicas: i32) -> TaskSpec {
    TaskSpec {
        name: name.to_string(),
        replicas,
        template: PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "main".to_string(),
                    image: Some("busybox".to_string()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
        },
        ..TaskSpec::default()
    }
}

fn job(name: &str, tasks: Vec<TaskSpec>) -> Job {
    Job::new(
        name,
        JobSpec {
            tasks,
            ..JobSpec::default()
        },
    )
}

/// A job that passes every rule once defaulted; tests break one thing in it.
fn good_job() -> Job {
    let mut j = job("train", vec![task("ps", 1), task("worker", 2)]);
    default_job(&mut j);
    j
}

fn on_event(event: &str, action: &str) -> LifecyclePolicy {
    LifecyclePolicy {
        event: event.to_string(),
        action: action.to_string(),
        ..LifecyclePolicy::default()
    }
}

fn on_exit(code: i32, action: &str) -> LifecyclePolicy {
    LifecyclePolicy {
        exit_code: Some(code),
        action: action.to_string(),
        ..LifecyclePolicy::default()
    }
}

fn depends(names: &[&str]) -> Option<DependsOn> {
    Some(DependsOn {
        name: names.iter().map(|n| n.to_string()).collect(),
        iteration: String::new(),
    })
}

fn claim(mount: &str, name: &str) -> VolumeSpec {
    VolumeSpec {
        mount_path: mount.to_string(),
        volume_claim_name: name.to_string(),
        volume_claim: None,
    }
}

/// Every violation of a result, `Ok` being none.
fn violations(result: Result<(), AdmissionError>) -> Vec<(String, String)> {
    match result {
        Ok(()) => Vec::new(),
        Err(e) => e
            .violations()
            .map(|(f, m)| (f.to_string(), m.to_string()))
            .collect(),
    }
}

/// Asserts `job` is rejected with exactly this one violation.
#[track_caller]
fn assert_only(job: &Job, field: &str, message: &str) {
    assert_eq!(
        violations(validate_job(job)),
        [(field.to_string(), message.to_string())]
    );
}

/// Asserts `job` is rejected with, among others, this violation.
#[track_caller]
fn assert_has(job: &Job, field: &str, message: &str) {
    let all = violations(validate_job(job));
    assert!(
        all.iter().any(|(f, m)| f == field && m == message),
        "expected field {field}: {message}\ngot {all:#?}"
    );
}

/// Asserts `job` is rejected with a violation on `field` whose reason starts with `prefix`.
#[track_caller]
fn assert_starts(job: &Job, field: &str, prefix: &str) {
    let all = violations(validate_job(job));
    assert!(
        all.iter().any(|(f, m)| f == field && m.starts_with(prefix)),
        "expected field {field}: {prefix}...\ngot {all:#?}"
    );
}

#[test]
fn the_good_job_is_admitted() {
    assert_eq!(validate_job(&good_job()), Ok(()));
}

#[test]
fn errors_name_every_field_in_display() {
    let mut j = good_job();
    j.spec.max_retry = Some(-1);
    j.spec.ttl_seconds_after_finished = Some(-1);
    let Err(e) = validate_job(&j) else {
        panic!("a negative maxRetry must be rejected");
    };
    assert_eq!(e.field, "spec.maxRetry");
    assert_eq!(e.message, "'maxRetry' cannot be less than zero");
    assert_eq!(
        e.to_string(),
        "field spec.maxRetry: 'maxRetry' cannot be less than zero; \
         field spec.ttlSecondsAfterFinished: 'ttlSecondsAfterFinished' cannot be less than zero"
    );
    assert_eq!(
        e.messages_for("spec.ttlSecondsAfterFinished"),
        ["'ttlSecondsAfterFinished' cannot be less than zero"]
    );
}
