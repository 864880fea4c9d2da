//! Watchers: one task per kind, each sending its watch events to the loop that owns the cache.
//! A watch that fails is retried with backoff and relists on `410 Gone`, so the cache catches
//! up with whatever happened while it was down.

use std::fmt::Debug;

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use volcano_api::batch::Job;
use volcano_api::bus::Command;
use volcano_api::k8s_openapi::api::core::v1::{Node, Pod};
use volcano_api::k8s_openapi::api::scheduling::v1::PriorityClass;
use volcano_api::scheduling::{PodGroup, Queue};

use crate::cache::{Kind, Update};

/// Room for watch events not yet taken by the loop; a full channel slows the watchers down
/// (back-pressure) rather than growing memory.
pub const UPDATE_CHANNEL: usize = 4096;

fn spawn<K>(
    client: &Client,
    tx: &mpsc::Sender<Update>,
    wrap: fn(watcher::Event<K>) -> Update,
) -> JoinHandle<()>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::all(client.clone());
    let tx = tx.clone();
    tokio::spawn(async move {
        let name = K::kind(&K::DynamicType::default()).to_string();
        let mut stream = watcher(api, watcher::Config::default().any_semantic())
            .default_backoff()
            .boxed();
        while let Some(ev) = stream.next().await {
            match ev {
                Ok(ev) => {
                    if tx.send(wrap(ev)).await.is_err() {
                        return;
                    }
                }
                Err(e) => tracing::warn!(kind = %name, error = %e, "watch failed; retrying"),
            }
        }
    })
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
        })
        .collect()
}
