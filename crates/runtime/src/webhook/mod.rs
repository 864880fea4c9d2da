//! `volcano webhook-manager`: Volcano's admission webhooks over HTTPS, answering with the rules
//! of `volcano_controllers::admission` (the same `volcano up` applies in process).
//!
//! - [`certs`]: the serving certificate, from files or generated, renewed without a restart.
//! - [`configurations`]: our CA (and URL) written into the webhook configurations.
//! - [`queues`]: the queues the rules look up, from a watch.
//! - [`review`]: AdmissionReview in and out.
//! - [`tls`]: the HTTPS listener.

pub mod certs;
pub mod configurations;
pub mod queues;
pub mod review;
pub mod tls;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use kube::Client;
use serde_json::Value;
use tokio::task::JoinHandle;
use volcano_controllers::admission::{AdmissionSettings, Endpoint};

use crate::Stop;
use crate::serve::Readiness;
use certs::{CertSource, CurrentCert, Issued};
use configurations::{ClientTarget, write_client_configs};
use queues::QueueMirror;

/// Why the webhook server could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// A certificate could not be read, generated or used.
    #[error("{source_name}: {message}")]
    Certificate {
        /// The file, or "generated certificate".
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// A webhook configuration could not be read or written.
    #[error("webhook configuration {name}: {message}")]
    Configuration {
        /// The configuration.
        name: String,
        /// The API server's answer.
        message: String,
    },
    /// The HTTPS address could not be served.
    #[error("cannot serve HTTPS on {addr}: {message}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        message: String,
    },
}

/// How the webhook server runs.
#[derive(Debug, Clone)]
pub struct WebhookOptions {
    /// Where HTTPS is served.
    pub listen: SocketAddr,
    /// The endpoints served (`--enabled-admission`).
    pub endpoints: Vec<Endpoint>,
    /// The rules' switches.
    pub settings: AdmissionSettings,
    /// Where the serving certificate comes from.
    pub certs: CertSource,
    /// `--webhook-url`: written into the configurations in place of their Service.
    pub url: Option<String>,
    /// How often certificate files, renewal and the configurations are checked.
    pub check_every: Duration,
}

/// A running webhook server.
pub struct WebhookServer {
    /// The address HTTPS is served on (the port chosen, when 0 was asked).
    pub addr: SocketAddr,
    /// Ready once the queues have been listed.
    pub ready: Readiness,
    /// Set once our CA (and URL) is in every configuration.
    pub configured: Readiness,
    /// The tasks: server, queue watch, certificate and configuration upkeep.
    pub tasks: Vec<JoinHandle<()>>,
}

struct Shared {
    queues: QueueMirror,
    settings: AdmissionSettings,
    ready: Readiness,
}

impl WebhookServer {
    /// Issues the certificate, starts the queue watch and serves HTTPS until `stop`.
    pub async fn start(
        client: Client,
        options: WebhookOptions,
        stop: Stop,
    ) -> Result<WebhookServer, WebhookError> {
        let issued = options.certs.issue()?;
        let current = CurrentCert::new(issued.key.clone());
        let listen_error = |e: std::io::Error| WebhookError::Listen {
            addr: options.listen,
            message: e.to_string(),
        };
        let tcp = tokio::net::TcpListener::bind(options.listen)
            .await
            .map_err(listen_error)?;
        let listener =
            tls::TlsListener::new(tcp, current.clone(), stop.clone()).map_err(listen_error)?;
        let addr = axum::serve::Listener::local_addr(&listener).map_err(listen_error)?;

        let ready = Readiness::default();
        let queues = QueueMirror::default();
        let shared = Arc::new(Shared {
            queues: queues.clone(),
            settings: options.settings.clone(),
            ready: ready.clone(),
        });
        let mut router = Router::new().route("/healthz", get(|| async { "ok\n" }));
        for &endpoint in &options.endpoints {
            router = router.route(
                endpoint.path(),
                post(move |state: State<Arc<Shared>>, body: Bytes| handle(endpoint, state, body)),
            );
        }
        let router = router.with_state(shared);
        let mut server_stop = stop.clone();
        let server = tokio::spawn(async move {
            let shutdown = async move {
                let _ = server_stop.wait_for(|s| *s).await;
            };
            if let Err(e) = axum::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .await
            {
                tracing::error!(error = %e, "the webhook server stopped");
            }
        });
        let watch = tokio::spawn(queues.run(client.clone(), ready.clone(), stop.clone()));
        let configured = Readiness::default();
        let upkeep = tokio::spawn(upkeep(
            client,
            options,
            issued,
            current,
            configured.clone(),
            stop,
        ));
        tracing::info!(address = %addr, "serving admission webhooks over HTTPS");
        Ok(WebhookServer {
            addr,
            ready,
            configured,
            tasks: vec![server, watch, upkeep],
        })
    }
}

async fn handle(endpoint: Endpoint, State(s): State<Arc<Shared>>, body: Bytes) -> Response {
    if !s.ready.is_ready() {
        // The API server then applies the webhook's failurePolicy; answering without the
        // queues would refuse valid objects for queues not yet seen.
        return (StatusCode::SERVICE_UNAVAILABLE, "queues not listed yet\n").into_response();
    }
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("the body is not an AdmissionReview: {e}\n"),
            )
                .into_response();
        }
    };
    axum::Json(review::answer(endpoint, &body, &s.queues, &s.settings)).into_response()
}

/// Writes our CA into the configurations, retrying those not there yet, and replaces the
/// certificate when its files change or it is due for renewal. A renewed generated CA is
/// trusted next to the previous one until the following renewal, so requests the API server
/// started with the old bundle still verify.
async fn upkeep(
    client: Client,
    options: WebhookOptions,
    mut issued: Issued,
    current: CurrentCert,
    configured: Readiness,
    mut stop: Stop,
) {
    let mut bundle = issued.ca_bundle.clone();
    let mut written = false;
    let mut reported_missing: Vec<String> = Vec::new();
    loop {
        if options.certs.is_stale(&issued) {
            match options.certs.issue() {
                Ok(next) => {
                    bundle = match options.certs {
                        CertSource::Generated { .. } => {
                            [next.ca_bundle.as_slice(), issued.ca_bundle.as_slice()].concat()
                        }
                        CertSource::Files { .. } => next.ca_bundle.clone(),
                    };
                    issued = next;
                    written = false;
                    // The bundle first, then the certificate: the API server must trust the
                    // new CA before it is shown a certificate signed by it.
                    write(&client, &options, &bundle, &mut reported_missing).await;
                    current.replace(issued.key.clone());
                    tracing::info!("serving a new certificate");
                }
                Err(e) => tracing::warn!(error = %e, "keeping the current certificate"),
            }
        }
        if !written {
            written = write(&client, &options, &bundle, &mut reported_missing).await;
            if written {
                configured.set_ready();
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(options.check_every) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// Writes the bundle into every configuration; true when all were there and written.
async fn write(
    client: &Client,
    options: &WebhookOptions,
    bundle: &[u8],
    reported_missing: &mut Vec<String>,
) -> bool {
    let target = ClientTarget {
        ca_bundle: bundle.to_vec(),
        url: options.url.clone(),
    };
    match write_client_configs(client, &options.endpoints, &target).await {
        Ok(missing) if missing.is_empty() => true,
        Ok(missing) => {
            if *reported_missing != missing {
                tracing::warn!(
                    configurations = missing.join(", "),
                    "webhook configurations not found; the API server does not call these \
                     endpoints until they are installed (retrying)"
                );
                *reported_missing = missing;
            }
            false
        }
        Err(e) => {
            tracing::warn!(error = %e, "writing the CA bundle failed; retrying");
            false
        }
    }
}
