//! Watchers: one task per kind, each sending its watch events to the loop that owns the mirror.
//! A watch that fails is retried with backoff and relists on `410 Gone`, so the mirror catches
//! up with whatever happened while it was down.
//!
//! Objects arrive untyped and are read one by one, so an object this program cannot read (a
//! Queue written without `spec`, a field of the wrong type) is left out with a warning naming
//! it, instead of failing the whole list and stalling every object of its kind.

use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::utils::Backoff;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
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
use volcano_api::scheduling::{PodGroup, Queue};
use volcano_api::topology::HyperNode;

use crate::mirror::{Kind, Update};

/// Room for watch events not yet taken by the loop; a full channel slows the watchers down
/// (back-pressure) rather than growing memory.
pub const UPDATE_CHANNEL: usize = 4096;

/// Reads a watched object as `K`; a custom resource written without `spec` reads as one with
/// an empty spec (see [`custom_resource`]).
fn read_object<K>(mut obj: DynamicObject, is_custom: bool) -> Result<K, String>
where
    K: DeserializeOwned,
{
    // Nothing here reads who wrote which field, and on every object the API server sends it
    // is a large part of the whole: kube-scheduler strips it from its informers too.
    obj.metadata.managed_fields = None;
    let id = format!(
        "{}/{}",
        obj.metadata.namespace.as_deref().unwrap_or_default(),
        obj.metadata.name.as_deref().unwrap_or_default()
    );
    let value = serde_json::to_value(obj).map_err(|e| format!("{id}: {e}"))?;
    let read = if is_custom {
        custom_resource::from_value(value)
    } else {
        serde_json::from_value(value)
    };
    read.map_err(|e| format!("{id}: {e}"))
}

/// The event with its object read as `K`; `None` (after a warning) when the object cannot be.
fn typed<K>(
    kind: &str,
    is_custom: bool,
    ev: watcher::Event<DynamicObject>,
) -> Option<watcher::Event<K>>
where
    K: DeserializeOwned,
{
    let read = |obj| {
        read_object::<K>(obj, is_custom)
            .map_err(|e| tracing::warn!(kind, error = %e, "object left out: it cannot be read"))
            .ok()
    };
    Some(match ev {
        watcher::Event::Apply(o) => watcher::Event::Apply(read(o)?),
        watcher::Event::InitApply(o) => watcher::Event::InitApply(read(o)?),
        watcher::Event::Delete(o) => watcher::Event::Delete(read(o)?),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    })
}

fn spawn<K>(
    client: &Client,
    tx: &mpsc::Sender<Update>,
    wrap: fn(watcher::Event<K>) -> Update,
) -> JoinHandle<()>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default,
{
    let resource = ApiResource::erase::<K>(&K::DynamicType::default());
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let tx = tx.clone();
    tokio::spawn(async move {
        let name = resource.kind.clone();
        let is_custom = !resource.group.is_empty() && !resource.group.ends_with("k8s.io");
        let mut stream = watcher(api, watcher::Config::default().any_semantic())
            .backoff(WatchBackoff::default())
            .boxed();
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(ev) => {
                    let Some(ev) = typed::<K>(&name, is_custom, ev) else {
                        continue;
                    };
                    if tx.send(wrap(ev)).await.is_err() {
                        return;
                    }
                }
                Err(e) => tracing::warn!(kind = %name, error = %e, "watch failed; retrying"),
            }
        }
    })
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

/// Starts watchers for `kinds`; they stop when the receiver is dropped or the handles aborted.
pub fn watch(client: &Client, kinds: &[Kind], tx: &mpsc::Sender<Update>) -> Vec<JoinHandle<()>> {
    kinds
        .iter()
        .map(|k| match k {
            Kind::Pod => spawn::<Pod>(client, tx, Update::Pod),
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

#[cfg(test)]
mod tests {
    use super::*;

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
