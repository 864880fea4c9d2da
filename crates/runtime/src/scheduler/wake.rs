//! Which watched changes start a session at once, rather than waiting for the period's tick:
//! those that may let a session place or evict something it could not before. A change that
//! only echoes this scheduler's own writes (a status, a condition, a bind it assumed) does not,
//! so sessions follow new work, not their own output.

use volcano_api::k8s_openapi::api::core::v1::{Node, Pod};
use volcano_api::scheduling::PodGroup;
use volcano_api::{WatchEvent, keys};

/// Whether `event` may give a session new work.
pub fn opens_work(event: &WatchEvent) -> bool {
    match event {
        WatchEvent::Pod(old, new) => match (old, new) {
            (Some(old), Some(new)) => pod_changed(old, new),
            // A new pending pod is work; a deleted or new bound one frees or takes room.
            _ => true,
        },
        WatchEvent::PodGroup(Some(old), Some(new)) => {
            old.spec != new.spec || old.metadata.annotations != new.metadata.annotations
        }
        WatchEvent::Queue(Some(old), Some(new)) => {
            old.spec != new.spec
                || old.status.as_ref().map(|s| &s.state) != new.status.as_ref().map(|s| &s.state)
        }
        WatchEvent::Node(Some(old), Some(new)) => node_changed(old, new),
        WatchEvent::PodGroup(..)
        | WatchEvent::Queue(..)
        | WatchEvent::Node(..)
        | WatchEvent::PriorityClass(..)
        | WatchEvent::Namespace(..)
        | WatchEvent::PersistentVolume(..)
        | WatchEvent::PersistentVolumeClaim(..)
        | WatchEvent::StorageClass(..)
        | WatchEvent::CSINode(..)
        | WatchEvent::HyperNode(..) => true,
        WatchEvent::Job(..)
        | WatchEvent::Command(..)
        | WatchEvent::CronJob(..)
        | WatchEvent::JobFlow(..)
        | WatchEvent::JobTemplate(..)
        | WatchEvent::ReplicaSet(..)
        | WatchEvent::StatefulSet(..)
        | WatchEvent::Deployment(..) => false,
    }
}

/// The pod a new PodGroup was made for, when the controller made it for one pod (a bare
/// pod's PodGroup is owned by the pod): that pod's annotation naming it follows at once, and
/// it, not the PodGroup, starts the session, which then enqueues and allocates the gang in one
/// go (a session for the empty PodGroup would only write `Inqueue`, one more status write per
/// pod). `None` for any other PodGroup, a Volcano Job's among them: its pods come only once
/// it is admitted.
pub fn made_for_pod(pg: &PodGroup) -> Option<&str> {
    pg.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.kind == "Pod" && o.api_version == "v1")
        .map(|o| o.name.as_str())
}

/// Whether `pod` names `pg` as its PodGroup already (under either annotation the scheduler
/// cache reads).
pub fn names(pod: &Pod, pg: &PodGroup) -> bool {
    let Some(a) = pod.metadata.annotations.as_ref() else {
        return false;
    };
    [keys::GROUP_NAME, keys::VOLCANO_GROUP_NAME]
        .iter()
        .filter_map(|k| a.get(*k))
        .any(|g| Some(g) == pg.metadata.name.as_ref())
}

/// A pod's change matters to placement when where it runs, whether it still runs, what it
/// asks for or which gang it belongs to changed; not for its conditions or nomination.
fn pod_changed(old: &Pod, new: &Pod) -> bool {
    let node = |p: &Pod| p.spec.as_ref().and_then(|s| s.node_name.clone());
    let phase = |p: &Pod| p.status.as_ref().and_then(|s| s.phase.clone());
    node(old) != node(new)
        || phase(old) != phase(new)
        || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
        || old.metadata.annotations != new.metadata.annotations
        || old.metadata.labels != new.metadata.labels
        || old.spec != new.spec
}

/// A node's change matters when what it offers or who may use it changed; not its heartbeats.
fn node_changed(old: &Node, new: &Node) -> bool {
    let ready = |n: &Node| {
        n.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .map(|c| c.status.clone())
    };
    let allocatable = |n: &Node| n.status.as_ref().and_then(|s| s.allocatable.clone());
    let capacity = |n: &Node| n.status.as_ref().and_then(|s| s.capacity.clone());
    old.spec != new.spec
        || old.metadata.labels != new.metadata.labels
        || allocatable(old) != allocatable(new)
        || capacity(old) != capacity(new)
        || ready(old) != ready(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use volcano_api::k8s_openapi::api::core::v1::{PodCondition, PodSpec, PodStatus};

    fn pod(node: Option<&str>) -> Arc<Pod> {
        Arc::new(Pod {
            spec: Some(PodSpec {
                node_name: node.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    #[test]
    fn new_pods_and_binds_by_others_wake_a_session_but_condition_echoes_do_not() {
        assert!(opens_work(&WatchEvent::Pod(None, Some(pod(None)))));
        assert!(opens_work(&WatchEvent::Pod(Some(pod(None)), None)));
        assert!(opens_work(&WatchEvent::Pod(
            Some(pod(None)),
            Some(pod(Some("n1")))
        )));
        let mut waiting = pod(None);
        Arc::make_mut(&mut waiting).status = Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "PodScheduled".to_string(),
                status: "False".to_string(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        assert!(!opens_work(&WatchEvent::Pod(
            Some(pod(None)),
            Some(waiting)
        )));
        let mut grouped = pod(None);
        Arc::make_mut(&mut grouped).metadata.annotations =
            Some([("scheduling.k8s.io/group-name".to_string(), "pg".to_string())].into());
        assert!(opens_work(&WatchEvent::Pod(Some(pod(None)), Some(grouped))));
    }

    #[test]
    fn a_bare_pods_pod_group_is_known_by_its_owner() {
        let mut pg = PodGroup::new("podgroup-1", Default::default());
        assert_eq!(made_for_pod(&pg), None);
        pg.metadata.owner_references = Some(vec![
            volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "v1".to_string(),
                kind: "Pod".to_string(),
                name: "p".to_string(),
                ..Default::default()
            },
        ]);
        assert_eq!(made_for_pod(&pg), Some("p"));
        let mut p = pod(None);
        assert!(!names(&p, &pg));
        Arc::make_mut(&mut p).metadata.annotations =
            Some([(keys::GROUP_NAME.to_string(), "podgroup-1".to_string())].into());
        assert!(names(&p, &pg));
    }

    #[test]
    fn a_node_heartbeat_does_not_wake_a_session_and_a_new_label_does() {
        let node = Box::new(Node::default());
        let mut beat = node.clone();
        beat.metadata.resource_version = Some("2".to_string());
        assert!(!opens_work(&WatchEvent::Node(
            Some(node.clone()),
            Some(beat)
        )));
        let mut labelled = node.clone();
        labelled.metadata.labels = Some([("zone".to_string(), "a".to_string())].into());
        assert!(opens_work(&WatchEvent::Node(Some(node), Some(labelled))));
    }
}
