//! The simulation annotations, read and checked once before the run: every value that does not
//! parse is reported with its file, object and field, so nothing can go wrong later on input.

use std::collections::BTreeMap;
use std::time::Duration;

use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::lifecycle::{Annotated, Lifecycle};
use volcano_api::resources::canonical_amount;
use volcano_api::scenario::{LoadError, ObjectKey, Source};
use volcano_api::scheduling::ResourceList;

use super::duration;

/// The pod lifecycle annotations and outcome, shared with `volcano up`'s kubelets.
pub use volcano_api::lifecycle::{DURATION, FAIL_AFTER, Outcome};

/// When an object is created, e.g. `90s`, `15m`, `2h` (default `0s`).
pub const SUBMIT_AT: &str = "sim.volcano-rs.io/submit-at";
/// When a node goes away (NotReady; its pods are lost).
pub const DOWN_AT: &str = "sim.volcano-rs.io/down-at";
/// When a node comes (back) up.
pub const UP_AT: &str = "sim.volcano-rs.io/up-at";
/// When a node's allocatable shrinks to `shrink-to`.
pub const SHRINK_AT: &str = "sim.volcano-rs.io/shrink-at";
/// What a node's allocatable becomes at `shrink-at`: `cpu=8,memory=32Gi,nvidia.com/gpu=2`.
pub const SHRINK_TO: &str = "sim.volcano-rs.io/shrink-to";

/// Where objects came from, to name them in errors.
pub struct Located<'a> {
    /// Sources by object.
    pub sources: &'a BTreeMap<ObjectKey, Source>,
}

impl Located<'_> {
    /// An error about `field` of the object `kind` `meta`.
    pub fn error(
        &self,
        kind: &str,
        meta: &ObjectMeta,
        field: &str,
        message: String,
    ) -> Box<LoadError> {
        let key = object_key(kind, meta);
        Box::new(LoadError {
            source: self.sources.get(&key).cloned(),
            path: None,
            object: Some(key.to_string()),
            field: Some(field.to_string()),
            message,
        })
    }

    /// The duration in annotation `key` of `meta`, which sits at `prefix` within the object
    /// `owner` (itself, or a Job whose pod template it is), checked.
    pub fn duration(
        &self,
        kind: &str,
        owner: &ObjectMeta,
        meta: &ObjectMeta,
        prefix: &str,
        key: &str,
    ) -> Result<Option<Duration>, Box<LoadError>> {
        match annotation(meta, key) {
            None => Ok(None),
            Some(text) => duration::parse(text).map(Some).map_err(|e| {
                self.error(
                    kind,
                    owner,
                    &format!("{prefix}metadata.annotations.{key}"),
                    e.to_string(),
                )
            }),
        }
    }
}

/// The object's identity as the scenario loader records it.
pub fn object_key(kind: &str, meta: &ObjectMeta) -> ObjectKey {
    ObjectKey {
        kind: kind.to_string(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
    }
}

/// An annotation's value.
pub fn annotation<'m>(meta: &'m ObjectMeta, key: &str) -> Option<&'m str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// How a pod that started ends: the earlier of `duration` (Succeeded) and `fail-after`
/// (Failed; a tie fails). Each is taken from the pod, else its Volcano Job, else its PodGroup.
pub fn ending(
    pod: &Pod,
    job: Option<&ObjectMeta>,
    group: Option<&ObjectMeta>,
) -> Option<(Duration, Outcome)> {
    let places: Vec<&dyn Annotated> = [Some(&pod.metadata), job, group]
        .into_iter()
        .flatten()
        .map(|m| m as &dyn Annotated)
        .collect();
    // The plan checked every source of pod annotations before the run, so no value can be
    // bad here; one that were would read as absent.
    Lifecycle::read_lenient(&places, |_| {})
        .ending()
        .map(|e| (e.after, e.outcome))
}

/// Parses `cpu=8,memory=32Gi,nvidia.com/gpu=2` into a resource list, each quantity checked.
pub fn parse_resources(text: &str) -> Result<ResourceList, String> {
    let mut list = ResourceList::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part
            .split_once('=')
            .map(|(n, v)| (n.trim(), v.trim()))
            .filter(|(n, v)| !n.is_empty() && !v.is_empty())
            .ok_or_else(|| format!("{part:?} is not name=quantity (e.g. cpu=8,memory=32Gi)"))?;
        canonical_amount(name, value).map_err(|e| format!("{name}: {e}"))?;
        if list
            .insert(name.to_string(), Quantity(value.to_string()))
            .is_some()
        {
            return Err(format!("{name} is given twice"));
        }
    }
    if list.is_empty() {
        return Err("no resources given (e.g. cpu=8,memory=32Gi)".to_string());
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod_with(annotations: &[(&str, &str)]) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        pod
    }

    #[test]
    fn the_earlier_ending_wins_and_a_tie_fails() {
        let secs = Duration::from_secs;
        let p = pod_with(&[(DURATION, "10m"), (FAIL_AFTER, "5m")]);
        assert_eq!(ending(&p, None, None), Some((secs(300), Outcome::Fail)));
        let p = pod_with(&[(DURATION, "5m"), (FAIL_AFTER, "10m")]);
        assert_eq!(ending(&p, None, None), Some((secs(300), Outcome::Succeed)));
        let p = pod_with(&[(DURATION, "5m"), (FAIL_AFTER, "5m")]);
        assert_eq!(ending(&p, None, None), Some((secs(300), Outcome::Fail)));
        assert_eq!(ending(&pod_with(&[]), None, None), None);
    }

    #[test]
    fn a_pod_inherits_from_its_job_then_its_group() {
        let job = pod_with(&[(DURATION, "1h")]).metadata;
        let group = pod_with(&[(DURATION, "2h"), (FAIL_AFTER, "30m")]).metadata;
        let p = pod_with(&[]);
        assert_eq!(
            ending(&p, Some(&job), Some(&group)),
            Some((Duration::from_secs(1800), Outcome::Fail))
        );
        assert_eq!(
            ending(&p, Some(&job), None),
            Some((Duration::from_secs(3600), Outcome::Succeed))
        );
    }

    #[test]
    fn resource_lists_parse_and_bad_ones_say_why() {
        let l = parse_resources("cpu=8, memory=32Gi,nvidia.com/gpu=2").unwrap_or_default();
        assert_eq!(l.len(), 3);
        assert_eq!(l.get("memory").map(|q| q.0.as_str()), Some("32Gi"));
        for bad in [
            "",
            "cpu",
            "cpu=",
            "=8",
            "cpu=eight",
            "cpu=1,cpu=2",
            "cpu=-1",
        ] {
            assert!(parse_resources(bad).is_err(), "{bad:?} parsed");
        }
    }
}
