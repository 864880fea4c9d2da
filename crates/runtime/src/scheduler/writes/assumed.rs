//! What the writer assumed in the mirror before the API server answered, and how it is put
//! back when a write fails or assumed again when a stale watch event replaced it.

use volcano_api::NamespacedName;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::store::Stored;
use volcano_scheduler::cache::{nominate_pod, set_pod_scheduled};
use volcano_scheduler::framework::{POD_SCHEDULED, PodUnschedulable};

use super::status::{StatusKey, StatusWrite};
use crate::mirror::ClusterMirror;

/// A pod as it was before a write in flight was assumed on it, and the resourceVersion the
/// assumption was made at.
pub(super) struct Assumed {
    /// The pod before.
    pub before: Pod,
    /// Its resourceVersion then.
    pub version: Option<String>,
}

/// A status write assumed in the mirror.
pub(super) struct AssumedStatus {
    /// The dispatch it came from.
    pub generation: u64,
    /// What was assumed.
    pub write: StatusWrite,
    /// The resourceVersion it was written at, once written.
    pub written_at: Option<u64>,
}

/// A pod's resourceVersion.
pub(super) fn version(p: &Pod) -> Option<String> {
    p.metadata.resource_version.clone()
}

/// Whether `p` is the pod `before` was: a pod deleted and made again under its name is
/// another pod, with another uid.
pub(super) fn same_pod(p: &Pod, before: &Pod) -> bool {
    p.metadata.uid == before.metadata.uid
}

/// Puts a pod back as it was before a failed write was assumed on it, unless a watch event
/// replaced it since (that is the API server's word, newer than both).
pub(super) fn put_back(mirror: &mut ClusterMirror, key: &NamespacedName, a: Assumed) {
    if mirror.pod(key).is_some_and(|p| version(p) == a.version) {
        mirror.assume_pod(key, |p| *p = a.before);
    }
}

/// Puts back the value from before a failed status write, where the mirror still holds the
/// value written.
pub(super) fn undo_status(mirror: &mut ClusterMirror, key: &StatusKey, write: StatusWrite) {
    match (key, write) {
        (StatusKey::PodGroup(k), StatusWrite::PodGroup { status, before })
            if mirror
                .pod_group(k)
                .is_some_and(|pg| pg.status.as_ref() == Some(&status)) =>
        {
            mirror.assume_pod_group(k, |pg| pg.status = before);
        }
        (StatusKey::Queue(name), StatusWrite::Queue { allocated, before }) => {
            let holds = mirror
                .indexed()
                .get::<volcano_api::scheduling::Queue>(&NamespacedName::cluster(name))
                .and_then(|q| q.status.as_ref())
                .is_some_and(|s| s.allocated.as_ref() == Some(&allocated));
            if holds {
                mirror.assume_queue(name, |q| {
                    q.status.get_or_insert_with(Default::default).allocated = before;
                });
            }
        }
        (
            StatusKey::PodScheduled(k),
            StatusWrite::PodScheduled {
                condition, before, ..
            },
        ) if mirror
            .pod(k)
            .is_some_and(|p| holds_condition(p, &condition)) =>
        {
            mirror.assume_pod(k, |p| {
                p.status.get_or_insert_with(Default::default).conditions = before;
            });
        }
        (StatusKey::Nomination(k), StatusWrite::Nomination { node, before }) => {
            let holds = mirror
                .pod(k)
                .and_then(|p| p.status.as_ref())
                .is_some_and(|s| s.nominated_node_name.as_ref() == Some(&node));
            if holds {
                mirror.assume_pod(k, |p| {
                    p.status
                        .get_or_insert_with(Default::default)
                        .nominated_node_name = before;
                });
            }
        }
        _ => {}
    }
}

/// The resourceVersion the mirror holds of a status write's object, as a number; `None` when
/// the object is gone (or its version is not a number: then nothing is held back for it).
pub(super) fn status_version(mirror: &ClusterMirror, key: &StatusKey) -> Option<u64> {
    let v = match key {
        StatusKey::PodGroup(k) => mirror.pod_group(k)?.meta().resource_version.as_deref(),
        StatusKey::Queue(name) => mirror
            .indexed()
            .get::<volcano_api::scheduling::Queue>(&NamespacedName::cluster(name))?
            .meta()
            .resource_version
            .as_deref(),
        StatusKey::PodScheduled(k) | StatusKey::Nomination(k) => {
            mirror.pod(k)?.meta().resource_version.as_deref()
        }
    };
    v?.parse().ok()
}

/// Assumes a status write in the mirror where it does not hold it already.
pub(super) fn assume_status(mirror: &mut ClusterMirror, key: &StatusKey, w: &StatusWrite) {
    match (key, w) {
        (StatusKey::PodGroup(k), StatusWrite::PodGroup { status, .. })
            if mirror
                .pod_group(k)
                .is_some_and(|pg| pg.status.as_ref() != Some(status)) =>
        {
            mirror.assume_pod_group(k, |pg| pg.status = Some(status.clone()));
        }
        (StatusKey::Queue(name), StatusWrite::Queue { allocated, .. }) => {
            let differs = mirror
                .indexed()
                .get::<volcano_api::scheduling::Queue>(&NamespacedName::cluster(name))
                .is_some_and(|q| {
                    q.status.as_ref().and_then(|s| s.allocated.as_ref()) != Some(allocated)
                });
            if differs {
                mirror.assume_queue(name, |q| {
                    q.status.get_or_insert_with(Default::default).allocated =
                        Some(allocated.clone());
                });
            }
        }
        (StatusKey::PodScheduled(k), StatusWrite::PodScheduled { condition, .. })
            if mirror
                .pod(k)
                .is_some_and(|p| !holds_condition(p, condition)) =>
        {
            mirror.assume_pod(k, |p| set_pod_scheduled(p, condition));
        }
        (StatusKey::Nomination(k), StatusWrite::Nomination { node, .. }) => {
            let differs = mirror.pod(k).is_some_and(|p| {
                p.status
                    .as_ref()
                    .and_then(|s| s.nominated_node_name.as_ref())
                    != Some(node)
            });
            if differs {
                mirror.assume_pod(k, |p| nominate_pod(p, node));
            }
        }
        _ => {}
    }
}

/// Whether the pod carries `c` as its `PodScheduled` condition.
fn holds_condition(p: &Pod, c: &PodUnschedulable) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|x| x.type_ == POD_SCHEDULED))
        .is_some_and(|x| {
            x.status == "False"
                && x.reason.as_deref() == Some(c.reason.as_str())
                && x.message.as_deref() == Some(c.message.as_str())
        })
}
