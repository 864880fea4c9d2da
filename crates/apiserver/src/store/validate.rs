//! The validation of pods the Kubernetes API server does on create, for the rules a user of
//! batch workloads meets: the resources of each container (`ValidateResourceRequirements` in
//! Kubernetes' `pkg/apis/core/validation`).
//!
//! An extended resource (a name with a domain other than `kubernetes.io`, such as
//! `nvidia.com/gpu`) cannot be overcommitted: it must have a limit, its request must equal the
//! limit, and it is counted in whole units. Refusals are 422 Invalid with one cause per field.

use serde_json::Value;
use volcano_controllers::admission::pod_resources::{
    QUANTITY_SYNTAX, ResourceProblem, pod_spec_problems,
};

use crate::error::{ApiError, FieldError};
use crate::kinds::KindInfo;

/// The 400 a pod with an unreadable quantity gets: it fails to decode before validation.
fn undecodable(kind: &KindInfo) -> ApiError {
    ApiError::bad_request(format!(
        "{k} in version \"{v}\" cannot be handled as a {k}: quantities must match the regular expression '{QUANTITY_SYNTAX}'",
        k = kind.kind,
        v = kind.version
    ))
}

fn field_error(p: ResourceProblem) -> FieldError {
    match p {
        ResourceProblem::Invalid {
            field,
            value,
            detail,
        } => FieldError::invalid(field, Value::String(value), detail),
        ResourceProblem::Required { field, detail } => FieldError::required(field, detail),
    }
}

/// Validates a pod about to be created (after defaulting): 422 with every refused field, or
/// 400 when a quantity cannot be read at all.
pub fn pod(kind: &KindInfo, object: &Value) -> Result<(), ApiError> {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let errors: Vec<FieldError> = pod_spec_problems(&spec, "spec")
        .map_err(|_| undecodable(kind))?
        .into_iter()
        .map(field_error)
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    Err(ApiError::invalid_fields(kind, name, errors))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;
    use serde_json::json;

    fn check(resources: Value) -> Result<(), ApiError> {
        let p = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "image": "busybox", "resources": resources}]}});
        pod(kinds::pods(), &p)
    }

    fn causes(resources: Value) -> Vec<String> {
        match check(resources) {
            Ok(()) => Vec::new(),
            Err(e) => e.causes().iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn an_extended_request_needs_a_limit() {
        let e = check(json!({"requests": {"nvidia.com/gpu": "1"}})).unwrap_err();
        assert_eq!(e.code(), 422);
        assert_eq!(
            e.message,
            "Pod \"p\" is invalid: spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"
        );
        assert_eq!(e.causes()[0].kind.reason(), "FieldValueRequired");
    }

    #[test]
    fn an_extended_request_must_equal_its_limit_and_be_whole() {
        assert_eq!(
            causes(json!({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}})),
            [
                "spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to nvidia.com/gpu limit of 2"
            ]
        );
        assert_eq!(
            causes(
                json!({"requests": {"nvidia.com/gpu": "500m"}, "limits": {"nvidia.com/gpu": "500m"}})
            ),
            [
                "spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: \"500m\": must be an integer",
                "spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: \"500m\": must be an integer"
            ]
        );
    }

    #[test]
    fn native_resources_may_be_overcommitted_but_not_exceeded() {
        assert!(causes(json!({"requests": {"cpu": "1"}, "limits": {"cpu": "2"}})).is_empty());
        assert!(causes(json!({"requests": {"cpu": "1", "memory": "1Gi"}})).is_empty());
        assert!(
            causes(json!({"requests": {"nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": "2"}}))
                .is_empty()
        );
        assert_eq!(
            causes(json!({"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}})),
            [
                "spec.containers[0].resources.requests: Invalid value: \"2Gi\": must be less than or equal to memory limit of 1Gi"
            ]
        );
        assert_eq!(
            causes(json!({"requests": {"gpu": "1"}, "limits": {"gpu": "1"}})).len(),
            4,
            "a name without a domain must be a standard container resource"
        );
    }

    #[test]
    fn an_unreadable_quantity_is_a_bad_request() {
        let e = check(json!({"requests": {"cpu": "lots"}})).unwrap_err();
        assert_eq!(e.code(), 400);
        assert!(
            e.message
                .contains("quantities must match the regular expression")
        );
    }
}
