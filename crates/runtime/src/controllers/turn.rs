//! One controller turn's changes, written to the API server: in order, a run of pod writes side
//! by side, stopping at the first refusal.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use kube::Client;
use tokio::sync::Semaphore;
use tokio::task::{Id, JoinSet};
use volcano_controllers::change::Change;
use volcano_controllers::job::controller::Refusal;
use volcano_controllers::manager::WorkKey;

use super::changes;
use crate::events::EventSink;
use crate::metrics::{ControllerMetrics, label};
use crate::mirror::Update;

/// Pod creations (or deletions) of one turn in flight at once: a Job's pods are written side
/// by side, as Volcano's job controller creates them, so a gang's last pod is not one round
/// trip per pod behind its first, each pod waiting for the others to be scheduled.
const POD_WRITES_IN_FLIGHT: usize = 16;

/// Pod writes in flight across all turns: as many as turns were before pods went side by side,
/// so a burst of Jobs does not open more requests than the API server's in-flight limits take.
const POD_WRITES_IN_ALL: usize = 64;

/// How a turn's writes went.
pub(super) enum Written {
    /// Every change was made.
    All,
    /// A change failed for a passing reason (a conflict, the server away): retried with backoff.
    Failed,
    /// A change was refused for a lasting reason.
    Refused(Refusal),
}

/// A finished turn: its key, how its writes went, and what the API server returned.
pub(super) type TurnDone = (WorkKey, Written, Vec<Update>);

/// The turns whose writes are in flight, each with its key, so that a turn whose task failed
/// is still finished (as failed) and its key handed out again.
pub(super) struct TurnsInFlight {
    turns: JoinSet<TurnDone>,
    keys: HashMap<Id, WorkKey>,
    client: Client,
    events: EventSink,
    metrics: ControllerMetrics,
    pod_writes: Arc<Semaphore>,
}

impl TurnsInFlight {
    /// None in flight; turns write through `client`, telling their events to `events`.
    pub(super) fn new(client: Client, events: EventSink, metrics: ControllerMetrics) -> Self {
        TurnsInFlight {
            turns: JoinSet::new(),
            keys: HashMap::new(),
            client,
            events,
            metrics,
            pod_writes: Arc::new(Semaphore::new(POD_WRITES_IN_ALL)),
        }
    }

    /// How many turns are in flight.
    pub(super) fn len(&self) -> usize {
        self.turns.len()
    }

    /// Whether none is.
    pub(super) fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// Starts writing the changes of `key`'s turn.
    pub(super) fn start(&mut self, key: WorkKey, changes: Vec<Change>, uids: Vec<Option<String>>) {
        let turn = Turn {
            client: self.client.clone(),
            events: self.events.clone(),
            metrics: self.metrics.clone(),
            pod_writes: self.pod_writes.clone(),
        };
        let kept = key.clone();
        let handle = self.turns.spawn(async move {
            let (written, updates) = turn.write(&key, &changes, uids).await;
            (key, written, updates)
        });
        self.keys.insert(handle.id(), kept);
    }

    /// The next turn to finish; `None` when none is in flight.
    pub(super) async fn next(&mut self) -> Option<TurnDone> {
        let done = self.turns.join_next_with_id().await?;
        let id = match &done {
            Ok((id, _)) => *id,
            Err(e) => e.id(),
        };
        let key = self.keys.remove(&id);
        match (done, key) {
            (Ok((_, done)), _) => Some(done),
            (Err(e), Some(key)) => {
                tracing::error!(work = ?key, error = %e, "a controller turn failed; its work is retried");
                Some((key, Written::Failed, Vec::new()))
            }
            (Err(e), None) => {
                tracing::error!(error = %e, "a controller turn failed");
                None
            }
        }
    }
}

/// What a turn needs to write its changes, apart from the loop.
struct Turn {
    client: Client,
    events: EventSink,
    metrics: ControllerMetrics,
    /// Shared by every turn: see [`POD_WRITES_IN_ALL`].
    pod_writes: Arc<Semaphore>,
}

impl Turn {
    /// Writes one turn's changes in order, stopping at the first refusal: a passing one (a
    /// conflict, the server away) is retried with the work queue's backoff, a lasting one is
    /// told on the Job and retried on the longer waits of `JobController::refused`. A run of
    /// pod creations (or of pod deletions) is written side by side, and the run's first
    /// refusal in order counts; what the others wrote is kept all the same. Returns what the
    /// API server returned, for the mirror and the controllers. `uids` are those of the
    /// events' objects, change by change.
    async fn write(
        &self,
        key: &WorkKey,
        changes: &[Change],
        uids: Vec<Option<String>>,
    ) -> (Written, Vec<Update>) {
        let mut updates = Vec::new();
        let mut at = 0;
        while at < changes.len() {
            let run = side_by_side_run(&changes[at..]);
            let now = &changes[at..at + run];
            let uid = uids.get(at).cloned().flatten();
            at += run;
            if let [Change::Event(e)] = now {
                self.events.send(e.clone(), uid);
                continue;
            }
            let mut results = Vec::with_capacity(run);
            if run > 1 {
                results = apply_side_by_side(&self.client, &self.pod_writes, now).await;
            } else {
                for c in now {
                    results.push(changes::apply(&self.client, c).await);
                }
            }
            let mut refused = None;
            for (c, result) in now.iter().zip(results) {
                match result {
                    Ok(u) => {
                        self.metrics
                            .changes
                            .get_or_create(&label("result", "ok"))
                            .inc();
                        updates.extend(u);
                    }
                    Err(e) => {
                        self.metrics
                            .changes
                            .get_or_create(&label("result", "failed"))
                            .inc();
                        if refused.is_none() {
                            refused = Some(match e.refusal(c) {
                                Some(r) => {
                                    tracing::warn!(work = ?key, error = %e, "change refused for a lasting reason");
                                    Written::Refused(r)
                                }
                                None => {
                                    tracing::warn!(work = ?key, error = %e, "change refused; the work is retried");
                                    Written::Failed
                                }
                            });
                        }
                    }
                }
            }
            if let Some(r) = refused {
                return (r, updates);
            }
        }
        (Written::All, updates)
    }
}

/// Writes `changes` with up to [`POD_WRITES_IN_FLIGHT`] in flight, their outcomes in order.
async fn apply_side_by_side(
    client: &Client,
    pod_writes: &Semaphore,
    changes: &[Change],
) -> Vec<Result<Vec<Update>, changes::ChangeError>> {
    let mut pending = futures::stream::FuturesOrdered::new();
    let mut results = Vec::with_capacity(changes.len());
    let mut queued = changes.iter();
    loop {
        while pending.len() < POD_WRITES_IN_FLIGHT {
            let Some(c) = queued.next() else { break };
            pending.push_back(apply_with_permit(client, pod_writes, c));
        }
        match pending.next().await {
            Some(r) => results.push(r),
            None => return results,
        }
    }
}

/// Writes `change` once a permit of `pod_writes` is free.
async fn apply_with_permit(
    client: &Client,
    pod_writes: &Semaphore,
    change: &Change,
) -> Result<Vec<Update>, changes::ChangeError> {
    // The semaphore is never closed; were it, the write would go ahead unpaced.
    let _permit = pod_writes.acquire().await.ok();
    changes::apply(client, change).await
}

/// How many changes from the start of `changes` are written side by side: a run of pod
/// creations, or of pod deletions (no two of one pod: a turn creates the pods it lacks and
/// deletes ones it has); any other change alone, in its place.
fn side_by_side_run(changes: &[Change]) -> usize {
    let kind = |c: &Change| match c {
        Change::CreatePod(_) => Some(0),
        Change::DeletePod { .. } => Some(1),
        _ => None,
    };
    match changes.first().and_then(kind) {
        Some(k) => changes.iter().take_while(|c| kind(c) == Some(k)).count(),
        None => usize::from(!changes.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use prometheus_client::registry::Registry;
    use volcano_api::k8s_openapi::api::core::v1::Pod;
    use volcano_api::scheduling::{PodGroup, PodGroupSpec};

    use super::*;

    /// What the fake API server was asked, in the order the requests were answered.
    type Answered = Arc<Mutex<Vec<String>>>;

    /// An API server that answers a pod creation only once `together` of them are in flight
    /// (a 500 if that does not happen within a second), refuses pod `refused` as invalid, and
    /// echoes every other creation back.
    fn server(together: usize, refused: &'static str) -> (Client, Answered) {
        let answered: Answered = Arc::default();
        let barrier = Arc::new(tokio::sync::Barrier::new(together));
        let seen = answered.clone();
        let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let (barrier, seen) = (barrier.clone(), seen.clone());
            async move {
                let path = req.uri().path().to_string();
                let body = http_body_util::BodyExt::collect(req.into_body())
                    .await
                    .unwrap()
                    .to_bytes();
                let mut obj: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let name = obj["metadata"]["name"].as_str().unwrap().to_string();
                let (code, answer) = if path.ends_with("/pods") {
                    let met = tokio::time::timeout(Duration::from_secs(1), barrier.wait())
                        .await
                        .is_ok();
                    if !met {
                        (500, serde_json::json!({"kind": "Status", "code": 500}))
                    } else if name == refused {
                        let status = serde_json::json!({"kind": "Status", "code": 422,
                            "reason": "Invalid", "message": "pod is invalid"});
                        (422, status)
                    } else {
                        obj["metadata"]["resourceVersion"] = "1".into();
                        (201, obj)
                    }
                } else {
                    obj["metadata"]["resourceVersion"] = "1".into();
                    (201, obj)
                };
                seen.lock().unwrap().push(format!("{code} {name}"));
                let mut r = http::Response::new(kube::client::Body::from(
                    serde_json::to_vec(&answer).unwrap(),
                ));
                *r.status_mut() = http::StatusCode::from_u16(code).unwrap();
                Ok::<_, std::convert::Infallible>(r)
            }
        });
        (Client::new(service, "default"), answered)
    }

    fn turn(client: Client) -> Turn {
        Turn {
            events: EventSink::start(client.clone(), "volcano-controllers", "test"),
            metrics: ControllerMetrics::register(&mut Registry::default()),
            client,
            pod_writes: Arc::new(Semaphore::new(POD_WRITES_IN_ALL)),
        }
    }

    fn create_pod(name: &str) -> Change {
        let mut pod = Pod::default();
        pod.metadata.name = Some(name.into());
        pod.metadata.namespace = Some("default".into());
        Change::CreatePod(Box::new(pod))
    }

    fn create_pod_group(name: &str) -> Change {
        let mut pg = PodGroup::new(name, PodGroupSpec::default());
        pg.metadata.namespace = Some("default".into());
        Change::CreatePodGroup(Box::new(pg))
    }

    fn names(updates: &[Update]) -> Vec<String> {
        let mut names: Vec<String> = updates
            .iter()
            .map(|u| match u {
                Update::Pod(kube::runtime::watcher::Event::Apply(p)) => {
                    p.metadata.name.clone().unwrap_or_default()
                }
                Update::PodGroup(kube::runtime::watcher::Event::Apply(p)) => {
                    p.metadata.name.clone().unwrap_or_default()
                }
                _ => "other".into(),
            })
            .collect();
        names.sort();
        names
    }

    #[tokio::test(start_paused = true)]
    async fn a_jobs_pods_are_created_side_by_side_and_what_follows_waits_for_all_of_them() {
        let (client, answered) = server(5, "");
        let mut changes: Vec<Change> = (0..5).map(|i| create_pod(&format!("w-{i}"))).collect();
        changes.push(create_pod_group("after"));
        let uids = vec![None; changes.len()];
        let (written, updates) = turn(client).write(&WorkKey::Events, &changes, uids).await;
        let answered = answered.lock().unwrap().clone();
        assert!(
            matches!(written, Written::All),
            "five pods in flight at once are all created: {answered:?}"
        );
        assert_eq!(
            names(&updates),
            ["after", "w-0", "w-1", "w-2", "w-3", "w-4"]
        );
        assert_eq!(
            answered.last().map(String::as_str),
            Some("201 after"),
            "the change after the pods is written once they all are: {answered:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_pod_keeps_what_the_others_wrote_and_ends_the_turn_there() {
        let (client, answered) = server(3, "w-1");
        let changes = vec![
            create_pod("w-0"),
            create_pod("w-1"),
            create_pod("w-2"),
            create_pod_group("after"),
        ];
        let uids = vec![None; changes.len()];
        let (written, updates) = turn(client).write(&WorkKey::Events, &changes, uids).await;
        let Written::Refused(refusal) = written else {
            panic!("a pod the API server finds invalid is a lasting refusal");
        };
        assert!(refusal.message.contains("422"), "{}", refusal.message);
        assert_eq!(
            names(&updates),
            ["w-0", "w-2"],
            "the pods created beside the refused one reach the mirror"
        );
        let answered = answered.lock().unwrap().clone();
        assert!(
            !answered.iter().any(|a| a.ends_with(" after")),
            "nothing after the refused run is written: {answered:?}"
        );
    }

    #[test]
    fn runs_of_pod_creations_or_deletions_go_together_and_anything_else_alone() {
        let delete = |name: &str| Change::DeletePod {
            namespace: "default".into(),
            name: name.into(),
        };
        let changes = [
            create_pod("a"),
            create_pod("b"),
            delete("c"),
            delete("d"),
            create_pod_group("g"),
            create_pod("e"),
        ];
        let mut runs = Vec::new();
        let mut at = 0;
        while at < changes.len() {
            let run = side_by_side_run(&changes[at..]);
            runs.push(run);
            at += run;
        }
        assert_eq!(runs, [2, 2, 1, 1]);
        assert_eq!(side_by_side_run(&[]), 0);
    }
}
