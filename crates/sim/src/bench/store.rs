//! The benchmark's object store: the objects by key, with a session's decisions applied as
//! the API server would take the runtime's writes, and every change told to the scheduler
//! cache as a watch would tell it.

use std::collections::HashMap;
use std::sync::Arc;

use volcano_api::{NamespacedName, Objects};
use volcano_scheduler::cache::SchedulerCache;
use volcano_scheduler::framework::Decisions;
use volcano_scheduler::model::gpu::POD_VGPU_IDS;

/// Objects with an index by identity (by name for queues).
pub struct BenchStore {
    /// The objects.
    pub objects: Objects,
    pods: HashMap<NamespacedName, usize>,
    groups: HashMap<NamespacedName, usize>,
    queues: HashMap<String, usize>,
}

impl BenchStore {
    /// A store of `objects`.
    pub fn new(objects: Objects) -> Self {
        fn index<K: std::hash::Hash + Eq>(keys: Vec<K>) -> HashMap<K, usize> {
            keys.into_iter().enumerate().map(|(i, k)| (k, i)).collect()
        }
        BenchStore {
            pods: index(
                objects
                    .pods
                    .iter()
                    .map(|p| NamespacedName::of(&p.metadata))
                    .collect(),
            ),
            groups: index(
                objects
                    .pod_groups
                    .iter()
                    .map(|g| NamespacedName::of(&g.metadata))
                    .collect(),
            ),
            queues: index(
                objects
                    .queues
                    .iter()
                    .map(|q| q.metadata.name.clone().unwrap_or_default())
                    .collect(),
            ),
            objects,
        }
    }

    /// Applies what a session decided and tells `cache` of each object that changed: GPU
    /// devices and binds on pods, nominations, evictions (the pod is gone at once), PodGroup
    /// status and queue `allocated` where they changed.
    pub fn apply(&mut self, d: &Decisions, cache: &mut SchedulerCache) {
        let devices: HashMap<&NamespacedName, &str> =
            d.gpu_devices.iter().map(|(p, v)| (p, v.as_str())).collect();
        for (pod, node) in &d.binds {
            self.update_pod(pod, cache, |p| {
                if let Some(ids) = devices.get(pod) {
                    p.metadata
                        .annotations
                        .get_or_insert_with(Default::default)
                        .insert(POD_VGPU_IDS.to_string(), (*ids).to_string());
                }
                if let Some(spec) = p.spec.as_mut() {
                    spec.node_name = Some(node.clone());
                }
            });
        }
        for (pod, node) in &d.nominated {
            self.update_pod(pod, cache, |p| {
                p.status
                    .get_or_insert_with(Default::default)
                    .nominated_node_name = Some(node.clone());
            });
        }
        for pod in &d.evictions {
            self.delete_pod(pod, cache);
        }
        for u in d.pod_groups.iter().filter(|u| u.changed) {
            if let Some(&i) = self.groups.get(&u.key) {
                let pg = &mut self.objects.pod_groups[i];
                let old = pg.clone();
                pg.status = Some(u.status.clone());
                cache.pod_group_changed(Some(&old), Some(pg));
            }
        }
        for q in d.queues.iter().filter(|q| q.changed) {
            if let Some(&i) = self.queues.get(&q.name) {
                let queue = &mut self.objects.queues[i];
                let old = queue.clone();
                queue.status.get_or_insert_with(Default::default).allocated =
                    Some(q.allocated.clone());
                cache.queue_changed(Some(&old), Some(queue));
            }
        }
    }

    fn update_pod(
        &mut self,
        key: &NamespacedName,
        cache: &mut SchedulerCache,
        change: impl FnOnce(&mut volcano_api::k8s_openapi::api::core::v1::Pod),
    ) {
        if let Some(&i) = self.pods.get(key) {
            let pod = &mut self.objects.pods[i];
            let old = pod.clone();
            change(Arc::make_mut(pod));
            cache.pod_changed(Some(&old), Some(pod));
        }
    }

    fn delete_pod(&mut self, key: &NamespacedName, cache: &mut SchedulerCache) {
        let Some(i) = self.pods.remove(key) else {
            return;
        };
        let old = self.objects.pods.swap_remove(i);
        if let Some(moved) = self.objects.pods.get(i) {
            self.pods.insert(NamespacedName::of(&moved.metadata), i);
        }
        cache.pod_changed(Some(&old), None);
    }
}
