//! The HTTP face of the store: routes, discovery, resource endpoints, watches and tables.

pub mod discovery;
pub mod faults;
pub mod openapi;
pub mod resource;
pub mod response;
pub mod table;
pub mod target;
pub mod unknown;
pub mod watch;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::IntoResponse;
use axum::routing::{any, get};

use crate::error::ApiError;
use crate::shared::SharedStore;

/// Kubernetes' request body limit (3 MiB); axum's default of 2 MiB would refuse large CRDs.
const BODY_LIMIT: usize = 3 * 1024 * 1024;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The objects.
    pub store: SharedStore,
    /// The address the server listens on, for `/api`'s `serverAddressByClientCIDRs`.
    pub addr: SocketAddr,
    /// Idle time after which a watch with bookmarks sends one.
    pub bookmark_interval: Duration,
    /// Becomes true (or closes) when the server shuts down; watches end then.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    /// Writes refused on purpose (none unless asked for).
    pub faults: Arc<faults::WriteFaults>,
}

/// The router of the whole API.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/version", get(discovery::version))
        .route("/healthz", get(discovery::healthy))
        .route("/readyz", get(discovery::healthy))
        .route("/livez", get(discovery::healthy))
        .route("/openapi/v2", get(openapi::v2))
        .route("/openapi/v3", get(openapi::v3_root))
        .route("/openapi/v3/{*path}", get(openapi::v3_group_version))
        .route("/api", get(discovery::api_versions))
        .route("/api/v1", get(discovery::core_resources))
        .route("/api/v1/{*rest}", any(resource::core))
        .route("/apis", get(discovery::group_list))
        .route("/apis/{group}", get(discovery::group))
        .route("/apis/{group}/{version}", get(discovery::group_resources))
        .route("/apis/{group}/{version}/{*rest}", any(resource::grouped))
        .fallback(|| async { ApiError::no_route().into_response() })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}
