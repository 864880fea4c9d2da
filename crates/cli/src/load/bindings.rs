//! The watch that sees a run's pods bound. It is started, and has listed the namespace,
//! before the first pod is created, so no binding can be missed; a pod counts as bound at the
//! first event that shows its `spec.nodeName`, stamped with this machine's clock when the
//! event arrives.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use volcano_runtime::mirror::Update;
use volcano_runtime::reflect::{self, PodScope, PodView, UPDATE_CHANNEL};

use super::objects::RUN_LABEL;

/// A bound pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// What its latency is measured from: the pod's own name, or the label naming the
    /// object whose creation made it (`volcano.sh/job-name` for a Job's pods).
    pub origin: String,
    /// When the watch showed it bound.
    pub at: Instant,
}

/// The pods of a run seen so far, and which of them are bound.
#[derive(Debug, Default)]
pub struct Seen {
    /// Pods seen, bound or not.
    pub pods: usize,
    /// Bound pods by name.
    pub bound: HashMap<String, Bound>,
    names: HashSet<String>,
}

impl Seen {
    /// Takes in one pod as a watch event shows it at `now`. `origin_label` names the label
    /// that gives a pod's origin (`None`: the pod is its own origin).
    pub fn observe(&mut self, pod: &Pod, origin_label: Option<&str>, now: Instant) {
        let Some(name) = pod.metadata.name.as_deref() else {
            return;
        };
        if self.names.insert(name.to_string()) {
            self.pods += 1;
        }
        let on_node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty());
        if !on_node || self.bound.contains_key(name) {
            return;
        }
        let origin = match origin_label {
            None => Some(name.to_string()),
            Some(label) => pod
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(label))
                .cloned(),
        };
        // A pod without its origin label is not one this run can measure.
        if let Some(origin) = origin {
            self.bound
                .insert(name.to_string(), Bound { origin, at: now });
        }
    }
}

/// Aborts the watcher it holds when dropped, so that ending the task that reads the watch
/// ends the watch.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The running watch.
pub struct Bindings {
    seen: Arc<Mutex<Seen>>,
    bound: watch::Receiver<usize>,
    task: JoinHandle<()>,
}

/// How long the first listing of the namespace may take before the run gives up.
const LIST_TIMEOUT: Duration = Duration::from_secs(60);

impl Bindings {
    /// Starts watching the pods of `run` in `namespace` and returns once the first listing is
    /// in. The watch is protobuf, as kube-scheduler's and kube-controller-manager's are, so
    /// that the API server encodes no pod in JSON for the measurement itself.
    pub async fn start(
        client: Client,
        namespace: &str,
        run: &str,
        origin_label: Option<&'static str>,
    ) -> anyhow::Result<Bindings> {
        let selector = format!("{RUN_LABEL}={run}");
        // The watch retries whatever fails; a first list refused (no permission, no server)
        // ends the run instead, saying why.
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        pods.list_metadata(&ListParams::default().labels(&selector).limit(1))
            .await
            .map_err(|e| anyhow::anyhow!("cannot watch pods: {e}"))?;
        let scope = PodScope {
            namespace: Some(namespace.to_string()),
            labels: Some(selector),
        };
        let (tx, mut updates) = mpsc::channel(UPDATE_CHANNEL);
        // The scheduler's view of a pod holds what is read here: name, labels, node.
        let watcher = reflect::watch_pods(&client, scope, PodView::Scheduler, &tx);
        drop(tx);
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (count, bound) = watch::channel(0usize);
        let (listed_tx, listed) = tokio::sync::oneshot::channel::<()>();
        let shared = seen.clone();
        let task = tokio::spawn(async move {
            let _watcher = AbortOnDrop(watcher);
            let mut listed_tx = Some(listed_tx);
            while let Some(update) = updates.recv().await {
                let now = Instant::now();
                let Update::Pod(event) = update else {
                    continue;
                };
                let pod = match event {
                    watcher::Event::Apply(p) | watcher::Event::InitApply(p) => p,
                    watcher::Event::InitDone => {
                        if let Some(tx) = listed_tx.take() {
                            let _ = tx.send(());
                        }
                        continue;
                    }
                    watcher::Event::Init | watcher::Event::Delete(_) => continue,
                };
                let mut seen = shared.lock().unwrap_or_else(PoisonError::into_inner);
                seen.observe(&pod, origin_label, now);
                count.send_replace(seen.bound.len());
            }
        });
        match tokio::time::timeout(LIST_TIMEOUT, listed).await {
            Ok(Ok(())) => Ok(Bindings { seen, bound, task }),
            Ok(Err(_)) => Err(anyhow::anyhow!("the pod watch ended before listing")),
            Err(_) => {
                task.abort();
                Err(anyhow::anyhow!(
                    "the pod watch did not list the namespace in {} s",
                    LIST_TIMEOUT.as_secs()
                ))
            }
        }
    }

    /// Waits until `expected` pods are bound or `deadline` passes; gives the count bound.
    pub async fn wait_for(&mut self, expected: usize, deadline: tokio::time::Instant) -> usize {
        let reached = self.bound.wait_for(|n| *n >= expected);
        let _ = tokio::time::timeout_at(deadline, reached).await;
        *self.bound.borrow()
    }

    /// Ends the watch and gives what it saw.
    pub fn finish(self) -> Seen {
        self.task.abort();
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut *seen)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn pod(name: &str, node: Option<&str>, job: Option<&str>) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": job.map(|j| json!({"volcano.sh/job-name": j}))},
            "spec": {"containers": [], "nodeName": node},
        }))
        .unwrap()
    }

    #[test]
    fn the_first_event_with_a_node_is_the_binding() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(5);
        let mut seen = Seen::default();
        seen.observe(&pod("a", None, None), None, t0);
        assert!(seen.bound.is_empty());
        seen.observe(&pod("a", Some("n1"), None), None, t0);
        // A later event (the kubelet's status) does not move the binding.
        seen.observe(&pod("a", Some("n1"), None), None, t1);
        seen.observe(&pod("b", Some(""), None), None, t1);
        assert_eq!(seen.pods, 2);
        assert_eq!(seen.bound.len(), 1);
        assert_eq!(
            seen.bound["a"],
            Bound {
                origin: "a".into(),
                at: t0
            }
        );
    }

    #[test]
    fn a_jobs_pod_is_measured_from_its_job() {
        let t0 = Instant::now();
        let mut seen = Seen::default();
        seen.observe(
            &pod("j1-worker-0", Some("n"), Some("j1")),
            Some("volcano.sh/job-name"),
            t0,
        );
        seen.observe(
            &pod("stray", Some("n"), None),
            Some("volcano.sh/job-name"),
            t0,
        );
        assert_eq!(seen.bound["j1-worker-0"].origin, "j1");
        assert!(!seen.bound.contains_key("stray"));
    }
}
