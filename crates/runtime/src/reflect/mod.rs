//! Watchers: one task per kind, each sending its watch events to the loop that owns the mirror.
//! A watch that fails is retried with backoff and relists on `410 Gone`, so the mirror catches
//! up with whatever happened while it was down.
//!
//! Objects are read one by one, so an object this program cannot read (a field of the wrong
//! type) is left out with a warning naming it, instead of failing the whole list and stalling
//! every object of its kind; a Volcano object written without `spec` reads with an empty one.

use std::fmt::Debug;
use std::time::Duration;

use std::borrow::Cow;

use futures::StreamExt;
use kube::runtime::utils::Backoff;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use volcano_api::batch::Job;
use volcano_api::bus::Command;
use volcano_api::cronjob::CronJob;
use volcano_api::custom_resource;
use volcano_api::flow::{JobFlow, JobTemplate};
use volcano_api::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use volcano_api::k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod,
};
use volcano_api::k8s_openapi::api::scheduling::v1::PriorityClass;
use volcano_api::k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_api::topology::HyperNode;
use volcano_controllers::pod_view::controller_pod;
use volcano_scheduler::cache::slim_pod;

use crate::mirror::{Kind, Update};

mod pod_protobuf;
mod pod_watch;

pub use pod_watch::{PodScope, ReadError, read as read_protobuf_pod};

/// Room for watch events not yet taken by the loop; a full channel slows the watchers down
/// (back-pressure) rather than growing memory.
pub const UPDATE_CHANNEL: usize = 4096;

/// A watched object read as `K` straight from the API server's JSON (one parse into a JSON
/// tree, then `K` taking its strings by move), or, when it cannot be read, its identity and
/// why. Reading each object on its own keeps one bad object from failing the whole list.
#[derive(Clone, Debug)]
struct Lenient<K>(Result<K, Unreadable>);

/// An object that cannot be read as its kind.
#[derive(Clone, Debug)]
struct Unreadable {
    meta: ObjectMeta,
    error: String,
}

impl<K: Resource> Resource for Lenient<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }
    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        match &self.0 {
            Ok(k) => k.meta(),
            Err(u) => &u.meta,
        }
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match &mut self.0 {
            Ok(k) => k.meta_mut(),
            Err(u) => &mut u.meta,
        }
    }
}

impl<'de, K> Deserialize<'de> for Lenient<K>
where
    K: Resource + DeserializeOwned,
    K::DynamicType: Default,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut value = Value::deserialize(d)?;
        // Nothing here reads who wrote which field, and on every object the API server sends
        // it is a large part of the whole: kube-scheduler strips it from its informers too.
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        let group = K::group(&K::DynamicType::default()).into_owned();
        if !group.is_empty() && !group.ends_with("k8s.io") {
            custom_resource::ensure_spec(&mut value);
        }
        let identity = |field: &str| {
            value
                .get("metadata")
                .and_then(|m| m.get(field))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let meta = ObjectMeta {
            name: identity("name"),
            namespace: identity("namespace"),
            resource_version: identity("resourceVersion"),
            ..ObjectMeta::default()
        };
        Ok(Lenient(K::deserialize(value).map_err(|e| Unreadable {
            meta,
            error: e.to_string(),
        })))
    }
}

impl<K> Serialize for Lenient<K> {
    /// Never called: watchers only read. Present because kube's watch event type derives it.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

/// An object read from the API server's JSON exactly as a watcher reads it (see
/// [`Lenient`]); why not, when it cannot be. For measurements and tests of that path.
pub fn read<K>(json: &[u8]) -> Result<K, String>
where
    K: Resource + DeserializeOwned,
    K::DynamicType: Default,
{
    let lenient: Lenient<K> = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    lenient.0.map_err(|u| u.error)
}

/// The event with its object read as `K`; `None` (after a warning naming it) when the object
/// cannot be.
fn typed<K>(kind: &str, ev: watcher::Event<Lenient<K>>) -> Option<watcher::Event<K>> {
    let read = |o: Lenient<K>| match o.0 {
        Ok(k) => Some(k),
        Err(u) => {
            let id = format!(
                "{}/{}",
                u.meta.namespace.as_deref().unwrap_or_default(),
                u.meta.name.as_deref().unwrap_or_default()
            );
            tracing::warn!(kind, object = %id, error = %u.error, "object left out: it cannot be read");
            None
        }
    };
    Some(match ev {
        watcher::Event::Apply(o) => watcher::Event::Apply(read(o)?),
        watcher::Event::InitApply(o) => watcher::Event::InitApply(read(o)?),
        watcher::Event::Delete(o) => watcher::Event::Delete(read(o)?),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    })
}

/// How much of each watched pod a mirror keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodView {
    /// All of it, watched in JSON: for a mirror whose readers are not known.
    Full,
    /// What the controllers read ([`controller_pod`]): identity, owners, resources, phase,
    /// conditions and container statuses.
    Controllers,
    /// What the scheduler reads ([`slim_pod`]): most of a pod (environment, mounts, probes,
    /// the service-account volume, container statuses) is never read by it, and it holds
    /// every pod of the cluster.
    Scheduler,
}

impl PodView {
    /// The part of `pod` a mirror of this view keeps.
    pub fn keep(self, pod: Pod) -> Pod {
        match self {
            PodView::Full => pod,
            PodView::Controllers => controller_pod(pod),
            PodView::Scheduler => slim_pod(pod),
        }
    }
}

/// A watch event with `keep` applied to its object.
fn kept<K>(ev: watcher::Event<K>, keep: impl Fn(K) -> K) -> watcher::Event<K> {
    match ev {
        watcher::Event::Apply(o) => watcher::Event::Apply(keep(o)),
        watcher::Event::InitApply(o) => watcher::Event::InitApply(keep(o)),
        watcher::Event::Delete(o) => watcher::Event::Delete(keep(o)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

fn spawn<K>(
    client: &Client,
    tx: &mpsc::Sender<Update>,
    wrap: impl Fn(watcher::Event<K>) -> Update + Send + 'static,
) -> JoinHandle<()>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Clone + Eq + std::hash::Hash + Debug + Send + Sync,
{
    tokio::spawn(json_watch(client.clone(), tx.clone(), wrap))
}

/// Lists and watches every `K` of the cluster in JSON with kube-rs' watcher, each event sent on
/// as `wrap` makes it, until the receiver is gone.
async fn json_watch<K>(
    client: Client,
    tx: mpsc::Sender<Update>,
    wrap: impl Fn(watcher::Event<K>) -> Update + Send + 'static,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Clone + Eq + std::hash::Hash + Debug + Send + Sync,
{
    let api: Api<Lenient<K>> = Api::all_with(client, &K::DynamicType::default());
    json_watch_of(api, watcher::Config::default().any_semantic(), tx, wrap).await;
}

/// Lists and watches the `K` of `api` that `config` selects, as [`json_watch`].
async fn json_watch_of<K>(
    api: Api<Lenient<K>>,
    config: watcher::Config,
    tx: mpsc::Sender<Update>,
    wrap: impl Fn(watcher::Event<K>) -> Update + Send + 'static,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Clone + Eq + std::hash::Hash + Debug + Send + Sync,
{
    let name = K::kind(&K::DynamicType::default()).into_owned();
    let mut stream = watcher(api, config)
        .backoff(WatchBackoff::default())
        .boxed();
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(ev) => {
                let Some(ev) = typed::<K>(&name, ev) else {
                    continue;
                };
                if tx.send(wrap(ev)).await.is_err() {
                    return;
                }
            }
            Err(e) => tracing::warn!(kind = %name, error = %e, "watch failed; retrying"),
        }
    }
}

/// Retry delays of a failed watch: 100 ms doubling up to [`WatchBackoff::CAP`], back to the
/// start once a watch works again. kube-rs' default grows to 30 s, so after an API server
/// outage the watches came back up to half a minute late and new Jobs waited that long; a
/// list every second per kind while the server is away costs it little.
#[derive(Debug, Clone)]
pub struct WatchBackoff {
    next: Duration,
}

impl WatchBackoff {
    /// The first delay.
    pub const START: Duration = Duration::from_millis(100);
    /// The longest delay.
    pub const CAP: Duration = Duration::from_secs(1);
}

impl Default for WatchBackoff {
    fn default() -> Self {
        WatchBackoff { next: Self::START }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    /// The next delay, spread over ±25% so that the many watches of every component that lost
    /// one API server do not all come back at the same instant.
    fn next(&mut self) -> Option<Duration> {
        let now = self.next;
        self.next = (self.next * 2).min(Self::CAP);
        let spread = f64::from(rand_core_06::RngCore::next_u32(&mut rand_core_06::OsRng))
            / f64::from(u32::MAX);
        Some(now.mul_f64(0.75 + 0.5 * spread))
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = Self::START;
    }
}

/// Starts watchers for `kinds`, pods kept as `pods` says; they stop when the receiver is
/// dropped or the handles aborted.
pub fn watch(
    client: &Client,
    kinds: &[Kind],
    pods: PodView,
    tx: &mpsc::Sender<Update>,
) -> Vec<JoinHandle<()>> {
    kinds
        .iter()
        .map(|k| match k {
            // Pods are the one kind whose watch encoding shows in the API server's CPU: a
            // view names the fields read, so that protobuf can be read into them.
            Kind::Pod => watch_pods(client, PodScope::cluster(), pods, tx),
            Kind::Node => spawn::<Node>(client, tx, Update::Node),
            Kind::PodGroup => spawn::<PodGroup>(client, tx, Update::PodGroup),
            Kind::Queue => spawn::<Queue>(client, tx, Update::Queue),
            Kind::Job => spawn::<Job>(client, tx, Update::Job),
            Kind::PriorityClass => spawn::<PriorityClass>(client, tx, Update::PriorityClass),
            Kind::Command => spawn::<Command>(client, tx, Update::Command),
            Kind::Namespace => spawn::<Namespace>(client, tx, Update::Namespace),
            Kind::PersistentVolume => {
                spawn::<PersistentVolume>(client, tx, Update::PersistentVolume)
            }
            Kind::PersistentVolumeClaim => {
                spawn::<PersistentVolumeClaim>(client, tx, Update::PersistentVolumeClaim)
            }
            Kind::StorageClass => spawn::<StorageClass>(client, tx, Update::StorageClass),
            Kind::CSINode => spawn::<CSINode>(client, tx, Update::CSINode),
            Kind::ReplicaSet => spawn::<ReplicaSet>(client, tx, Update::ReplicaSet),
            Kind::StatefulSet => spawn::<StatefulSet>(client, tx, Update::StatefulSet),
            Kind::Deployment => spawn::<Deployment>(client, tx, Update::Deployment),
            Kind::CronJob => spawn::<CronJob>(client, tx, Update::CronJob),
            Kind::JobFlow => spawn::<JobFlow>(client, tx, Update::JobFlow),
            Kind::JobTemplate => spawn::<JobTemplate>(client, tx, Update::JobTemplate),
            Kind::HyperNode => spawn::<HyperNode>(client, tx, Update::HyperNode),
        })
        .collect()
}

/// Starts a watcher of the pods of `scope`, kept as `pods` says: in protobuf where the server
/// speaks it, but for [`PodView::Full`], which only JSON reads whole. It stops when the
/// receiver is dropped or the handle aborted.
pub fn watch_pods(
    client: &Client,
    scope: PodScope,
    pods: PodView,
    tx: &mpsc::Sender<Update>,
) -> JoinHandle<()> {
    tokio::spawn(pod_watch::run(client.clone(), scope, tx.clone(), pods))
}

#[cfg(test)]
mod tests {
    use super::*;
    use volcano_api::k8s_openapi::api::core::v1::Pod;
    use volcano_api::scheduling::Queue;

    #[test]
    fn objects_read_one_by_one_a_bad_one_named_and_a_queue_without_spec_defaulted() {
        let pod: Lenient<Pod> = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7",
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
            "spec": {"containers": []},
        }))
        .unwrap();
        let pod = pod.0.unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("p"));
        assert!(pod.metadata.managed_fields.is_none(), "not kept");

        let bad: Lenient<Pod> = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "broken", "namespace": "ns", "resourceVersion": "8"},
            "spec": {"containers": "not a list"},
        }))
        .unwrap();
        assert_eq!(bad.meta().resource_version.as_deref(), Some("8"));
        let ev = typed::<Pod>("Pod", watcher::Event::Apply(bad));
        assert!(ev.is_none(), "left out");

        let q: Lenient<Queue> =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "q"}})).unwrap();
        assert_eq!(q.0.unwrap().spec.weight, 1);
    }

    #[test]
    fn watch_retries_wait_at_most_a_second_and_start_over_after_a_success() {
        let within =
            |d: Duration, base: Duration| d >= base.mul_f64(0.75) && d <= base.mul_f64(1.25);
        let mut b = WatchBackoff::default();
        let delays: Vec<Duration> = b.by_ref().take(6).collect();
        assert!(within(delays[0], Duration::from_millis(100)), "{delays:?}");
        assert!(within(delays[1], Duration::from_millis(200)), "{delays:?}");
        assert!(within(delays[5], WatchBackoff::CAP), "{delays:?}");
        assert!(delays.iter().all(|d| *d <= WatchBackoff::CAP.mul_f64(1.25)));
        b.reset();
        assert!(within(b.next().unwrap_or_default(), WatchBackoff::START));
    }
}
