//! A scheduler's own copy of a watched pod: only what it reads. The rest (environment, mounts,
//! probes, other volumes, container statuses, IPs) is most of a pod and is never read.

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus};
use volcano_api::k8s_openapi;
use volcano_api::pod_meta::kept_meta;
use volcano_api::scheduling::ResourceList;

use crate::framework::POD_SCHEDULED;

/// The resources a container may ask for and still be folded into its pod's overhead
/// ([`fold_into_overhead`]): none of them is read per container (GPUs are).
const POD_LEVEL_RESOURCES: [&str; 3] = ["cpu", "memory", "ephemeral-storage"];

/// The pod with only what the scheduler reads of it, taken by move: what a task is made of
/// (requests, overhead, gates, priority, annotations, status phase, nomination and
/// `PodScheduled` condition), what plugins read (identity, labels and annotations, placement
/// constraints, host ports, claims and CSI volumes), and what a runtime writing the
/// scheduler's decisions reads (resourceVersion, deletion, uid, creation time, owners). A
/// scheduler only ever patches pods, so nothing dropped here is written back.
pub fn slim_pod(pod: Pod) -> Pod {
    let Pod {
        metadata: m,
        spec,
        status,
    } = pod;
    let spec = spec.map(|s| {
        let mut spec = PodSpec {
            affinity: s.affinity,
            node_name: s.node_name,
            node_selector: s.node_selector,
            overhead: s.overhead,
            preemption_policy: s.preemption_policy,
            priority: s.priority,
            priority_class_name: s.priority_class_name,
            scheduler_name: s.scheduler_name,
            scheduling_gates: s.scheduling_gates,
            tolerations: s.tolerations,
            topology_spread_constraints: s.topology_spread_constraints,
            containers: s.containers.into_iter().map(slim_container).collect(),
            init_containers: s
                .init_containers
                .map(|cs| cs.into_iter().map(slim_container).collect()),
            // The volumes the volume predicates and the binder read.
            volumes: s.volumes.map(|vs| {
                vs.into_iter()
                    .filter(|v| {
                        v.persistent_volume_claim.is_some()
                            || v.ephemeral.is_some()
                            || v.csi.is_some()
                    })
                    .collect()
            }),
            ..Default::default()
        };
        fold_into_overhead(&mut spec);
        spec
    });
    let status = status.map(|s| PodStatus {
        phase: s.phase,
        start_time: s.start_time,
        nominated_node_name: s.nominated_node_name,
        // `PodScheduled` is the one condition the scheduler reads and writes (by a patch of
        // that condition alone).
        conditions: s.conditions.map(|cs| {
            cs.into_iter()
                .filter(|c| c.type_ == POD_SCHEDULED)
                .collect()
        }),
        ..Default::default()
    });
    Pod {
        metadata: kept_meta(m),
        spec,
        status,
    }
}

/// A container reduced to what the scheduler reads: its name, what it asks for, the ports it
/// takes on the node and (for an init container) whether it stays as a sidecar.
fn slim_container(c: Container) -> Container {
    let ports: Option<Vec<_>> = c.ports.map(|ps| {
        ps.into_iter()
            .filter(|p| p.host_port.is_some_and(|hp| hp > 0))
            .collect()
    });
    Container {
        name: c.name,
        resources: c.resources,
        ports: ports.filter(|ps| !ps.is_empty()),
        restart_policy: c.restart_policy,
        ..Default::default()
    }
}

/// The most common pod, one container asking for cpu, memory or ephemeral storage and taking
/// no host port, with no init container and no overhead of its own: its container is dropped
/// and what it asks for becomes the pod's overhead. A pod asks for its containers' requests
/// plus its overhead, so the scheduler reads the same request, and a `Container` takes 2 KB
/// before any field is set. The container's limits stand where it sets no request, as the
/// API server defaults them.
fn fold_into_overhead(spec: &mut PodSpec) {
    let [c] = spec.containers.as_slice() else {
        return;
    };
    let plain = |l: Option<&ResourceList>| {
        l.into_iter()
            .flatten()
            .all(|(name, _)| POD_LEVEL_RESOURCES.contains(&name.as_str()))
    };
    let resources = c.resources.as_ref();
    let foldable = spec.init_containers.as_ref().is_none_or(Vec::is_empty)
        && spec.overhead.is_none()
        && c.ports.is_none()
        && c.restart_policy.is_none()
        && plain(resources.and_then(|r| r.requests.as_ref()))
        && plain(resources.and_then(|r| r.limits.as_ref()));
    if !foldable {
        return;
    }
    // Taken, not popped: the emptied list lets go of its 2 KB buffer too.
    let Some(c) = std::mem::take(&mut spec.containers).pop() else {
        return;
    };
    let (limits, requests) = c
        .resources
        .map(|r| (r.limits, r.requests))
        .unwrap_or_default();
    let mut asked: ResourceList = limits.unwrap_or_default();
    asked.extend(requests.unwrap_or_default());
    spec.overhead = (!asked.is_empty()).then_some(asked);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).unwrap_or_default()
    }

    fn overhead(p: &Pod) -> Option<&ResourceList> {
        p.spec.as_ref().and_then(|s| s.overhead.as_ref())
    }

    #[test]
    fn one_plain_container_becomes_the_pods_overhead_with_requests_over_limits() {
        let p = slim_pod(pod(json!({"containers": [{"name": "c", "image": "busybox",
            "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "1"}}}]})));
        assert!(p.spec.as_ref().is_some_and(|s| s.containers.is_empty()));
        let want: ResourceList = [("cpu", "1"), ("memory", "1Gi")]
            .into_iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    k8s_openapi::apimachinery::pkg::api::resource::Quantity(v.into()),
                )
            })
            .collect();
        assert_eq!(overhead(&p), Some(&want));
    }

    #[test]
    fn containers_read_one_by_one_are_kept() {
        for spec in [
            // A GPU is read per container.
            json!({"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}),
            // A host port is read per container.
            json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}),
            // Init containers take the maximum, not the sum.
            json!({"containers": [{"name": "c"}], "initContainers": [{"name": "i"}]}),
            // An overhead of its own.
            json!({"containers": [{"name": "c"}], "overhead": {"cpu": "10m"}}),
            json!({"containers": [{"name": "a"}, {"name": "b"}]}),
        ] {
            let p = slim_pod(pod(spec.clone()));
            let kept = p.spec.as_ref().map_or(0, |s| s.containers.len());
            assert!(kept > 0, "{spec}");
        }
    }
}
