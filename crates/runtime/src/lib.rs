//! The volcano-rs runtime against a Kubernetes API server, built on kube-rs: watchers keep a
//! mirror of the API server's objects for the scheduler and the controllers, the session
//! loop runs on the schedule period, and decisions and changes go back to the API server as patches of the fields each
//! writer owns.
//!
//! - [`mirror`]: the objects, kept current from watch events and from this process's writes.
//! - [`reflect`]: one watcher per kind, with backoff and relist.
//! - [`scheduler`]: the session loop, binder, evictor and status writers.
//! - [`controllers`]: the controller manager's loop and its writes.
//! - [`events`]: events through `events.k8s.io`, aggregated.
//! - [`leader`]: leader election on a Lease.
//! - [`metrics`], [`exposition`], [`serve`]: Prometheus metrics under Volcano's names, in
//!   Volcano's text format; `/healthz`, `/readyz`.

pub mod controllers;
pub mod events;
pub mod exposition;
pub mod leader;
pub mod metrics;
pub mod mirror;
pub mod protobuf;
pub mod reflect;
pub mod scheduler;
pub mod serve;
pub mod ssh_keys;
pub mod webhook;

use tokio::sync::watch;

/// Fires (becomes `true`) when the process is asked to stop.
pub type Stop = watch::Receiver<bool>;

/// A stop signal and its trigger.
pub fn stop_channel() -> (watch::Sender<bool>, Stop) {
    watch::channel(false)
}

/// Why the runtime could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The scheduler configuration could not be read at start.
    #[error("{path}: {message}")]
    Conf {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The metrics endpoint could not listen.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Resolves on Ctrl-C or SIGTERM (how Kubernetes stops a container).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
