//! Graceful deletion of pods, as the Kubernetes API server does it: a pod that is bound to a
//! node and has not finished is not removed by a delete but marked with
//! `metadata.deletionTimestamp` (now plus the grace period) and
//! `deletionGracePeriodSeconds`, so its kubelet can stop it; the kubelet then deletes it with
//! grace period 0. Watchers see the pod MODIFIED, then DELETED.

use std::sync::Arc;

use serde_json::{Value, json};

use super::meta::{meta_mut, meta_str};
use super::{Store, WriteOptions};
use crate::error::ApiError;
use crate::kinds::KindInfo;
use crate::time::format_rfc3339;

/// Grace period of a pod that does not set `terminationGracePeriodSeconds`.
const DEFAULT_GRACE_SECONDS: i64 = 30;

/// The grace period a delete of `object` gets, or None when it is removed at once: not a pod,
/// a pod not bound to a node, a finished pod, or a grace period of 0 (Kubernetes' pod
/// `CheckGracefulDelete`).
pub(super) fn grace_period(kind: &KindInfo, object: &Value, asked: Option<i64>) -> Option<i64> {
    if !(kind.group.is_empty() && kind.resource == "pods") {
        return None;
    }
    let node = object.pointer("/spec/nodeName").and_then(Value::as_str);
    let phase = object.pointer("/status/phase").and_then(Value::as_str);
    if node.is_none_or(str::is_empty) || matches!(phase, Some("Succeeded" | "Failed")) {
        return None;
    }
    let period = asked.unwrap_or_else(|| {
        object
            .pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(DEFAULT_GRACE_SECONDS)
    });
    match period {
        0 => None,
        // Kubernetes turns a negative period into the shortest graceful one.
        p if p < 0 => Some(1),
        p => Some(p),
    }
}

impl Store {
    /// Marks `old` as being deleted within `grace` seconds. A pod already marked keeps the
    /// earlier deadline unless this delete asks for a shorter one.
    pub(super) fn mark_deleted(
        &mut self,
        kind: &'static KindInfo,
        ns: Option<&str>,
        name: &str,
        old: Arc<Value>,
        grace: i64,
        w: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let marked = old
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64);
        if marked.is_some_and(|m| m <= grace) {
            return Ok(old);
        }
        let mut new = (*old).clone();
        let generation = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let m = meta_mut(&mut new);
        m.insert(
            "deletionTimestamp".into(),
            json!(format_rfc3339(w.now.saturating_add(grace))),
        );
        m.insert("deletionGracePeriodSeconds".into(), json!(grace));
        // Kubernetes bumps the generation when it marks an object for deletion.
        if marked.is_none() {
            m.insert("generation".into(), json!(generation + 1));
        }
        self.write(kind, ns, name, old, new, w)
    }
}

/// Whether an object is marked for deletion.
pub fn is_terminating(object: &Value) -> bool {
    !meta_str(object, "deletionTimestamp").is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;
    use crate::store::{ChangeType, DeleteOptions, StoreOptions};

    const NOW: i64 = 1_700_000_000;

    fn w() -> WriteOptions {
        WriteOptions {
            now: NOW,
            dry_run: false,
        }
    }

    fn grace(seconds: Option<i64>) -> DeleteOptions {
        DeleteOptions {
            grace_period_seconds: seconds,
            ..DeleteOptions::default()
        }
    }

    /// A store with pod `p`, bound to `n1` when `bound`, in `phase`.
    fn store_with_pod(bound: bool, phase: &str, termination: Option<i64>) -> Store {
        let mut s = Store::new(StoreOptions::default(), NOW);
        let mut pod = json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        if let Some(t) = termination {
            pod["spec"]["terminationGracePeriodSeconds"] = json!(t);
        }
        s.create(kinds::pods(), Some("default"), pod, &w()).unwrap();
        if bound {
            let binding = json!({"target": {"kind": "Node", "name": "n1"}});
            s.bind("default", "p", &binding, &w()).unwrap();
        }
        let mut current = (*s.get(kinds::pods(), Some("default"), "p").unwrap()).clone();
        current["status"]["phase"] = json!(phase);
        s.update(
            kinds::pods(),
            Some("default"),
            "p",
            current,
            super::super::Part::Status,
            &w(),
        )
        .unwrap();
        s.take_revisions();
        s
    }

    fn delete(s: &mut Store, opts: &DeleteOptions) -> Arc<Value> {
        s.delete(kinds::pods(), Some("default"), "p", opts, &w())
            .unwrap()
    }

    #[test]
    fn a_running_bound_pod_is_marked_then_removed_by_grace_zero() {
        let mut s = store_with_pod(true, "Running", None);
        let marked = delete(&mut s, &grace(None));
        assert_eq!(
            marked["metadata"]["deletionTimestamp"],
            json!(format_rfc3339(NOW + 30))
        );
        assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
        assert_eq!(marked["metadata"]["generation"], 2);
        assert!(is_terminating(&marked));
        assert!(s.get(kinds::pods(), Some("default"), "p").is_ok());
        // A second delete with a longer period changes nothing; a shorter one shortens.
        let again = delete(&mut s, &grace(Some(60)));
        assert_eq!(again["metadata"]["deletionGracePeriodSeconds"], 30);
        let shorter = delete(&mut s, &grace(Some(5)));
        assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 5);
        delete(&mut s, &grace(Some(0)));
        assert!(s.get(kinds::pods(), Some("default"), "p").is_err());
        let changes: Vec<ChangeType> = s.take_revisions().iter().map(|c| c.change).collect();
        assert_eq!(
            changes,
            [
                ChangeType::Modified,
                ChangeType::Modified,
                ChangeType::Deleted
            ]
        );
    }

    #[test]
    fn the_pods_own_grace_period_is_the_default() {
        let mut s = store_with_pod(true, "Pending", Some(7));
        let marked = delete(&mut s, &grace(None));
        assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 7);
        let mut s = store_with_pod(true, "Running", Some(0));
        delete(&mut s, &grace(None));
        assert!(s.get(kinds::pods(), Some("default"), "p").is_err());
    }

    #[test]
    fn the_garbage_collector_deletes_a_running_pod_gracefully() {
        let mut s = Store::new(StoreOptions::default(), NOW);
        let cm = json!({"metadata": {"name": "owner"}});
        let configmaps = kinds::find("configmaps").unwrap();
        let owner = s.create(configmaps, Some("default"), cm, &w()).unwrap();
        let pod = json!({"metadata": {"name": "p", "ownerReferences": [{"apiVersion": "v1",
            "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}});
        s.create(kinds::pods(), Some("default"), pod, &w()).unwrap();
        s.delete(configmaps, Some("default"), "owner", &grace(None), &w())
            .unwrap();
        let p = s.get(kinds::pods(), Some("default"), "p").unwrap();
        assert!(is_terminating(&p), "{p}");
        delete(&mut s, &grace(Some(0)));
        assert!(s.get(kinds::pods(), Some("default"), "p").is_err());
    }

    #[test]
    fn unbound_or_finished_pods_go_at_once() {
        for (bound, phase) in [(false, "Pending"), (true, "Succeeded"), (true, "Failed")] {
            let mut s = store_with_pod(bound, phase, None);
            delete(&mut s, &grace(None));
            assert!(
                s.get(kinds::pods(), Some("default"), "p").is_err(),
                "{bound} {phase}"
            );
        }
    }
}
