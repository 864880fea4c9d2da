//! A controller's [`Change`], written to the API server as a patch of the fields it owns.
//! Creating what exists and deleting what is gone succeed: the controllers ask for a state,
//! and that state holds.

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::NamespaceResourceScope;
use kube::runtime::watcher;
use kube::{Client, Error as KubeError, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use volcano_api::batch::Job;
use volcano_api::bus::Command;
use volcano_api::cronjob::CronJob;
use volcano_api::flow::{JobFlow, JobTemplate};
use volcano_api::k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, Secret, Service,
};
use volcano_api::k8s_openapi::api::networking::v1::NetworkPolicy;
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_api::topology::HyperNode;
use volcano_controllers::change::{Change, Owned};
use volcano_controllers::job::controller::Refusal;

use super::POD_VIEW;
use crate::mirror::Update;
use crate::scheduler::writes::{replace_member, replace_status};

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// The API server refused it.
    #[error("{what}: {source}")]
    Api {
        /// Which change.
        what: String,
        /// The refusal.
        #[source]
        source: Box<KubeError>,
    },
    /// It could not be encoded.
    #[error("{what}: {source}")]
    Encode {
        /// Which change.
        what: String,
        /// The encoding error.
        #[source]
        source: serde_json::Error,
    },
}

/// HTTP codes of refusals that retrying at once cannot cure: a malformed or invalid object
/// (400, 422), a missing permission or a namespace being deleted (403), a method or a body the
/// server will not take (405, 406, 413, 415). Conflicts, throttling and server errors pass.
const LASTING_CODES: [u16; 7] = [400, 403, 405, 406, 413, 415, 422];

impl ChangeError {
    /// The HTTP code of the API server's refusal, if it refused.
    pub fn code(&self) -> Option<u16> {
        match self {
            ChangeError::Api { source, .. } => code(source),
            ChangeError::Encode { .. } => None,
        }
    }

    /// Whether the write failed for a reason that retrying at once cannot cure.
    pub fn is_lasting(&self) -> bool {
        match self {
            ChangeError::Api { .. } => self.code().is_some_and(|c| LASTING_CODES.contains(&c)),
            ChangeError::Encode { .. } => true,
        }
    }

    /// The refusal of `change` as the user is told of it, when it is a lasting one. A 404
    /// is lasting for a create (its namespace is gone), not for an update or a delete (the
    /// object went meanwhile, and the watch will say so).
    pub fn refusal(&self, change: &Change) -> Option<Refusal> {
        // An update whose object is gone creates it again, so its 404 is a create's too.
        let creates = matches!(
            change,
            Change::CreatePod(_)
                | Change::CreatePodGroup(_)
                | Change::Create(_)
                | Change::CreateJob(_)
                | Change::Update(_)
        );
        let gone_namespace = creates && self.code() == Some(404);
        if !(self.is_lasting() || gone_namespace) {
            return None;
        }
        let (what, message) = match self {
            ChangeError::Api { what, source } => {
                let message = match source.as_ref() {
                    KubeError::Api(s) => format!("{} ({} {})", s.message, s.code, s.reason),
                    e => e.to_string(),
                };
                (what.clone(), message)
            }
            ChangeError::Encode { what, source } => (what.clone(), source.to_string()),
        };
        Some(Refusal {
            reason: change.failure_reason(),
            what,
            message,
        })
    }
}

fn api_err(what: impl Into<String>, e: KubeError) -> ChangeError {
    ChangeError::Api {
        what: what.into(),
        source: Box::new(e),
    }
}

fn code(e: &KubeError) -> Option<u16> {
    match e {
        KubeError::Api(s) => Some(s.code),
        _ => None,
    }
}

fn ns<K: Resource<Scope = NamespaceResourceScope>>(client: &Client, namespace: &str) -> Api<K>
where
    K::DynamicType: Default,
{
    Api::namespaced(client.clone(), namespace)
}

async fn create<K>(client: &Client, obj: &K) -> Result<Option<K>, ChangeError>
where
    K: Resource<Scope = NamespaceResourceScope>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let m = obj.meta();
    let namespace = m.namespace.clone().unwrap_or_else(|| "default".to_string());
    let what = format!(
        "create {} {namespace}/{}",
        K::kind(&K::DynamicType::default()),
        m.name.as_deref().unwrap_or_default()
    );
    match ns::<K>(client, &namespace)
        .create(&PostParams::default(), obj)
        .await
    {
        Ok(o) => Ok(Some(o)),
        Err(e) if code(&e) == Some(409) => Ok(None),
        Err(e) => Err(api_err(what, e)),
    }
}

/// Deletes `namespace/name` of kind `K`; gone already counts as done.
async fn delete<K>(client: &Client, namespace: &str, name: &str) -> Result<(), ChangeError>
where
    K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default,
{
    let kind = K::kind(&K::DynamicType::default()).to_string();
    match ns::<K>(client, namespace)
        .delete(name, &DeleteParams::background())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if code(&e) == Some(404) => Ok(()),
        Err(e) => Err(api_err(format!("delete {kind} {namespace}/{name}"), e)),
    }
}

/// A merge patch that sets each annotation, or removes it (`None`).
fn annotations_patch(
    annotations: &std::collections::BTreeMap<String, Option<String>>,
) -> serde_json::Value {
    json!({"metadata": {"annotations": annotations}})
}

/// Writes `change`; returns the objects the API server gave back, as watch updates for the
/// mirror (a delete gives nothing: its watch event follows).
pub async fn apply(client: &Client, change: &Change) -> Result<Vec<Update>, ChangeError> {
    let pp = PatchParams::default();
    let applied = |u: Update| Ok(vec![u]);
    match change {
        Change::CreatePod(pod) => match create::<Pod>(client, pod).await? {
            Some(p) => applied(Update::Pod(watcher::Event::Apply(POD_VIEW.keep(p)))),
            None => Ok(Vec::new()),
        },
        Change::PatchPodAnnotations {
            namespace,
            name,
            annotations,
        } => {
            let what = format!("annotate Pod {namespace}/{name}");
            let p = ns::<Pod>(client, namespace)
                .patch(name, &pp, &Patch::Merge(annotations_patch(annotations)))
                .await
                .map_err(|e| api_err(what, e))?;
            applied(Update::Pod(watcher::Event::Apply(POD_VIEW.keep(p))))
        }
        Change::DeletePod { namespace, name } => {
            delete::<Pod>(client, namespace, name).await?;
            Ok(Vec::new())
        }
        Change::CreatePodGroup(pg) => match create::<PodGroup>(client, pg).await? {
            Some(p) => applied(Update::PodGroup(watcher::Event::Apply(p))),
            None => Ok(Vec::new()),
        },
        Change::UpdatePodGroupSpec {
            namespace,
            name,
            spec,
        } => {
            let what = format!("update PodGroup {namespace}/{name} spec");
            let patch = replace_member("/spec", spec).map_err(|e| ChangeError::Encode {
                what: what.clone(),
                source: e,
            })?;
            let p = ns::<PodGroup>(client, namespace)
                .patch(name, &pp, &Patch::Json::<()>(patch))
                .await
                .map_err(|e| api_err(what, e))?;
            applied(Update::PodGroup(watcher::Event::Apply(p)))
        }
        Change::DeletePodGroup { namespace, name } => {
            delete::<PodGroup>(client, namespace, name).await?;
            Ok(Vec::new())
        }
        Change::UpdateJobStatus {
            namespace,
            name,
            status,
        } => {
            let what = format!("update Job {namespace}/{name} status");
            let patch = replace_status(status).map_err(|e| ChangeError::Encode {
                what: what.clone(),
                source: e,
            })?;
            let j = ns::<Job>(client, namespace)
                .patch_status(name, &pp, &Patch::Json::<()>(patch))
                .await
                .map_err(|e| api_err(what, e))?;
            applied(Update::Job(watcher::Event::Apply(j)))
        }
        Change::DeleteJob { namespace, name } => {
            delete::<Job>(client, namespace, name).await?;
            Ok(Vec::new())
        }
        Change::CreateJob(job) => match create::<Job>(client, job).await? {
            Some(j) => applied(Update::Job(watcher::Event::Apply(j))),
            None => Ok(Vec::new()),
        },
        Change::UpdateCronJobStatus {
            namespace,
            name,
            status,
        } => {
            let what = format!("update CronJob {namespace}/{name} status");
            let patch = replace_status(status).map_err(|e| ChangeError::Encode {
                what: what.clone(),
                source: e,
            })?;
            let cj = ns::<CronJob>(client, namespace)
                .patch_status(name, &pp, &Patch::Json::<()>(patch))
                .await
                .map_err(|e| api_err(what, e))?;
            applied(Update::CronJob(watcher::Event::Apply(cj)))
        }
        Change::UpdateJobFlowStatus {
            namespace,
            name,
            status,
        } => {
            let what = format!("update JobFlow {namespace}/{name} status");
            let patch = replace_status(status).map_err(|e| ChangeError::Encode {
                what: what.clone(),
                source: e,
            })?;
            let f = ns::<JobFlow>(client, namespace)
                .patch_status(name, &pp, &Patch::Json::<()>(patch))
                .await
                .map_err(|e| api_err(what, e))?;
            applied(Update::JobFlow(watcher::Event::Apply(f)))
        }
        Change::UpdateJobTemplateStatus {
            namespace,
            name,
            status,
        } => {
            let what = format!("update JobTemplate {namespace}/{name} status");
            let patch = replace_status(status).map_err(|e| ChangeError::Encode {
                what: what.clone(),
                source: e,
            })?;
            let t = ns::<JobTemplate>(client, namespace)
                .patch_status(name, &pp, &Patch::Json::<()>(patch))
                .await
                .map_err(|e| api_err(what, e))?;
            applied(Update::JobTemplate(watcher::Event::Apply(t)))
        }
        Change::PatchQueueState { name, state } => {
            let what = format!("set Queue {name} state");
            let q = Api::<Queue>::all(client.clone())
                .patch_status(
                    name,
                    &pp,
                    &Patch::Merge(json!({"status": {"state": state}})),
                )
                .await
                .map_err(|e| api_err(what, e))?;
            applied(Update::Queue(watcher::Event::Apply(q)))
        }
        Change::PatchQueueParent { name, parent } => {
            let what = format!("set Queue {name} parent");
            let q = Api::<Queue>::all(client.clone())
                .patch(
                    name,
                    &pp,
                    &Patch::Merge(json!({"spec": {"parent": parent}})),
                )
                .await
                .map_err(|e| api_err(what, e))?;
            applied(Update::Queue(watcher::Event::Apply(q)))
        }
        Change::PatchQueueAnnotations { name, annotations } => {
            let what = format!("annotate Queue {name}");
            let q = Api::<Queue>::all(client.clone())
                .patch(name, &pp, &Patch::Merge(annotations_patch(annotations)))
                .await
                .map_err(|e| api_err(what, e))?;
            applied(Update::Queue(watcher::Event::Apply(q)))
        }
        Change::DeleteCommand { namespace, name } => {
            delete::<Command>(client, namespace, name).await?;
            Ok(Vec::new())
        }
        Change::Create(owned) => {
            match owned.as_ref() {
                Owned::Service(o) => create(client, o).await.map(|_| ())?,
                Owned::ConfigMap(o) => create(client, o).await.map(|_| ())?,
                Owned::Secret(o) => create(client, o).await.map(|_| ())?,
                Owned::NetworkPolicy(o) => create(client, o).await.map(|_| ())?,
                Owned::PersistentVolumeClaim(o) => create(client, o).await.map(|_| ())?,
            }
            Ok(Vec::new())
        }
        Change::Update(owned) => {
            match owned.as_ref() {
                Owned::Service(o) => update(client, o).await?,
                Owned::ConfigMap(o) => update(client, o).await?,
                Owned::Secret(o) => update(client, o).await?,
                Owned::NetworkPolicy(o) => update(client, o).await?,
                Owned::PersistentVolumeClaim(o) => update(client, o).await?,
            }
            Ok(Vec::new())
        }
        Change::Delete {
            kind,
            namespace,
            name,
        } => {
            match *kind {
                "Service" => delete::<Service>(client, namespace, name).await?,
                "ConfigMap" => delete::<ConfigMap>(client, namespace, name).await?,
                "Secret" => delete::<Secret>(client, namespace, name).await?,
                "NetworkPolicy" => delete::<NetworkPolicy>(client, namespace, name).await?,
                "PersistentVolumeClaim" => {
                    delete::<PersistentVolumeClaim>(client, namespace, name).await?
                }
                _ => tracing::warn!(kind, "no API for deleting this kind; skipped"),
            }
            Ok(Vec::new())
        }
        // Events go to the event sink, not through here.
        Change::Event(_) => Ok(Vec::new()),
        Change::CreateHyperNode(hn) => {
            let name = hn.metadata.name.clone().unwrap_or_default();
            match Api::<HyperNode>::all(client.clone())
                .create(&PostParams::default(), hn)
                .await
            {
                Ok(h) => applied(Update::HyperNode(watcher::Event::Apply(h))),
                Err(e) if code(&e) == Some(409) => Ok(Vec::new()),
                Err(e) => Err(api_err(format!("create HyperNode {name}"), e)),
            }
        }
        Change::UpdateHyperNode(hn) => {
            let name = hn.metadata.name.clone().unwrap_or_default();
            let what = format!("update HyperNode {name}");
            let h = Api::<HyperNode>::all(client.clone())
                .patch(&name, &pp, &Patch::Merge(hyper_node_patch(hn)))
                .await
                .map_err(|e| api_err(what, e))?;
            applied(Update::HyperNode(watcher::Event::Apply(h)))
        }
        Change::DeleteHyperNode { name } => {
            match Api::<HyperNode>::all(client.clone())
                .delete(name, &DeleteParams::background())
                .await
            {
                Ok(_) => Ok(Vec::new()),
                Err(e) if code(&e) == Some(404) => Ok(Vec::new()),
                Err(e) => Err(api_err(format!("delete HyperNode {name}"), e)),
            }
        }
        Change::UpdateHyperNodeStatus { name, node_count } => {
            let what = format!("update HyperNode {name} status");
            let h = Api::<HyperNode>::all(client.clone())
                .patch_status(
                    name,
                    &pp,
                    &Patch::Merge(json!({"status": {"nodeCount": node_count}})),
                )
                .await
                .map_err(|e| api_err(what, e))?;
            applied(Update::HyperNode(watcher::Event::Apply(h)))
        }
    }
}

/// A merge patch that replaces a discovered HyperNode's spec and merges in its labels and
/// annotations: the members list is replaced whole, an empty tier name removed.
fn hyper_node_patch(hn: &HyperNode) -> serde_json::Value {
    // A null would remove every label or annotation: only what the source sets is sent.
    let mut metadata = serde_json::Map::new();
    if let Some(l) = &hn.metadata.labels {
        metadata.insert("labels".into(), json!(l));
    }
    if let Some(a) = &hn.metadata.annotations {
        metadata.insert("annotations".into(), json!(a));
    }
    let tier_name = (!hn.spec.tier_name.is_empty()).then_some(&hn.spec.tier_name);
    json!({
        "metadata": metadata,
        "spec": {"tier": hn.spec.tier, "tierName": tier_name, "members": hn.spec.members},
    })
}

/// Replaces an owned object's content with a merge patch (no resourceVersion: the controller
/// is its only writer), or creates it when it is gone: a RestartJob deletes a job's ConfigMap
/// while the next sync already writes its host lists again.
async fn update<K>(client: &Client, obj: &K) -> Result<(), ChangeError>
where
    K: Resource<Scope = NamespaceResourceScope>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let m = obj.meta();
    let namespace = m.namespace.clone().unwrap_or_else(|| "default".to_string());
    let name = m.name.clone().unwrap_or_default();
    let what = format!(
        "update {} {namespace}/{name}",
        K::kind(&K::DynamicType::default())
    );
    let mut body = serde_json::to_value(obj).map_err(|e| ChangeError::Encode {
        what: what.clone(),
        source: e,
    })?;
    if let Some(meta) = body.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("resourceVersion");
    }
    match ns::<K>(client, &namespace)
        .patch(&name, &PatchParams::default(), &Patch::Merge(body))
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if code(&e) == Some(404) => create(client, obj).await.map(|_| ()),
        Err(e) => Err(api_err(what, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(code: u16, reason: &str) -> ChangeError {
        let status = kube::core::Status {
            code,
            reason: reason.into(),
            message: format!("refused with {code}"),
            ..kube::core::Status::default()
        };
        api_err("create Pod default/p", KubeError::Api(Box::new(status)))
    }

    fn create_pod() -> Change {
        Change::CreatePod(Box::default())
    }

    fn delete_pod() -> Change {
        Change::DeletePod {
            namespace: "default".into(),
            name: "p".into(),
        }
    }

    #[test]
    fn refusals_retrying_cannot_cure_are_told_and_passing_ones_are_retried() {
        for code in [400, 403, 422] {
            let r = refused(code, "Invalid").refusal(&create_pod()).unwrap();
            assert_eq!(r.reason, "FailedCreate");
            assert!(r.message.contains(&code.to_string()), "{}", r.message);
            assert_eq!(r.what, "create Pod default/p");
        }
        assert_eq!(
            refused(403, "Forbidden")
                .refusal(&delete_pod())
                .unwrap()
                .reason,
            "FailedDelete"
        );
        for code in [409, 429, 500, 503] {
            assert!(
                refused(code, "x").refusal(&create_pod()).is_none(),
                "{code}"
            );
        }
        // A namespace that is gone refuses a create for good; an object that went is no news.
        assert!(refused(404, "NotFound").refusal(&create_pod()).is_some());
        assert!(refused(404, "NotFound").refusal(&delete_pod()).is_none());
    }
}
