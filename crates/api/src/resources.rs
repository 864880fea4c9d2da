//! Resource lists in canonical integer units: bytes for memory and storage, thousandths
//! (milli-units) for CPU, `pods` and every scalar resource such as `nvidia.com/gpu`.

use crate::quantity::{self, QuantityError};
use crate::scheduling::ResourceList;

/// Resource name of CPU.
pub const CPU: &str = "cpu";
/// Resource name of memory.
pub const MEMORY: &str = "memory";
/// Resource name of the pod-count limit.
pub const PODS: &str = "pods";

/// Whether `name` is measured in bytes (memory and storage) rather than thousandths.
pub fn is_byte_resource(name: &str) -> bool {
    name == MEMORY
        || name == "ephemeral-storage"
        || name == "storage"
        || name.starts_with("hugepages-")
}

/// The amount of `name` in canonical units: bytes for byte resources, thousandths otherwise.
/// Negative amounts are rejected: no resource a scenario can declare is negative.
pub fn canonical_amount(name: &str, text: &str) -> Result<i64, QuantityError> {
    let v = if is_byte_resource(name) {
        quantity::parse_value(text)?
    } else {
        quantity::parse_milli(text)?
    };
    if v < 0 {
        return Err(QuantityError::Negative(text.to_string()));
    }
    Ok(v)
}

/// Formats a canonical amount of `name` back into a Kubernetes quantity string.
pub fn format_amount(name: &str, amount: i64) -> String {
    if is_byte_resource(name) {
        quantity::format_bytes(amount)
    } else {
        quantity::format_milli(amount)
    }
}

/// Formats a canonical amount of `name` for a message a person reads: memory in Gi/Mi/Ki
/// (rounded down to two decimals when not exact), CPU and scalars in units or `m`.
pub fn format_amount_human(name: &str, amount: i64) -> String {
    if is_byte_resource(name) {
        quantity::format_bytes_human(amount)
    } else {
        quantity::format_milli(amount)
    }
}

/// Parses every entry of a resource list; the error carries the offending resource name.
pub fn parse_resource_list(
    list: &ResourceList,
) -> Result<Vec<(String, i64)>, (String, QuantityError)> {
    list.iter()
        .filter(|(name, _)| !name.starts_with("count/"))
        .map(|(name, q)| {
            canonical_amount(name, &q.0)
                .map(|v| (name.clone(), v))
                .map_err(|e| (name.clone(), e))
        })
        .collect()
}

/// What a pod asks for, in canonical units: Σ containers, at least each init container, plus
/// overhead. A limit without a request counts as the request, as the API server's defaulting
/// makes it. The error carries the resource name of a quantity that does not parse.
pub fn pod_requests(
    spec: &k8s_openapi::api::core::v1::PodSpec,
) -> Result<std::collections::BTreeMap<String, i64>, (String, QuantityError)> {
    use std::collections::BTreeMap;
    fn container(
        c: &k8s_openapi::api::core::v1::Container,
    ) -> Result<Vec<(String, i64)>, (String, QuantityError)> {
        let res = c.resources.as_ref();
        let mut merged: ResourceList = res.and_then(|r| r.limits.clone()).unwrap_or_default();
        merged.extend(res.and_then(|r| r.requests.clone()).unwrap_or_default());
        parse_resource_list(&merged)
    }
    let mut total: BTreeMap<String, i64> = BTreeMap::new();
    for c in &spec.containers {
        for (name, v) in container(c)? {
            let e = total.entry(name).or_default();
            *e = e.saturating_add(v);
        }
    }
    for c in spec.init_containers.iter().flatten() {
        for (name, v) in container(c)? {
            let e = total.entry(name).or_default();
            *e = (*e).max(v);
        }
    }
    if let Some(overhead) = &spec.overhead {
        for (name, v) in parse_resource_list(overhead)? {
            let e = total.entry(name).or_default();
            *e = e.saturating_add(v);
        }
    }
    Ok(total)
}
