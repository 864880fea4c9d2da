//! Resource sums for the invariants, done from the Kubernetes objects alone: never from the
//! scheduler's own model, which is what the invariants judge.

use std::collections::BTreeMap;

use volcano_api::k8s_openapi::api::core::v1::{Node, Pod};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::keys;
use volcano_api::resources::{PODS, parse_resource_list, pod_requests};
use volcano_api::scheduling::ResourceList;

/// A resource vector by name, in canonical units (milli-CPU, bytes, thousandths of scalars).
pub type Res = BTreeMap<String, i64>;

/// Kubernetes' default pod limit of a node that declares none, in thousandths.
const DEFAULT_PODS: i64 = 110_000;

/// Adds `r` into `acc`, saturating: a sum over hostile input must not panic.
pub fn add(acc: &mut Res, r: &Res) {
    for (k, v) in r {
        let e = acc.entry(k.clone()).or_insert(0);
        *e = e.saturating_add(*v);
    }
}

/// A resource list in canonical units; a list that does not parse counts as nothing (loaders
/// refuse such input before a session ever sees it).
pub fn parse(list: Option<&ResourceList>) -> Res {
    list.and_then(|l| parse_resource_list(l).ok())
        .map(|v| v.into_iter().collect())
        .unwrap_or_default()
}

/// What a pod takes from its node, as Kubernetes counts it, plus one `pods`.
pub fn pod_request(p: &Pod) -> Res {
    let mut r: Res = p
        .spec
        .as_ref()
        .and_then(|s| pod_requests(s).ok())
        .unwrap_or_default();
    let pods = r.entry(PODS.to_string()).or_insert(0);
    *pods = pods.saturating_add(1000);
    r
}

/// Whether a pod names no request but its pod slot (BestEffort, as Volcano counts a pending
/// member ready).
pub fn is_best_effort(p: &Pod) -> bool {
    pod_request(p).len() == 1
}

/// A node's allocatable, with the default pod limit when it names none.
pub fn node_allocatable(n: &Node) -> Res {
    let mut r = parse(n.status.as_ref().and_then(|s| s.allocatable.as_ref()));
    r.entry(PODS.to_string()).or_insert(DEFAULT_PODS);
    r
}

/// Whether `used ≤ limit` on every resource `used` names; a resource the limit does not name
/// has none to give, as the scheduler's own fit counts it.
pub fn fits(used: &Res, limit: &Res) -> bool {
    used.iter()
        .all(|(k, v)| *v <= limit.get(k).copied().unwrap_or(0))
}

/// Whether `used ≤ limit` on every resource `limit` names (a queue's capability bounds only
/// what it lists).
pub fn within(used: &Res, limit: &Res) -> bool {
    limit
        .iter()
        .all(|(k, l)| used.get(k).copied().unwrap_or(0) <= *l)
}

/// `ns/name`, with `default` for a missing namespace, as the scheduler keys objects.
pub fn key(m: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        m.namespace.as_deref().unwrap_or("default"),
        m.name.as_deref().unwrap_or_default()
    )
}

/// The node a pod is bound to.
pub fn node_of(p: &Pod) -> Option<&str> {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// A pod's phase, `Pending` when it has none.
pub fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

/// Whether a pod has ended (`Succeeded` or `Failed`) and so holds nothing on its node.
pub fn finished(p: &Pod) -> bool {
    matches!(phase(p), "Succeeded" | "Failed")
}

/// `ns/group` of the PodGroup a pod belongs to.
pub fn group_of(p: &Pod) -> Option<String> {
    let g = p.metadata.annotations.as_ref()?.get(keys::GROUP_NAME)?;
    Some(format!(
        "{}/{g}",
        p.metadata.namespace.as_deref().unwrap_or("default")
    ))
}

/// Compact `name=amount` text of a vector, for messages.
pub fn show(r: &Res) -> String {
    r.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}
