//! The resource rules Kubernetes applies to a pod's containers on create
//! (`ValidateResourceRequirements` in `pkg/apis/core/validation`), which Volcano's Job webhook
//! also applies to each task's template so that a Job whose pods the API server would refuse is
//! refused at once. The local API server checks pods with the same rules.
//!
//! An extended resource (a name with a domain other than `kubernetes.io`, such as
//! `nvidia.com/gpu`) cannot be overcommitted: it must have a limit, its request must equal the
//! limit, and it is counted in whole units.

use serde_json::{Map, Value};
use volcano_api::quantity;

/// One refused field, in Kubernetes' words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceProblem {
    /// `<field>: Invalid value: "<value>": <detail>`.
    Invalid {
        /// The field's path.
        field: String,
        /// The value refused.
        value: String,
        /// Why.
        detail: String,
    },
    /// `<field>: Required value: <detail>`.
    Required {
        /// The field's path.
        field: String,
        /// Why.
        detail: String,
    },
}

impl ResourceProblem {
    fn invalid(field: &str, value: &str, detail: impl Into<String>) -> Self {
        ResourceProblem::Invalid {
            field: field.to_string(),
            value: value.to_string(),
            detail: detail.into(),
        }
    }

    fn required(field: &str, detail: impl Into<String>) -> Self {
        ResourceProblem::Required {
            field: field.to_string(),
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for ResourceProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResourceProblem::Invalid {
                field,
                value,
                detail,
            } => write!(f, "{field}: Invalid value: {value:?}: {detail}"),
            ResourceProblem::Required { field, detail } => {
                write!(f, "{field}: Required value: {detail}")
            }
        }
    }
}

/// A quantity that cannot be read at all: the API server fails to decode such an object before
/// it validates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("quantities must match the regular expression '{QUANTITY_SYNTAX}'")]
pub struct Unreadable;

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
pub const QUANTITY_SYNTAX: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

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
fn resource_name_errors(name: &str, path: &str) -> Vec<ResourceProblem> {
    let mut errors = Vec::new();
    if !name.contains('/') {
        if !STANDARD.contains(&name) && !is_hugepages(name) {
            errors.push(ResourceProblem::invalid(
                path,
                name,
                "must be a standard resource type or fully qualified",
            ));
        }
        if !STANDARD_CONTAINER.contains(&name) && !is_hugepages(name) {
            errors.push(ResourceProblem::invalid(
                path,
                name,
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

/// Reads one resource list (`limits` or `requests`) into names, texts and amounts.
fn read_list(
    list: Option<&Map<String, Value>>,
) -> Result<Vec<(String, String, Amount)>, Unreadable> {
    let mut out = Vec::new();
    for (name, v) in list.into_iter().flatten() {
        let text = quantity_text(v).ok_or(Unreadable)?;
        let amount = Amount::parse(&text).ok_or(Unreadable)?;
        out.push((name.clone(), text, amount));
    }
    Ok(out)
}

/// The errors of one container's `resources` at `path`.
fn container_resources(
    resources: &Map<String, Value>,
    path: &str,
) -> Result<Vec<ResourceProblem>, Unreadable> {
    let section = |s: &str| resources.get(s).and_then(Value::as_object);
    let limits = read_list(section("limits"))?;
    let requests = read_list(section("requests"))?;
    let (lim_path, req_path) = (format!("{path}.limits"), format!("{path}.requests"));
    let mut errors = Vec::new();
    let quantity_errors = |name: &str, text: &str, amount: Amount, at: &str| {
        let mut errors = resource_name_errors(name, at);
        if amount.is_negative() {
            errors.push(ResourceProblem::invalid(
                at,
                text,
                "must be greater than or equal to 0",
            ));
        }
        if is_extended(name) && !amount.is_whole() {
            errors.push(ResourceProblem::invalid(at, text, "must be an integer"));
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
        match limits.iter().find(|(n, _, _)| n == name) {
            Some((_, limit_text, limit)) => {
                let order = amount.cmp_to(*limit);
                if order.is_ne() && !overcommit_allowed(name) {
                    errors.push(ResourceProblem::invalid(
                        &req_path,
                        text,
                        format!("must be equal to {name} limit of {limit_text}"),
                    ));
                } else if order.is_gt() {
                    errors.push(ResourceProblem::invalid(
                        &req_path,
                        text,
                        format!("must be less than or equal to {name} limit of {limit_text}"),
                    ));
                }
            }
            None if !overcommit_allowed(name) => errors.push(ResourceProblem::required(
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
pub fn pod_spec_problems(spec: &Value, path: &str) -> Result<Vec<ResourceProblem>, Unreadable> {
    let mut errors = Vec::new();
    for list in ["initContainers", "containers"] {
        let containers = spec.get(list).and_then(Value::as_array);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            if let Some(resources) = c.get("resources").and_then(Value::as_object) {
                let at = format!("{path}.{list}[{i}].resources");
                errors.extend(container_resources(resources, &at)?);
            }
        }
    }
    Ok(errors)
}

/// Kubernetes' defaulting of a missing request to the limit of the same resource.
fn default_requests(spec: &mut Value) {
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers {
            let Some(limits) = c
                .pointer("/resources/limits")
                .and_then(Value::as_object)
                .cloned()
            else {
                continue;
            };
            let Some(resources) = c.get_mut("resources").and_then(Value::as_object_mut) else {
                continue;
            };
            let requests = resources
                .entry("requests")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(requests) = requests.as_object_mut() {
                for (name, qty) in limits {
                    requests.entry(name).or_insert(qty);
                }
            }
        }
    }
}

/// The resource rules on each task's pod template of the Job `object`, after the defaulting
/// of requests from limits, worded as Volcano's `validateTaskTemplate`:
/// `spec.task[0].template.spec.containers[0].resources.limits: Required value: ... `.
pub fn check_task_templates(object: &Value) -> Result<(), String> {
    let tasks = object.pointer("/spec/tasks").and_then(Value::as_array);
    let mut message = String::new();
    for (index, task) in tasks.into_iter().flatten().enumerate() {
        let mut spec = task
            .pointer("/template/spec")
            .cloned()
            .unwrap_or(Value::Null);
        default_requests(&mut spec);
        let errors = pod_spec_problems(&spec, "template.spec").map_err(|e| e.to_string())?;
        if !errors.is_empty() {
            message.push_str(&format!("spec.task[{index}]."));
            for e in errors {
                message.push_str(&format!("{e}. "));
            }
        }
    }
    if message.is_empty() {
        Ok(())
    } else {
        Err(message)
    }
}
