//! Where each object of one kind sits in its list, and the groups the controllers ask for.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};

use k8s_openapi::api::core::v1::Pod;

use super::Stored;
use crate::keys;
use crate::object_ref::NamespacedName;
use crate::scheduling::PodGroup;

/// The queue a PodGroup is in, with the default for an empty `spec.queue`.
pub fn pod_group_queue(pg: &PodGroup) -> &str {
    if pg.spec.queue.is_empty() {
        keys::DEFAULT_QUEUE
    } else {
        &pg.spec.queue
    }
}

/// The Volcano Job a pod was created for, if any: its controller owner reference of kind Job.
pub fn owning_job(pod: &Pod) -> Option<&str> {
    pod.metadata
        .owner_references
        .as_deref()?
        .iter()
        .find(|o| o.kind == "Job" && o.api_version.starts_with("batch.volcano.sh/"))
        .map(|o| o.name.as_str())
}

/// A pod's group: its Job, `ns/job`.
pub(super) fn owning_job_key(pod: &Pod) -> Option<NamespacedName> {
    let job = owning_job(pod)?;
    Some(NamespacedName::new(
        pod.metadata
            .namespace
            .as_deref()
            .unwrap_or(crate::object_ref::DEFAULT_NAMESPACE),
        job,
    ))
}

/// A PodGroup's group: its queue.
pub(super) fn queue_group_key(pg: &PodGroup) -> Option<NamespacedName> {
    Some(NamespacedName::cluster(pod_group_queue(pg)))
}

/// One kind's index: identity → position, and group → members.
#[derive(Debug, Clone, Default)]
pub struct Index {
    at: HashMap<NamespacedName, usize>,
    groups: HashMap<NamespacedName, HashSet<NamespacedName>>,
}

impl Index {
    /// Where the object of this identity sits.
    pub fn position(&self, key: &NamespacedName) -> Option<usize> {
        self.at.get(key).copied()
    }

    /// How many identities are indexed.
    pub(super) fn len(&self) -> usize {
        self.at.len()
    }

    /// Positions of the members of a group (unordered).
    pub fn owned_by(&self, namespace: &str, group: &str) -> impl Iterator<Item = usize> + '_ {
        self.groups
            .get(&NamespacedName::new(namespace, group))
            .into_iter()
            .flatten()
            .filter_map(|m| self.at.get(m).copied())
    }

    /// Records `obj` at `i`.
    pub(super) fn remember<K: Stored>(&mut self, key: NamespacedName, i: usize, obj: &K) {
        if let Some(g) = obj.group() {
            self.groups.entry(g).or_default().insert(key.clone());
        }
        self.at.insert(key, i);
    }

    /// Drops `obj`'s group membership (before it changes or goes); its position stays until
    /// [`Index::remember`] or [`Index::shifted`] says otherwise.
    pub(super) fn forget<K: Stored>(&mut self, obj: &K) {
        let key = obj.key();
        if let Some(g) = obj.group()
            && let Some(members) = self.groups.get_mut(&g)
        {
            members.remove(&key);
            if members.is_empty() {
                self.groups.remove(&g);
            }
        }
        self.at.remove(&key);
    }

    /// After the object at `from` was removed from `list`: everything after it moved one up.
    pub(super) fn shifted<K: Stored>(&mut self, list: &[K::Held], from: usize) {
        for (i, obj) in list.iter().enumerate().skip(from) {
            if let Some(at) = self.at.get_mut(&obj.borrow().key()) {
                *at = i;
            }
        }
    }

    /// After a removal moved `obj` into the gap at `to`.
    pub(super) fn moved<K: Stored>(&mut self, obj: &K, to: usize) {
        if let Some(at) = self.at.get_mut(&obj.key()) {
            *at = to;
        }
    }

    /// Indexes `list` from scratch.
    pub(super) fn rebuild<K: Stored>(&mut self, list: &[K::Held]) {
        self.at.clear();
        self.groups.clear();
        self.at.reserve(list.len());
        for (i, obj) in list.iter().enumerate() {
            let obj: &K = obj.borrow();
            self.remember(obj.key(), i, obj);
        }
    }
}
