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
