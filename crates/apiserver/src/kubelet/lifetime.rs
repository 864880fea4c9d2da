//! How long a pod runs on a simulated node, and how it ends: [`volcano_api::lifecycle`]
//! decides, as it does for `volcano sim`'s kubelets; this module finds what it reads in the
//! JSON objects of the store (the pod, its Volcano Job, its PodGroup, its command line).

use std::time::Duration;

use serde_json::Value;
use volcano_api::keys::{GROUP_NAME, VOLCANO_GROUP_NAME};
use volcano_api::lifecycle::{Annotated, AnnotationError, Lifecycle};

use crate::shared::SharedStore;
use crate::store::meta::meta_str;

/// How long a pod runs once started and the exit code it ends with, from the pod alone (its
/// annotations, else its command's `sleep N`); None if it never ends. For kubelets that see
/// no Jobs or PodGroups.
pub fn lifetime(pod: &Value) -> Option<(Duration, i32)> {
    lifetime_among(pod, &[])
}

/// [`lifetime`], with each annotation the pod lacks read from `owners` in order (its Job,
/// then its PodGroup). A value that does not parse is logged and read as absent, as it always
/// was here: the pod is already running, and refusing it now would help nobody.
pub fn lifetime_among(pod: &Value, owners: &[Value]) -> Option<(Duration, i32)> {
    let mut places: Vec<&dyn Annotated> = vec![pod];
    places.extend(owners.iter().map(|o| o as &dyn Annotated));
    let warn = |e: AnnotationError| {
        tracing::warn!(
            namespace = meta_str(pod, "namespace"),
            pod = meta_str(pod, "name"),
            "{e}; the kubelet reads it as unset"
        );
    };
    Lifecycle::read_lenient(&places, warn)
        .with_command(&command_line(pod))
        .ending()
        .map(|e| (e.after, e.outcome.exit_code()))
}

/// The pod's Volcano Job and PodGroup, those of them that exist, in the order their
/// annotations count.
pub fn owners(store: &SharedStore, pod: &Value) -> Vec<Value> {
    let ns = meta_str(pod, "namespace");
    let job = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|o| {
            o["kind"] == "Job"
                && o["apiVersion"]
                    .as_str()
                    .is_some_and(|v| v.starts_with("batch.volcano.sh/"))
        })
        .and_then(|o| o["name"].as_str());
    let annotation = |key| pod.annotation(key).filter(|n| !n.is_empty());
    let group = annotation(GROUP_NAME).or_else(|| annotation(VOLCANO_GROUP_NAME));
    [("jobs", job), ("podgroups", group)]
        .into_iter()
        .filter_map(|(resource, name)| store.get(resource, Some(ns), name?).ok())
        .collect()
}

/// `command` then `args` of the pod's first container: what it runs.
fn command_line(pod: &Value) -> Vec<&str> {
    let Some(container) = pod.pointer("/spec/containers/0") else {
        return Vec::new();
    };
    ["command", "args"]
        .into_iter()
        .filter_map(|field| container.get(field).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use volcano_api::lifecycle::{DURATION, FAIL_AFTER};

    fn pod(annotations: Value, command: Value) -> Value {
        json!({"metadata": {"name": "p", "annotations": annotations},
               "spec": {"containers": [{"name": "c", "command": command}]}})
    }

    #[test]
    fn every_documented_duration_form_is_read() {
        for (text, secs) in [
            ("90s", 90.0),
            ("15m", 900.0),
            ("2h", 7200.0),
            ("1h30m", 5400.0),
            ("500ms", 0.5),
            ("1.5h", 5400.0),
            ("1d", 86_400.0),
        ] {
            let p = pod(json!({ DURATION: text }), json!(["nginx"]));
            let want = Some((Duration::from_secs_f64(secs), 0));
            assert_eq!(lifetime(&p), want, "{text}");
        }
    }

    #[test]
    fn annotations_then_the_command_decide() {
        let p = pod(
            json!({FAIL_AFTER: "30s", DURATION: "1m"}),
            json!(["sleep", "1"]),
        );
        assert_eq!(lifetime(&p), Some((Duration::from_secs(30), 1)));
        let p = pod(json!({}), json!(["sh", "-c", "sleep 2d"]));
        assert_eq!(lifetime(&p), Some((Duration::from_secs(172_800), 0)));
        let mut p = pod(json!({}), json!(["sleep"]));
        p["spec"]["containers"][0]["args"] = json!(["0.5"]);
        assert_eq!(lifetime(&p), Some((Duration::from_millis(500), 0)));
        assert_eq!(lifetime(&pod(json!({}), json!(["nginx"]))), None);
    }

    #[test]
    fn a_bad_value_reads_as_unset() {
        let p = pod(json!({DURATION: "10", FAIL_AFTER: "1m"}), json!(["nginx"]));
        assert_eq!(lifetime(&p), Some((Duration::from_secs(60), 1)));
        let p = pod(json!({DURATION: "soon"}), json!(["sleep", "5"]));
        assert_eq!(lifetime(&p), Some((Duration::from_secs(5), 0)));
        let p = pod(json!({DURATION: "soon"}), json!(["nginx"]));
        assert_eq!(lifetime(&p), None);
    }

    #[test]
    fn the_pod_else_its_job_else_its_group() {
        let job = json!({"metadata": {"annotations": {DURATION: "1h"}}});
        let group = json!({"metadata": {"annotations": {DURATION: "2h", FAIL_AFTER: "1d"}}});
        let p = pod(json!({}), json!(["sleep", "5"]));
        let owners = [job, group];
        assert_eq!(
            lifetime_among(&p, &owners),
            Some((Duration::from_secs(3600), 0))
        );
        let p = pod(json!({FAIL_AFTER: "10m"}), json!(["nginx"]));
        assert_eq!(
            lifetime_among(&p, &owners),
            Some((Duration::from_secs(600), 1))
        );
    }
}
