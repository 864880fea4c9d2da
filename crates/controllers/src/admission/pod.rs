//! Volcano's pod validating webhook: a pod of a Volcano scheduler sets at most one of the
//! disruption-budget annotations, to a positive count or a percentage between 1% and 99%.

use serde_json::Value;
use volcano_api::keys::{JDB_MAX_UNAVAILABLE, JDB_MIN_AVAILABLE};

use super::request::AdmissionSettings;

/// Checks a pod being created; pods of other schedulers pass.
pub fn validate_pod(pod: &Value, settings: &AdmissionSettings) -> Result<(), String> {
    let scheduler = pod
        .pointer("/spec/schedulerName")
        .and_then(Value::as_str)
        .unwrap_or("default-scheduler");
    if !settings.scheduler_names.iter().any(|s| s == scheduler) {
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
