//! The validating webhook on update (`validateJobUpdate` in Volcano's `admit_job.go`): a running
//! job may be rescaled and re-prioritised, nothing else.

use serde_json::Value;
use volcano_api::batch::{Job, JobSpec};

use super::{AdmissionError, Violations};

const IMMUTABLE: &str = "job updates may not change fields other than `minAvailable`, \
                         `tasks[*].replicas under spec` and `PriorityClassName`";

/// Checks an update of `old` to `new`: the new counts must be consistent, no task may be added
/// or removed, and only `spec.minAvailable`, `spec.priorityClassName` and each task's
/// `replicas` and `minAvailable` may differ (Volcano lets a task's `minAvailable` change with
/// its replicas, so this does too).
pub fn validate_job_update(old: &Job, new: &Job) -> Result<(), AdmissionError> {
    let mut out = Violations::default();
    let mut total_replicas: i64 = 0;
    for (i, task) in new.spec.tasks.iter().enumerate() {
        let at = format!("spec.tasks[{i}]");
        let name = &task.name;
        if task.replicas < 0 {
            out.push(
                format!("{at}.replicas"),
                format!("'replicas' must be >= 0 in task: {name}"),
            );
        }
        if let Some(min) = task.min_available {
            if min < 0 {
                out.push(
                    format!("{at}.minAvailable"),
                    format!("'minAvailable' must be >= 0 in task: {name}"),
                );
            } else if min > task.replicas {
                out.push(
                    format!("{at}.minAvailable"),
                    format!("'minAvailable' must be <= 'replicas' in task: {name}"),
                );
            }
        }
        total_replicas += i64::from(task.replicas);
    }
    if let Some(min) = new.spec.min_available {
        if i64::from(min) > total_replicas {
            out.push(
                "spec.minAvailable",
                "job 'minAvailable' must not be greater than total replicas",
            );
        }
        if min < 0 {
            out.push("spec.minAvailable", "job 'minAvailable' must be >= 0");
        }
    }
    if old.spec.tasks.len() != new.spec.tasks.len() {
        out.push("spec.tasks", "job updates may not add or remove tasks");
        return out.into_result();
    }
    if let Some(field) = changed_field(&old.spec, &new.spec) {
        out.push(field, IMMUTABLE);
    }
    out.into_result()
}

/// The first field, other than the mutable ones, where `new` differs from `old`. Both specs
/// have the same number of tasks.
fn changed_field(old: &JobSpec, new: &JobSpec) -> Option<String> {
    let (old, new) = (comparable(old, old), comparable(old, new));
    if old == new {
        return None;
    }
    let old_value = serde_json::to_value(&old).ok();
    let new_value = serde_json::to_value(&new).ok();
    match (old_value, new_value) {
        (Some(a), Some(b)) => Some(first_difference(&a, &b, "spec".to_string())),
        // Plain data always serializes; were it not to, the change is still refused, unlocated.
        _ => Some("spec".to_string()),
    }
}

/// `spec` with the mutable fields taken from `base`, and claim names dropped where a claim
/// template is given (the job controller fills those names in after create).
fn comparable(base: &JobSpec, spec: &JobSpec) -> JobSpec {
    let mut spec = spec.clone();
    spec.min_available = base.min_available;
    spec.priority_class_name = base.priority_class_name.clone();
    for (task, base_task) in spec.tasks.iter_mut().zip(&base.tasks) {
        task.replicas = base_task.replicas;
        task.min_available = base_task.min_available;
    }
    for volume in &mut spec.volumes {
        if volume.volume_claim.is_some() {
            volume.volume_claim_name.clear();
        }
    }
    spec
}

/// The dotted path of the first place where `a` and `b` differ (they are known to differ).
fn first_difference(a: &Value, b: &Value, path: String) -> String {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let (x, y) = (a.get(key), b.get(key));
                if x != y {
                    let child = format!("{path}.{key}");
                    return match (x, y) {
                        (Some(x), Some(y)) => first_difference(x, y, child),
                        _ => child,
                    };
                }
            }
            path
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .position(|(x, y)| x != y)
            .map(|i| first_difference(&a[i], &b[i], format!("{path}[{i}]")))
            .unwrap_or(path),
        _ => path,
    }
}
