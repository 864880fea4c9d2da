//! The objects besides nodes, pods, PodGroups and queues that placement rules read: namespaces'
//! labels (pod affinity's `namespaceSelector`) and the storage objects (volume filters).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use volcano_api::Objects;

use super::storage::{ClaimBinding, StorageCatalog};

/// The label Kubernetes puts on every namespace, naming it.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// What the snapshot knows of namespaces and storage, shared by every session until one of
/// those objects changes.
#[derive(Debug, Clone, Default)]
pub struct ClusterObjects {
    /// Each known namespace's labels, with the name label Kubernetes always sets.
    pub namespace_labels: HashMap<String, BTreeMap<String, String>>,
    /// PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes.
    pub storage: Arc<StorageCatalog>,
    /// The claim bindings the session's placements assumed, written by the volume filters when
    /// the session closes; empty in a snapshot the cache hands out.
    pub assumed_bindings: Vec<ClaimBinding>,
}

impl ClusterObjects {
    /// Reads them from `objs`.
    pub fn of(objs: &Objects) -> Self {
        let namespace_labels = objs
            .namespaces
            .iter()
            .filter_map(|ns| {
                let name = ns.metadata.name.clone()?;
                let mut labels = ns.metadata.labels.clone().unwrap_or_default();
                labels.insert(NAMESPACE_NAME_LABEL.to_string(), name.clone());
                Some((name, labels))
            })
            .collect();
        ClusterObjects {
            namespace_labels,
            storage: Arc::new(StorageCatalog::of(objs)),
            assumed_bindings: Vec::new(),
        }
    }

    /// The labels of namespace `ns`: those it carries when the namespace is known, otherwise
    /// only the name label (a scenario need not list its namespaces).
    pub fn namespace_labels(&self, ns: &str) -> std::borrow::Cow<'_, BTreeMap<String, String>> {
        match self.namespace_labels.get(ns) {
            Some(l) => std::borrow::Cow::Borrowed(l),
            None => std::borrow::Cow::Owned(BTreeMap::from([(
                NAMESPACE_NAME_LABEL.to_string(),
                ns.to_string(),
            )])),
        }
    }
}
