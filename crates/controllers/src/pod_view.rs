//! The controller-manager's own copy of a watched pod: what the controllers read of it. Most of
//! a pod (placement rules, environment, commands, mounts, probes, IPs) is read by none of them,
//! and the controller-manager holds every pod of the cluster.
//!
//! A pod watched in protobuf is read into at least these fields, so the two encodings give the
//! controllers the same pod. A field a controller starts reading has to be kept here, or it
//! reads as unset: `what_the_controllers_read_is_kept_and_the_rest_dropped` guards the fields
//! read today.

use volcano_api::k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Pod, PodSpec, PodStatus,
};
use volcano_api::pod_meta::kept_meta;

/// The pod with only what the controllers read, taken by move: identity, labels, annotations,
/// owners and times (the Job and PodGroup controllers find a pod's owner by them); the
/// scheduler it asks for, its priority class, its containers' resources and its overhead (a
/// bare pod's PodGroup is made from them); the phase and the container statuses (a Job's
/// lifecycle policies read exit codes, restarts and readiness). The controllers only create
/// pods from templates, patch their annotations and delete them, so nothing dropped here is
/// written back.
pub fn controller_pod(pod: Pod) -> Pod {
    let Pod {
        metadata: m,
        spec,
        status,
    } = pod;
    Pod {
        metadata: kept_meta(m),
        spec: spec.map(|s| PodSpec {
            overhead: s.overhead,
            priority_class_name: s.priority_class_name,
            scheduler_name: s.scheduler_name,
            containers: s.containers.into_iter().map(container).collect(),
            init_containers: s
                .init_containers
                .map(|cs| cs.into_iter().map(container).collect()),
            ..PodSpec::default()
        }),
        status: status.map(|s| PodStatus {
            phase: s.phase,
            container_statuses: s
                .container_statuses
                .map(|cs| cs.into_iter().map(container_status).collect()),
            init_container_statuses: s
                .init_container_statuses
                .map(|cs| cs.into_iter().map(container_status).collect()),
            ..PodStatus::default()
        }),
    }
}

/// A container reduced to its name, what it asks for and (for an init container) whether it
/// stays as a sidecar, which decides how its requests count.
fn container(c: Container) -> Container {
    Container {
        name: c.name,
        resources: c.resources,
        restart_policy: c.restart_policy,
        ..Container::default()
    }
}

/// A container's status reduced to its name, readiness, restarts and current state (a
/// terminated state's exit code is what a Job's `exitCode` policy reads).
fn container_status(s: ContainerStatus) -> ContainerStatus {
    ContainerStatus {
        name: s.name,
        ready: s.ready,
        restart_count: s.restart_count,
        state: s.state,
        ..ContainerStatus::default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use super::*;
    use volcano_api::pod_group_of_pod::pod_group_for;
    use volcano_api::pod_meta::LAST_APPLIED;

    /// A bare pod as a kubelet and `kubectl apply` leave it: what the controllers read, and
    /// much that they do not.
    fn running_pod() -> serde_json::Value {
        serde_json::json!({
            "metadata": {"name": "w-0", "namespace": "ns", "uid": "u1", "resourceVersion": "9",
                "generation": 1, "finalizers": ["f"],
                "labels": {"volcano.sh/preemptable": "false"},
                "annotations": {"volcano.sh/task-spec": "worker",
                    "scheduling.volcano.sh/queue-name": "q",
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"big\": true}"},
                "creationTimestamp": "2026-11-28T00:00:00Z",
                "deletionTimestamp": "2026-11-28T00:05:00Z"},
            "spec": {"schedulerName": "volcano", "priorityClassName": "high",
                "overhead": {"cpu": "50m"}, "hostname": "w-0", "subdomain": "j",
                "nodeSelector": {"disk": "ssd"},
                "initContainers": [{"name": "init", "image": "busybox",
                    "resources": {"requests": {"cpu": "2"}}}],
                "containers": [{"name": "main", "image": "trainer", "command": ["run"],
                    "env": [{"name": "RANK", "value": "0"}],
                    "ports": [{"containerPort": 80}],
                    "resources": {"requests": {"cpu": "1"},
                        "limits": {"cpu": "1", "nvidia.com/gpu": "2"}}}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "qosClass": "Burstable",
                "conditions": [{"type": "Ready", "status": "False"}],
                "initContainerStatuses": [{"name": "init", "ready": true, "restartCount": 1,
                    "image": "busybox", "imageID": "sha",
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
                "containerStatuses": [{"name": "main", "ready": false, "restartCount": 2,
                    "image": "trainer", "imageID": "sha", "lastState": {},
                    "state": {"terminated": {"exitCode": 137, "reason": "Error"}}}]},
        })
    }

    #[test]
    fn what_the_controllers_read_is_kept_and_the_rest_dropped() {
        let full: Pod = serde_json::from_value(running_pod()).unwrap();
        let kept = controller_pod(full.clone());

        // Who the pod is, for owner lookups, events, metrics and the mirror's versions.
        let m = &kept.metadata;
        assert_eq!(m.name, full.metadata.name);
        assert_eq!(m.uid.as_deref(), Some("u1"));
        assert_eq!(m.resource_version.as_deref(), Some("9"));
        assert!(m.creation_timestamp.is_some() && m.deletion_timestamp.is_some());
        // A bare pod's PodGroup (name, queue, priority, minimum resources from requests,
        // limits, init containers and overhead, labels and annotations carried over, the pod
        // as owner) is made the same from either, and only for pods naming our scheduler.
        let owners = BTreeMap::new();
        let group = |p: &Pod| serde_json::to_value(pod_group_for(p, "pg", &owners)).unwrap();
        let made = group(&kept);
        assert_eq!(made, group(&full));
        assert_eq!(
            made["spec"]["minResources"]["nvidia.com/gpu"], "2",
            "{made}"
        );
        assert_eq!(made["spec"]["minResources"]["cpu"], "2050m", "{made}");
        assert_eq!(
            made["metadata"]["ownerReferences"][0]["uid"], "u1",
            "{made}"
        );
        let spec = kept.spec.as_ref().unwrap();
        assert_eq!(spec.scheduler_name.as_deref(), Some("volcano"));
        // The lifecycle policies' inputs: phase, exit code, restarts, readiness.
        let status = kept.status.as_ref().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        let main = &status.container_statuses.as_ref().unwrap()[0];
        let terminated = main.state.as_ref().and_then(|s| s.terminated.as_ref());
        assert_eq!(terminated.map(|t| t.exit_code), Some(137));
        assert_eq!((main.ready, main.restart_count), (false, 2));
        let init = &status.init_container_statuses.as_ref().unwrap()[0];
        assert_eq!(init.restart_count, 1);

        // What none of them reads is gone.
        let annotations = m.annotations.as_ref().unwrap();
        assert!(!annotations.contains_key(LAST_APPLIED));
        assert_eq!(annotations.len(), 2);
        let c = &spec.containers[0];
        assert!(c.env.is_none() && c.image.is_none() && c.ports.is_none());
        assert!(spec.hostname.is_none() && spec.node_selector.is_none() && spec.volumes.is_none());
        assert!(status.pod_ip.is_none() && status.conditions.is_none());
        assert!(main.image.is_empty() && main.last_state.is_none());
        assert!(m.finalizers.is_none() && m.generation.is_none());
    }

    #[test]
    fn a_replicas_owner_is_kept_whole() {
        let mut v = running_pod();
        v["metadata"]["ownerReferences"] = serde_json::json!([{"apiVersion": "apps/v1",
            "kind": "ReplicaSet", "name": "rs", "uid": "o1", "controller": true,
            "blockOwnerDeletion": true}]);
        let full: Pod = serde_json::from_value(v).unwrap();
        let kept = controller_pod(full.clone());
        assert_eq!(
            kept.metadata.owner_references,
            full.metadata.owner_references
        );
        assert!(kept.metadata.owner_references.is_some());
    }
}
