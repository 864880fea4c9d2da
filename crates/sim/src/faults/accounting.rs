//! Resource sums for the invariants, done from the objects alone (never from the scheduler's
//! own model, which is what is being checked).

use std::collections::BTreeMap;

use volcano_api::k8s_openapi::api::core::v1::{Node, Pod};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::keys;
use volcano_api::resources::{parse_resource_list, pod_requests};
use volcano_api::scheduling::ResourceList;

/// A resource vector by name, in canonical units (milli-CPU, bytes, thousandths).
pub(crate) type Res = BTreeMap<String, i64>;

/// The `pods` resource, counted like the others in thousandths.
const PODS: &str = "pods";

/// Kubernetes' default pod limit of a node that declares none.
const DEFAULT_PODS: i64 = 110_000;

/// Adds `r` into `acc`.
pub(crate) fn add(acc: &mut Res, r: &Res) {
    for (k, v) in r {
        let e = acc.entry(k.clone()).or_insert(0);
        *e = e.saturating_add(*v);
    }
}

/// A resource list in canonical units; what does not parse counts as nothing (the loader
/// refuses such input before a run starts).
pub(crate) fn parse(list: Option<&ResourceList>) -> Res {
    list.and_then(|l| parse_resource_list(l).ok())
        .map(|v| v.into_iter().collect())
        .unwrap_or_default()
}

/// What a pod takes from its node, plus one `pods`.
pub(crate) fn pod_request(p: &Pod) -> Res {
    let mut r: Res = p
        .spec
        .as_ref()
        .and_then(|s| pod_requests(s).ok())
        .unwrap_or_default();
    *r.entry(PODS.to_string()).or_insert(0) += 1000;
    r
}

/// A node's allocatable, with the default pod limit when it names none.
pub(crate) fn node_allocatable(n: &Node) -> Res {
    let mut r = parse(n.status.as_ref().and_then(|s| s.allocatable.as_ref()));
    r.entry(PODS.to_string()).or_insert(DEFAULT_PODS);
    r
}

/// Whether `used` stays within `limit` on CPU, memory, pods and every resource `limit` names
/// (a request for something the node does not list is not the node's to account).
pub(crate) fn fits_node(used: &Res, limit: &Res) -> bool {
    used.iter().all(|(k, v)| match limit.get(k) {
        Some(l) => v <= l,
        None => !matches!(k.as_str(), "cpu" | "memory") || *v <= 0,
    })
}

/// Whether `used` stays within `limit` on every resource `limit` names.
pub(crate) fn within(used: &Res, limit: &Res) -> bool {
    limit
        .iter()
        .all(|(k, l)| used.get(k).copied().unwrap_or(0) <= *l)
}

/// `ns/name`, with `default` for a missing namespace as the scheduler keys objects.
pub(crate) fn key(m: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        m.namespace.as_deref().unwrap_or("default"),
        m.name.as_deref().unwrap_or_default()
    )
}

/// The node a pod is bound to.
pub(crate) fn node_of(p: &Pod) -> Option<&str> {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// A pod's phase.
pub(crate) fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

/// `ns/group` of the PodGroup a pod belongs to.
pub(crate) fn group_of(p: &Pod) -> Option<String> {
    let g = p.metadata.annotations.as_ref()?.get(keys::GROUP_NAME)?;
    Some(format!(
        "{}/{g}",
        p.metadata.namespace.as_deref().unwrap_or("default")
    ))
}

/// Compact `name=amount` text of a vector, for messages.
pub(crate) fn show(r: &Res) -> String {
    r.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}
