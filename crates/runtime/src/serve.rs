//! `/metrics` (Prometheus text format 0.0.4, as Volcano serves it), `/healthz` and `/readyz`
//! on `--listen-address`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use crate::exposition;
use crate::metrics::UNSUFFIXED_COUNTERS;

/// Whether the component has listed everything once and may serve.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    /// Marks the component ready.
    pub fn set_ready(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether it is ready.
    pub fn is_ready(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

struct Shared {
    registry: Registry,
    ready: Readiness,
}

async fn metrics(State(s): State<Arc<Shared>>) -> impl IntoResponse {
    match render(&s.registry) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, exposition::CONTENT_TYPE)],
            body,
        ),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("encoding metrics failed: {e}\n"),
        ),
    }
}

/// What `/metrics` serves for `registry`: the text format 0.0.4 with Volcano's names.
pub fn render(registry: &Registry) -> Result<String, std::fmt::Error> {
    let mut openmetrics = String::new();
    prometheus_client::encoding::text::encode(&mut openmetrics, registry)?;
    Ok(exposition::to_text(&openmetrics, &UNSUFFIXED_COUNTERS))
}

async fn readyz(State(s): State<Arc<Shared>>) -> impl IntoResponse {
    if s.ready.is_ready() {
        (StatusCode::OK, "ok\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced\n")
    }
}

/// Binds `addr` and serves until `stop` fires; returns the bound address (port 0 picks one).
pub async fn serve(
    addr: SocketAddr,
    registry: Registry,
    ready: Readiness,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let shared = Arc::new(Shared { registry, ready });
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/livez", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(shared);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let handle = tokio::spawn(async move {
        let shutdown = async move {
            while !*stop.borrow() {
                if stop.changed().await.is_err() {
                    return;
                }
            }
        };
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::warn!(error = %e, "metrics server stopped");
        }
    });
    Ok((bound, handle))
}
