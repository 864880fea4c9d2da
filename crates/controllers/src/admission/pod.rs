//! Volcano's pod webhooks. Validating: a pod of a Volcano scheduler sets at most one of the
//! disruption-budget annotations, to a positive count or a percentage between 1% and 99%.
//! Mutating: a replica of ours (a pod with a controlling owner) that names no PodGroup is given
//! the name of the one the PodGroup controller will make for it, so the controller need not
//! patch the pod afterwards (a patch per pod was the API server's costliest request).

use serde_json::{Value, json};
use volcano_api::keys::{
    GROUP_NAME, GROUP_NAMED_AT_ADMISSION, JDB_MAX_UNAVAILABLE, JDB_MIN_AVAILABLE,
    VOLCANO_GROUP_NAME,
};

use super::request::{AdmissionSettings, Patch};

fn is_ours(pod: &Value, settings: &AdmissionSettings) -> bool {
    let scheduler = pod
        .pointer("/spec/schedulerName")
        .and_then(Value::as_str)
        .unwrap_or("default-scheduler");
    settings.scheduler_names.iter().any(|s| s == scheduler)
}

/// Checks a pod being created; pods of other schedulers pass.
pub fn validate_pod(pod: &Value, settings: &AdmissionSettings) -> Result<(), String> {
    if !is_ours(pod, settings) {
        return Ok(());
    }
    let annotations = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    let keys = [JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE];
    let mut found = 0;
    for key in keys {
        if let Some(value) = annotations.and_then(|a| a.get(key)) {
            found += 1;
            check_budget(key, value.as_str().unwrap_or_default())?;
        }
    }
    if found > 1 {
        return Err(format!(
            "not allow configure multiple annotations <[{}]> at same time",
            keys.join(" ")
        ));
    }
    Ok(())
}

/// Names the PodGroup of a pod being created, when it is ours, names none, belongs to no
/// Volcano Job and has a controlling owner (a ReplicaSet's or StatefulSet's replica):
/// `podgroup-<owner uid>`, as the PodGroup controller names it. A bare pod is left as it is:
/// the scheduler keeps its PodGroup (or, with `--pod-groups-for-bare-pods`, the controller
/// makes it and names it in the pod).
pub fn mutate_pod(pod: &Value, settings: &AdmissionSettings) -> Patch {
    let mut patch = Patch::default();
    let annotations = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    let named = |key: &str| {
        annotations
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
    };
    let owners = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let in_job = owners.iter().any(|o| {
        field(o, "kind") == "Job" && field(o, "apiVersion").starts_with("batch.volcano.sh/")
    });
    if !is_ours(pod, settings) || in_job || named(GROUP_NAME) || named(VOLCANO_GROUP_NAME) {
        return patch;
    }
    let Some(uid) = owners
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|o| field(o, "uid"))
        .filter(|u| !u.is_empty())
    else {
        return patch;
    };
    let name = format!("podgroup-{uid}");
    match annotations {
        None => patch.add(
            "/metadata/annotations",
            json!({GROUP_NAME: name, GROUP_NAMED_AT_ADMISSION: "true"}),
        ),
        Some(_) => {
            patch.add(&annotation_path(GROUP_NAME), json!(name));
            patch.add(&annotation_path(GROUP_NAMED_AT_ADMISSION), json!("true"));
        }
    }
    patch
}

fn field<'v>(o: &'v Value, key: &str) -> &'v str {
    o.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The JSON pointer of annotation `key` (RFC 6901 escapes `~` and `/`).
fn annotation_path(key: &str) -> String {
    format!(
        "/metadata/annotations/{}",
        key.replace('~', "~0").replace('/', "~1")
    )
}

/// An int-or-percentage budget, as Go's `intstr.Parse` reads it.
fn check_budget(key: &str, value: &str) -> Result<(), String> {
    if let Ok(n) = value.parse::<i32>() {
        if n <= 0 {
            return Err(format!(
                "invalid value <{value:?}> for {key}, it must be a positive integer"
            ));
        }
        return Ok(());
    }
    let digits = value.replace('%', "");
    match digits.parse::<i64>() {
        Err(_) => Err(format!(
            "invalid value strconv.Atoi: parsing {digits:?}: invalid syntax for {key}"
        )),
        Ok(v) if v <= 0 || v >= 100 => Err(format!(
            "invalid value <{value:?}> for {key}, it must be a valid percentage which between \
             1% ~ 99%"
        )),
        Ok(_) => Ok(()),
    }
}
