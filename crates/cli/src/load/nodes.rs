//! The nodes of a load run: `load-node-<i>`, made as a kubelet registers itself (the Node,
//! then its status through the `status` subresource, as a create drops it) and freed of the
//! not-ready taint the API server gives every new Node, since no node lifecycle controller
//! hears from a kubelet here. Nodes that already serve (Ready, the size asked, untainted)
//! are left alone, so a second run reuses them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde_json::json;

use super::objects::{self, NODE_LABEL, Shapes};

/// Node writes in flight at once.
const IN_FLIGHT: usize = 32;
/// Tries of the taint removal, which loses to any concurrent write of the node.
const UNTAINT_TRIES: u32 = 5;

/// What getting the nodes ready took.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NodesReport {
    /// Nodes asked for.
    pub requested: usize,
    /// Nodes created by this run.
    pub created: usize,
    /// Nodes that existed but needed their status or taints set.
    pub updated: usize,
    /// Nodes that already served.
    pub reused: usize,
    /// Seconds it took.
    pub seconds: f64,
}

enum Done {
    Created,
    Updated,
}

/// Makes `load-node-0` .. `load-node-<count-1>` ready.
pub async fn ensure(client: &Client, count: usize, shapes: &Shapes) -> anyhow::Result<NodesReport> {
    let started = Instant::now();
    let api: Api<Node> = Api::all(client.clone());
    let listed = api
        .list(&ListParams::default().labels(NODE_LABEL))
        .await
        .map_err(|e| anyhow::anyhow!("list nodes: {e}"))?;
    let mut existing = HashMap::new();
    for node in listed {
        let name = node.metadata.name.clone().unwrap_or_default();
        existing.insert(name, serde_json::to_value(node)?);
    }
    let now = now_rfc3339();
    let mut report = NodesReport {
        requested: count,
        ..NodesReport::default()
    };
    let todo: Vec<usize> = (0..count)
        .filter(|i| {
            existing
                .get(&objects::node_name(*i))
                .is_none_or(|n| !objects::node_is_current(n, shapes))
        })
        .collect();
    report.reused = count - todo.len();
    let mut results = stream::iter(todo)
        .map(|i| {
            let (api, now) = (api.clone(), now.clone());
            let exists = existing.contains_key(&objects::node_name(i));
            async move { ready_node(&api, i, exists, shapes, &now).await }
        })
        .buffer_unordered(IN_FLIGHT);
    while let Some(result) = results.next().await {
        match result? {
            Done::Created => report.created += 1,
            Done::Updated => report.updated += 1,
        }
    }
    report.seconds = super::stats::round3(started.elapsed().as_secs_f64());
    Ok(report)
}

/// Creates node `i` (unless it exists), sets its status and removes the not-ready taint.
async fn ready_node(
    api: &Api<Node>,
    i: usize,
    exists: bool,
    shapes: &Shapes,
    now: &str,
) -> anyhow::Result<Done> {
    let name = objects::node_name(i);
    let mut done = Done::Updated;
    if !exists {
        let node: Node = serde_json::from_value(objects::node(i))?;
        match api.create(&PostParams::default(), &node).await {
            Ok(_) => done = Done::Created,
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(anyhow::anyhow!("create node {name}: {e}")),
        }
    }
    let status = objects::node_status(i, shapes, now);
    let mut node = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .map_err(|e| anyhow::anyhow!("set the status of node {name}: {e}"))?;
    for attempt in 1..=UNTAINT_TRIES {
        let value = serde_json::to_value(&node)?;
        if !objects::has_not_ready_taint(&value) {
            break;
        }
        // The resourceVersion makes the write lose to a concurrent one rather than undo it.
        let patch = json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "spec": {"taints": objects::taints_without_not_ready(&value)},
        });
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => break,
            Err(kube::Error::Api(s)) if s.code == 409 && attempt < UNTAINT_TRIES => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                node = api
                    .get(&name)
                    .await
                    .map_err(|e| anyhow::anyhow!("read node {name}: {e}"))?;
            }
            Err(e) => return Err(anyhow::anyhow!("untaint node {name}: {e}")),
        }
    }
    Ok(done)
}

/// Deletes every node a load run made.
pub async fn delete_all(client: &Client) -> anyhow::Result<()> {
    let api: Api<Node> = Api::all(client.clone());
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels(NODE_LABEL),
    )
    .await
    .map_err(|e| anyhow::anyhow!("delete the load nodes: {e}"))?;
    Ok(())
}

/// Now in RFC 3339 (UTC, seconds), for the conditions' heartbeat and transition times.
fn now_rfc3339() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    now.round(k8s_openapi::jiff::Unit::Second)
        .unwrap_or(now)
        .to_string()
}
