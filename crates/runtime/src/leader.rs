//! Leader election on a `coordination.k8s.io` Lease, so two replicas never both write.
//!
//! As client-go does, expiry is judged by this process's own clock from when it last saw the
//! lease record change, never by comparing another machine's timestamps with ours. A leader
//! counts itself leader only until `renew_deadline` after its last successful renewal, which
//! is shorter than `lease_duration`: a leader that cannot renew stops writing before anyone
//! else may take over.

use std::time::Duration;

use kube::api::{Api, PostParams};
use kube::{Client, Error as KubeError};
use tokio::sync::watch;
use tokio::time::Instant;
use volcano_api::k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use volcano_api::k8s_openapi::jiff::Timestamp;

/// Timings of the election.
#[derive(Debug, Clone, Copy)]
pub struct LeaseTimings {
    /// How long a lease holds without renewal (client-go default 15s).
    pub lease_duration: Duration,
    /// How long a leader keeps acting without a successful renewal (default 10s).
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew (default 2s).
    pub retry_period: Duration,
}

impl Default for LeaseTimings {
    fn default() -> Self {
        LeaseTimings {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// Which lease, and who we are.
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This replica's identity (hostname and a random suffix, as client-go).
    pub identity: String,
    /// Timings.
    pub timings: LeaseTimings,
}

/// Whether this replica may write, and until when. Cheap to clone and to ask.
#[derive(Debug, Clone)]
pub struct Leadership {
    until: watch::Receiver<Option<Instant>>,
}

impl Leadership {
    /// Always leader: for a single replica run without election.
    pub fn always() -> Leadership {
        let (_tx, rx) = watch::channel(Some(
            Instant::now() + Duration::from_secs(100 * 365 * 86_400),
        ));
        Leadership { until: rx }
    }

    /// Whether this replica is leader now.
    pub fn is_leader(&self) -> bool {
        self.until
            .borrow()
            .is_some_and(|until| Instant::now() < until)
    }

    /// Waits until this replica is leader (or the elector stopped).
    pub async fn wait(&mut self) {
        loop {
            if self.is_leader() {
                return;
            }
            if self.until.changed().await.is_err() {
                return;
            }
        }
    }
}

/// What the elector last observed of the lease.
struct Observed {
    holder: Option<String>,
    renew_time: Option<Timestamp>,
    seen_at: Instant,
}

/// Runs the election until `stop` fires; on stop, a leader releases the lease so the next
/// replica takes over at once.
pub struct Elector {
    api: Api<Lease>,
    cfg: LeaseConfig,
    observed: Option<Observed>,
    tx: watch::Sender<Option<Instant>>,
}

impl Elector {
    /// An elector for `cfg`, and the leadership it maintains.
    pub fn new(client: Client, cfg: LeaseConfig) -> (Elector, Leadership) {
        let (tx, rx) = watch::channel(None);
        let api = Api::namespaced(client, &cfg.namespace);
        (
            Elector {
                api,
                cfg,
                observed: None,
                tx,
            },
            Leadership { until: rx },
        )
    }

    /// Tries to acquire or renew until `stop` resolves.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        loop {
            let started = Instant::now();
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    let until = started + self.cfg.timings.renew_deadline;
                    let was = self.tx.send_replace(Some(until));
                    if was.is_none_or(|w| w <= started) {
                        tracing::info!(lease = %self.cfg.name, identity = %self.cfg.identity, "became leader");
                    }
                }
                Ok(false) => {
                    if self.tx.send_replace(None).is_some() {
                        tracing::warn!(lease = %self.cfg.name, "lost leadership");
                    }
                }
                // A failed renewal keeps the earlier deadline: leadership runs out on its own.
                Err(KubeError::Api(s)) if s.code == 404 => tracing::error!(
                    lease = %self.cfg.name,
                    namespace = %self.cfg.namespace,
                    "cannot create the leader-election Lease: namespace {} does not exist \
                     (create it, pass --lock-object-namespace, or --leader-elect=false)",
                    self.cfg.namespace
                ),
                Err(e) => tracing::warn!(lease = %self.cfg.name, error = %e, "lease update failed"),
            }
            tokio::select! {
                _ = tokio::time::sleep(self.cfg.timings.retry_period) => {}
                _ = stop.changed() => {
                    self.release().await;
                    return;
                }
            }
            if *stop.borrow() {
                self.release().await;
                return;
            }
        }
    }

    fn micro_now() -> MicroTime {
        MicroTime(Timestamp::now())
    }

    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.cfg.timings.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }

    /// One round of the election; `Ok(true)` if this replica holds the lease now.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, KubeError> {
        let now = Instant::now();
        let existing = match self.api.get_opt(&self.cfg.name).await? {
            Some(l) => l,
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.cfg.name.clone()),
                        namespace: Some(self.cfg.namespace.clone()),
                        ..Default::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(self.cfg.identity.clone()),
                        lease_duration_seconds: Some(self.lease_seconds()),
                        acquire_time: Some(Self::micro_now()),
                        renew_time: Some(Self::micro_now()),
                        lease_transitions: Some(0),
                        ..Default::default()
                    }),
                };
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(KubeError::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e),
                };
            }
        };
        let spec = existing.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let renew_time = spec.renew_time.as_ref().map(|t| t.0);
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|o| o.holder != holder || o.renew_time != renew_time);
        if changed {
            self.observed = Some(Observed {
                holder: holder.clone(),
                renew_time,
                seen_at: now,
            });
        }
        let ours = holder.as_deref() == Some(self.cfg.identity.as_str());
        let expired = holder.is_none()
            || self.observed.as_ref().is_some_and(|o| {
                now.duration_since(o.seen_at)
                    > Duration::from_secs(
                        u64::try_from(spec.lease_duration_seconds.unwrap_or(15)).unwrap_or(15),
                    )
            });
        if !ours && !expired {
            return Ok(false);
        }
        let mut lease = existing;
        let spec = lease.spec.get_or_insert_with(Default::default);
        if !ours {
            spec.acquire_time = Some(Self::micro_now());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.holder_identity = Some(self.cfg.identity.clone());
        spec.lease_duration_seconds = Some(self.lease_seconds());
        spec.renew_time = Some(Self::micro_now());
        // The resourceVersion read above makes this a compare-and-swap: two candidates that
        // both saw the lease expire cannot both take it.
        match self
            .api
            .replace(&self.cfg.name, &PostParams::default(), &lease)
            .await
        {
            Ok(l) => {
                let spec = l.spec.unwrap_or_default();
                self.observed = Some(Observed {
                    holder: spec.holder_identity,
                    renew_time: spec.renew_time.map(|t| t.0),
                    seen_at: now,
                });
                Ok(true)
            }
            Err(KubeError::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the lease up, if held, so a standby takes over without waiting for expiry.
    async fn release(&mut self) {
        self.tx.send_replace(None);
        let Ok(Some(mut lease)) = self.api.get_opt(&self.cfg.name).await else {
            return;
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(self.cfg.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.renew_time = Some(Self::micro_now());
        if let Err(e) = self
            .api
            .replace(&self.cfg.name, &PostParams::default(), &lease)
            .await
        {
            tracing::warn!(lease = %self.cfg.name, error = %e, "could not release the lease");
        }
    }
}
