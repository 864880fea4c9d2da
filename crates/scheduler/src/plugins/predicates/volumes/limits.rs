//! NodeVolumeLimits for CSI drivers: the unique volumes of a driver attached to a node (by
//! the pods on it, those placed in the session included) plus the new pod's own must stay
//! within the driver's `allocatable.count` in the node's CSINode. A volume shared by pods on
//! the node is attached once.

use std::collections::HashMap;

use crate::fit::FitReason;
use crate::model::{NodeId, Snapshot, TaskId};

/// Why a node fails NodeVolumeLimits.
pub(super) const MAX_VOLUME_COUNT: &str = "node(s) exceed max volume count";

/// The volumes attached to one node.
#[derive(Debug, Default)]
struct NodeAttachments {
    /// Unique volume name → (driver, pods using it).
    volumes: HashMap<String, (String, u32)>,
    /// Driver → unique volumes attached.
    per_driver: HashMap<String, i64>,
}

/// The attachments of every node, kept in step with placements and evictions.
#[derive(Debug, Default)]
pub(super) struct Attachments {
    nodes: HashMap<NodeId, NodeAttachments>,
    /// The node each counted task's volumes are counted on (a discarded placement no longer
    /// names its node when it is undone).
    counted: HashMap<TaskId, NodeId>,
}

impl Attachments {
    /// Counts `volumes` (driver, unique name) of task `t` on node `n`.
    pub(super) fn add(&mut self, t: TaskId, n: NodeId, volumes: &[(String, String)]) {
        if volumes.is_empty() || self.counted.contains_key(&t) {
            return;
        }
        self.counted.insert(t, n);
        let node = self.nodes.entry(n).or_default();
        for (driver, unique) in volumes {
            let e = node
                .volumes
                .entry(unique.clone())
                .or_insert_with(|| (driver.clone(), 0));
            e.1 += 1;
            if e.1 == 1 {
                *node.per_driver.entry(driver.clone()).or_insert(0) += 1;
            }
        }
    }

    /// Takes task `t`'s `volumes` off the node they were counted on.
    pub(super) fn remove(&mut self, t: TaskId, volumes: &[(String, String)]) {
        let Some(n) = self.counted.remove(&t) else {
            return;
        };
        let Some(node) = self.nodes.get_mut(&n) else {
            return;
        };
        for (driver, unique) in volumes {
            let Some(e) = node.volumes.get_mut(unique) else {
                continue;
            };
            e.1 = e.1.saturating_sub(1);
            if e.1 == 0 {
                node.volumes.remove(unique);
                if let Some(c) = node.per_driver.get_mut(driver) {
                    *c -= 1;
                }
            }
        }
    }

    /// NodeVolumeLimits' verdict on node `n` for a pod attaching `volumes`.
    pub(super) fn check(
        &self,
        s: &Snapshot,
        n: NodeId,
        volumes: &[(String, String)],
    ) -> Result<(), FitReason> {
        if volumes.is_empty() {
            return Ok(());
        }
        let cat = &s.cluster.storage;
        let name = &s.node(n).name;
        let node = self.nodes.get(&n);
        let mut new_per_driver: HashMap<&str, i64> = HashMap::new();
        for (driver, unique) in volumes {
            if node.is_some_and(|a| a.volumes.contains_key(unique)) {
                continue;
            }
            *new_per_driver.entry(driver.as_str()).or_insert(0) += 1;
        }
        for (driver, count) in new_per_driver {
            let Some(limit) = cat.attach_limit(name, driver) else {
                continue;
            };
            let attached = node
                .and_then(|a| a.per_driver.get(driver))
                .copied()
                .unwrap_or(0);
            if attached + count > limit {
                return Err(FitReason::resolvable(MAX_VOLUME_COUNT).depending_on_pods());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vols(names: &[&str]) -> Vec<(String, String)> {
        names
            .iter()
            .map(|n| ("d".to_string(), format!("d/{n}")))
            .collect()
    }

    #[test]
    fn a_volume_shared_by_pods_is_attached_once_and_detached_with_the_last() {
        let mut a = Attachments::default();
        let n = NodeId(0);
        a.add(TaskId(1), n, &vols(&["x"]));
        a.add(TaskId(2), n, &vols(&["x", "y"]));
        let count = |a: &Attachments| a.nodes[&n].per_driver.get("d").copied();
        assert_eq!(count(&a), Some(2));
        a.remove(TaskId(2), &vols(&["x", "y"]));
        assert_eq!(count(&a), Some(1));
        // Removing a task twice (evicted, then its placement undone) changes nothing more.
        a.remove(TaskId(2), &vols(&["x", "y"]));
        assert_eq!(count(&a), Some(1));
        a.remove(TaskId(1), &vols(&["x"]));
        assert_eq!(count(&a), Some(0));
    }
}
