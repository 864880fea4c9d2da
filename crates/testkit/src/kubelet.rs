//! Nodes whose kubelets act through the API, as real ones do: each registers its Node, starts
//! the pods bound to it (Running after a startup delay), ends them as the local control plane's
//! kubelets do (annotations or a `sleep N` command; see [`volcano_apiserver::kubelet`]), and
//! confirms a graceful deletion: a real API server keeps a deleted bound pod, marked with a
//! `deletionTimestamp`, until its kubelet has stopped it and deletes it with grace 0.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use volcano_apiserver::kubelet::{
    NodeSpec, lifetime, node_ip, node_object, pod_ip, running, terminated,
};

use crate::HarnessError;

/// How the kubelets behave.
#[derive(Debug, Clone)]
pub struct KubeletOptions {
    /// Time from binding to Running.
    pub startup_delay: Duration,
    /// Time a kubelet takes to stop a pod being deleted before it confirms the deletion.
    pub termination: Duration,
}

impl Default for KubeletOptions {
    fn default() -> Self {
        KubeletOptions {
            startup_delay: Duration::from_millis(200),
            termination: Duration::from_millis(500),
        }
    }
}

/// The kubelets of a set of nodes. Dropping this stops them; pods keep their status.
#[derive(Debug)]
pub struct ApiKubelets {
    task: JoinHandle<()>,
}

impl Drop for ApiKubelets {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl ApiKubelets {
    /// Registers the nodes (Node and its status) with `client`, which must be allowed to
    /// write nodes and pods' status, and starts their kubelets.
    pub async fn start(
        client: Client,
        nodes: &[NodeSpec],
        opts: KubeletOptions,
    ) -> Result<ApiKubelets, HarnessError> {
        let api: Api<Node> = Api::all(client.clone());
        let mut ours = HashMap::new();
        for (index, spec) in nodes.iter().enumerate() {
            let object = node_object(spec, index, unix_now());
            let node: Node = serde_json::from_value(object.clone()).map_err(|e| {
                HarnessError::Invalid(format!("node {} does not decode: {e}", spec.name))
            })?;
            match api.create(&PostParams::default(), &node).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(HarnessError::kube(format!("create node {}", spec.name), e)),
            }
            // A create may drop the status; a kubelet writes it through the subresource.
            let status = json!({"status": object.get("status").cloned().unwrap_or(json!({}))});
            api.patch_status(&spec.name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .map_err(|e| HarnessError::kube(format!("set node {} status", spec.name), e))?;
            clear_not_ready_taint(&api, &spec.name).await?;
            ours.insert(spec.name.clone(), NodeState { index, started: 0 });
        }
        let kubelet = Kubelet {
            pods: Api::all(client),
            nodes: ours,
            opts,
            running: HashMap::new(),
            confirming: HashSet::new(),
        };
        Ok(ApiKubelets {
            task: tokio::spawn(kubelet.run()),
        })
    }
}

/// The API server taints a new Node `node.kubernetes.io/not-ready` until the node lifecycle
/// controller sees it Ready; these kubelets send no heartbeats for that controller to watch
/// (it does not run), so they take the taint off themselves once their status says Ready.
async fn clear_not_ready_taint(api: &Api<Node>, name: &str) -> Result<(), HarnessError> {
    let node = api
        .get(name)
        .await
        .map_err(|e| HarnessError::kube(format!("read node {name}"), e))?;
    let taints: Vec<_> = node
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.key != "node.kubernetes.io/not-ready")
        .collect();
    let patch = json!({
        "metadata": {"resourceVersion": node.metadata.resource_version},
        "spec": {"taints": taints},
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| HarnessError::kube(format!("untaint node {name}"), e))?;
    Ok(())
}

struct NodeState {
    index: usize,
    started: u32,
}

struct Kubelet {
    pods: Api<Pod>,
    nodes: HashMap<String, NodeState>,
    opts: KubeletOptions,
    /// Pod uid to the task running it.
    running: HashMap<String, JoinHandle<()>>,
    /// Pods whose deletion is being confirmed.
    confirming: HashSet<String>,
}

impl Kubelet {
    async fn run(mut self) {
        let config = watcher::Config::default().fields("spec.nodeName!=");
        let mut events = watcher(self.pods.clone(), config).boxed();
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => self.handle(p),
                Ok(watcher::Event::Delete(p)) => {
                    if let Some(t) = self.running.remove(&p.uid().unwrap_or_default()) {
                        t.abort();
                    }
                }
                Ok(watcher::Event::Init | watcher::Event::InitDone) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "test kubelets' pod watch failed; it resumes");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    fn handle(&mut self, pod: Pod) {
        let node_name = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        let Some(node) = self.nodes.get_mut(&node_name) else {
            return;
        };
        let uid = pod.uid().unwrap_or_default();
        if pod.metadata.deletion_timestamp.is_some() {
            if self.confirming.insert(uid.clone()) {
                if let Some(t) = self.running.remove(&uid) {
                    t.abort();
                }
                tokio::spawn(confirm_deletion(
                    self.pods.clone(),
                    pod,
                    self.opts.termination,
                ));
            }
            return;
        }
        let phase = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Pending".into());
        if self.running.contains_key(&uid) || !matches!(phase.as_str(), "Pending" | "Running") {
            return;
        }
        node.started = node.started.wrapping_add(1);
        let run = PodRun {
            pods: self.pods.clone(),
            host_ip: node_ip(node.index),
            pod_ip: pod_ip(node.index, node.started),
            startup: self.opts.startup_delay,
        };
        self.running.insert(uid, tokio::spawn(run.run(pod)));
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        for t in self.running.values() {
            t.abort();
        }
    }
}

/// Stops a pod being deleted, then deletes it for good (grace 0, this pod only), trying again
/// while the API server is away, as a kubelet does until the pod is gone.
async fn confirm_deletion(pods: Api<Pod>, pod: Pod, termination: Duration) {
    tokio::time::sleep(termination).await;
    let (ns, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: pod.uid(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let api = Api::<Pod>::namespaced(pods.into_client(), &ns);
    for _ in 0..300 {
        match api.delete(&name, &params).await {
            // Gone, or another pod of that name now (the precondition failed): done.
            Ok(_) => return,
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => return,
            Err(e) => {
                tracing::debug!(pod = %name, error = %e, "test kubelet retries a deletion");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

struct PodRun {
    pods: Api<Pod>,
    host_ip: String,
    pod_ip: String,
    startup: Duration,
}

impl PodRun {
    async fn run(self, pod: Pod) {
        let Ok(value) = serde_json::to_value(&pod) else {
            return;
        };
        let phase = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Pending".into());
        if phase == "Pending" {
            tokio::time::sleep(self.startup).await;
            let status = running(&value, &self.host_ip, &self.pod_ip, unix_now());
            if !self.set_status(&pod, "Pending", status).await {
                return;
            }
        }
        let Some((after, exit_code)) = lifetime(&value) else {
            return;
        };
        tokio::time::sleep(after).await;
        let status = terminated(&value, exit_code, unix_now());
        self.set_status(&pod, "Running", status).await;
    }

    /// Writes `status` if the pod is still this one, in `expected` phase and not being
    /// deleted.
    async fn set_status(&self, pod: &Pod, expected: &str, status: Value) -> bool {
        let (ns, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
        let api: Api<Pod> = Api::namespaced(self.pods.clone().into_client(), &ns);
        let Ok(current) = api.get(&name).await else {
            return false;
        };
        let phase = current
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Pending");
        if current.uid() != pod.uid()
            || phase != expected
            || current.metadata.deletion_timestamp.is_some()
        {
            return false;
        }
        // Status patches carry the resourceVersion read, so a concurrent change wins.
        let body = json!({
            "metadata": {"resourceVersion": current.resource_version()},
            "status": status,
        });
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .is_ok()
    }
}
