//! The validation of pods the Kubernetes API server does on create, for the rules a user of
//! batch workloads meets: the resources of each container (`ValidateResourceRequirements` in
//! Kubernetes' `pkg/apis/core/validation`).
//!
//! An extended resource (a name with a domain other than `kubernetes.io`, such as
//! `nvidia.com/gpu`) cannot be overcommitted: it must have a limit, its request must equal the
//! limit, and it is counted in whole units. Refusals are 422 Invalid with one cause per field.

use serde_json::{Map, Value};
use volcano_api::quantity;

use crate::error::{ApiError, FieldError};
use crate::kinds::KindInfo;

/// Resource names a container may use without a domain.
const STANDARD_CONTAINER: &[&str] = &["cpu", "memory", "ephemeral-storage"];

/// Resource names Kubernetes knows without a domain (quotas and containers together).
const STANDARD: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// The regular expression Kubernetes quotes when a quantity does not parse.
const QUANTITY_SYNTAX: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// Kubernetes' own resources: no domain, or a `kubernetes.io` one.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// A resource a node advertises under its vendor's domain (`nvidia.com/gpu`).
pub fn is_extended(name: &str) -> bool {
    !is_native(name) && !name.starts_with("requests.")
}

/// Whether a request may be below its limit: Kubernetes' own resources except hugepages.
fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_hugepages(name)
}

/// Why a container may not name this resource, if it may not.
fn resource_name_errors(name: &str, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let value = Value::String(name.to_string());
    if !name.contains('/') {
        if !STANDARD.contains(&name) && !is_hugepages(name) {
            errors.push(FieldError::invalid(
                path,
                value.clone(),
                "must be a standard resource type or fully qualified",
            ));
        }
        if !STANDARD_CONTAINER.contains(&name) && !is_hugepages(name) {
            errors.push(FieldError::invalid(
                path,
                value,
                "must be a standard resource for containers",
            ));
        }
    }
    errors
}

/// A quantity as a number comparable with another of the same resource: thousandths where
/// they fit, whole units otherwise (huge byte counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Amount {
    Milli(i64),
    Units(i64),
}

impl Amount {
    fn parse(text: &str) -> Option<Amount> {
        match quantity::parse_milli(text) {
            Ok(m) => Some(Amount::Milli(m)),
            Err(quantity::QuantityError::TooLarge(_)) => {
                quantity::parse_value(text).ok().map(Amount::Units)
            }
            Err(_) => None,
        }
    }

    fn is_negative(self) -> bool {
        matches!(self, Amount::Milli(v) | Amount::Units(v) if v < 0)
    }

    fn is_whole(self) -> bool {
        match self {
            Amount::Milli(m) => m % 1000 == 0,
            Amount::Units(_) => true,
        }
    }

    /// Compares two amounts of one resource.
    fn cmp_to(self, other: Amount) -> std::cmp::Ordering {
        match (self, other) {
            (Amount::Milli(a), Amount::Milli(b)) | (Amount::Units(a), Amount::Units(b)) => {
                a.cmp(&b)
            }
            (Amount::Milli(a), Amount::Units(b)) => i128::from(a).cmp(&(i128::from(b) * 1000)),
            (Amount::Units(a), Amount::Milli(b)) => (i128::from(a) * 1000).cmp(&i128::from(b)),
        }
    }
}

/// A quantity's text; Kubernetes also accepts a bare number.
fn quantity_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The 400 a pod with an unreadable quantity gets: it fails to decode before validation.
fn undecodable(kind: &KindInfo) -> ApiError {
    ApiError::bad_request(format!(
        "{k} in version \"{v}\" cannot be handled as a {k}: quantities must match the regular expression '{QUANTITY_SYNTAX}'",
        k = kind.kind,
        v = kind.version
    ))
}

/// Reads one resource list (`limits` or `requests`) into names, texts and amounts.
fn read_list(
    kind: &KindInfo,
    list: Option<&Map<String, Value>>,
) -> Result<Vec<(String, String, Amount)>, ApiError> {
    let mut out = Vec::new();
    for (name, v) in list.into_iter().flatten() {
        let text = quantity_text(v).ok_or_else(|| undecodable(kind))?;
        let amount = Amount::parse(&text).ok_or_else(|| undecodable(kind))?;
        out.push((name.clone(), text, amount));
    }
    Ok(out)
}

/// The errors of one container's `resources` at `path`.
fn container_resources(
    kind: &KindInfo,
    resources: &Map<String, Value>,
    path: &str,
) -> Result<Vec<FieldError>, ApiError> {
    let section = |s: &str| resources.get(s).and_then(Value::as_object);
    let limits = read_list(kind, section("limits"))?;
    let requests = read_list(kind, section("requests"))?;
    let (lim_path, req_path) = (format!("{path}.limits"), format!("{path}.requests"));
    let mut errors = Vec::new();
    let quantity_errors = |name: &str, text: &str, amount: Amount, at: &str| {
        let mut errors = resource_name_errors(name, at);
        let value = Value::String(text.to_string());
        if amount.is_negative() {
            errors.push(FieldError::invalid(
                at,
                value.clone(),
                "must be greater than or equal to 0",
            ));
        }
        if is_extended(name) && !amount.is_whole() {
            errors.push(FieldError::invalid(at, value, "must be an integer"));
        }
        errors
    };
    for (name, text, amount) in &limits {
        errors.extend(quantity_errors(
            name,
            text,
            *amount,
            &format!("{lim_path}[{name}]"),
        ));
    }
    for (name, text, amount) in &requests {
        errors.extend(quantity_errors(
            name,
            text,
            *amount,
            &format!("{req_path}[{name}]"),
        ));
        let value = Value::String(text.clone());
        match limits.iter().find(|(n, _, _)| n == name) {
            Some((_, limit_text, limit)) => {
                let order = amount.cmp_to(*limit);
                if order.is_ne() && !overcommit_allowed(name) {
                    errors.push(FieldError::invalid(
                        &req_path,
                        value,
                        format!("must be equal to {name} limit of {limit_text}"),
                    ));
                } else if order.is_gt() {
                    errors.push(FieldError::invalid(
                        &req_path,
                        value,
                        format!("must be less than or equal to {name} limit of {limit_text}"),
                    ));
                }
            }
            None if !overcommit_allowed(name) => errors.push(FieldError::required(
                &lim_path,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
    }
    Ok(errors)
}

/// The resource errors of the containers of a pod spec found at `path` (`spec`,
/// `template.spec`); Err when a quantity cannot be read at all.
pub fn pod_spec_errors(
    kind: &KindInfo,
    spec: &Value,
    path: &str,
) -> Result<Vec<FieldError>, ApiError> {
    let mut errors = Vec::new();
    for list in ["initContainers", "containers"] {
        let containers = spec.get(list).and_then(Value::as_array);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            if let Some(resources) = c.get("resources").and_then(Value::as_object) {
                let at = format!("{path}.{list}[{i}].resources");
                errors.extend(container_resources(kind, resources, &at)?);
            }
        }
    }
    Ok(errors)
}

/// Validates a pod about to be created (after defaulting): 422 with every refused field, or
/// 400 when a quantity cannot be read at all.
pub fn pod(kind: &KindInfo, object: &Value) -> Result<(), ApiError> {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let errors = pod_spec_errors(kind, &spec, "spec")?;
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
