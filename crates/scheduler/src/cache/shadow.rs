//! Shadow PodGroups: a bare pod of ours (no PodGroup named, no controller owner) is a gang of
//! one. Volcano's controller-manager creates a PodGroup object for each such pod, and the
//! scheduler then writes its status; for a stream of bare pods that is a create, an admission
//! review and a status write per pod beside the binding. With `shadow_pod_groups` the cache
//! keeps the PodGroup the controller would build ([`pod_group_for`]) in memory instead: the
//! pod is scheduled as soon as it is seen, and what a user needs to know of it (bound, or why
//! not) is on the pod itself (its `PodScheduled` condition and events).
//!
//! A PodGroup object of the same name (Volcano's controller-manager makes one) takes the
//! shadow's place when it arrives.

use volcano_api::NamespacedName;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::pod_group_of_pod::{is_bare_pod, pod_group_for, pod_group_name};
use volcano_api::scheduling::{PodGroup, phase};

use super::CacheOptions;

/// The shadow PodGroup of `pod`, if the cache keeps one for it: the pod is ours, names no
/// PodGroup and has no controller owner (a workload's replicas share a PodGroup object).
pub(super) fn shadow_pod_group(pod: &Pod, opts: &CacheOptions) -> Option<PodGroup> {
    if !is_shadowed(pod, opts) {
        return None;
    }
    let mut pg = pod_group_for(pod, &pod_group_name(pod), &Default::default());
    // Made with its pod, as the controller would make it: jobs are ordered by creation, then
    // uid.
    pg.metadata.creation_timestamp = pod.metadata.creation_timestamp.clone();
    pg.metadata.uid = pod.metadata.uid.clone();
    // Its phase as the scheduler would have written it: a gang of one runs once its pod is
    // bound, and waits until then.
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if let Some(status) = pg.status.as_mut() {
        status.phase = if bound {
            phase::RUNNING
        } else {
            phase::PENDING
        }
        .to_string();
    }
    Some(pg)
}

/// The key of `pod`'s shadow PodGroup, if the cache keeps one for it.
pub(super) fn shadow_key(pod: &Pod, opts: &CacheOptions) -> Option<NamespacedName> {
    is_shadowed(pod, opts).then(|| {
        NamespacedName::new(
            pod.metadata.namespace.as_deref().unwrap_or("default"),
            pod_group_name(pod).as_str(),
        )
    })
}

/// Whether the cache keeps a shadow PodGroup for `pod`.
pub(super) fn is_shadowed(pod: &Pod, opts: &CacheOptions) -> bool {
    opts.shadow_pod_groups && is_bare(pod, opts)
}

/// Ours and bare ([`is_bare_pod`]).
fn is_bare(pod: &Pod, opts: &CacheOptions) -> bool {
    let ours = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduler_name.as_deref())
        .is_some_and(|n| opts.scheduler_names.iter().any(|s| s == n));
    ours && is_bare_pod(pod)
}
