//! [`LocalApiServer`]: the API served on a local port in the background.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::http::faults::WriteFaults;
use crate::http::{self, AppState};
use crate::shared::{SharedOptions, SharedStore};
use crate::store::StoreOptions;

/// How the server is set up.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Where to listen; port 0 picks a free port.
    pub listen: SocketAddr,
    /// How many changes watches can resume from before they get 410 Gone.
    pub watch_history: usize,
    /// How many changes a watcher may fall behind before its stream is ended.
    pub watch_buffer: usize,
    /// Idle time after which a watch that allows bookmarks gets one.
    pub bookmark_interval: Duration,
    /// Refuse every n-th write of the scheduler and controllers (0: none), to test that
    /// they retry and lose nothing.
    pub refuse_every_nth_write: u32,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            watch_history: StoreOptions::default().watch_history,
            watch_buffer: SharedOptions::default().watch_buffer,
            bookmark_interval: Duration::from_secs(1),
            refuse_every_nth_write: 0,
        }
    }
}

impl ServerOptions {
    /// The options of a store for this server.
    pub fn shared_options(&self) -> SharedOptions {
        SharedOptions {
            store: StoreOptions {
                watch_history: self.watch_history,
                ..StoreOptions::default()
            },
            watch_buffer: self.watch_buffer,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
}

/// A running API server. Dropping it stops the server too, without waiting.
#[derive(Debug)]
pub struct LocalApiServer {
    addr: SocketAddr,
    store: SharedStore,
    shutdown: tokio::sync::watch::Sender<bool>,
    task: JoinHandle<()>,
    faults: Arc<WriteFaults>,
}

impl LocalApiServer {
    /// Binds (port 0 = any free port) and serves a new store in the background on the current
    /// tokio runtime.
    pub async fn start(opts: ServerOptions) -> Result<LocalApiServer, ServeError> {
        let store = SharedStore::new(opts.shared_options());
        Self::start_with_store(opts, store).await
    }

    /// Serves an existing store (for example one with nodes already registered).
    pub async fn start_with_store(
        opts: ServerOptions,
        store: SharedStore,
    ) -> Result<LocalApiServer, ServeError> {
        let bind_err = |source| ServeError::Bind {
            addr: opts.listen,
            source,
        };
        let listener = TcpListener::bind(opts.listen).await.map_err(bind_err)?;
        let addr = listener.local_addr().map_err(bind_err)?;
        let (shutdown, mut signal) = tokio::sync::watch::channel(false);
        let faults = Arc::new(WriteFaults::new(opts.refuse_every_nth_write));
        let app = http::router(AppState {
            store: store.clone(),
            addr,
            bookmark_interval: opts.bookmark_interval,
            shutdown: signal.clone(),
            faults: faults.clone(),
        });
        let task = tokio::spawn(async move {
            let stopped = async move {
                // Either a shutdown or the handle being dropped stops the server.
                let _ = signal.changed().await;
            };
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(stopped)
                .await
            {
                tracing::error!(error = %e, "API server stopped with an error");
            }
        });
        tracing::info!(%addr, "local API server listening");
        Ok(LocalApiServer {
            addr,
            store,
            shutdown,
            task,
            faults,
        })
    }

    /// Writes refused on purpose so far ([`ServerOptions::refuse_every_nth_write`]).
    pub fn refused_writes(&self) -> u64 {
        self.faults.refused()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The store, for in-process components (kubelets) and tests.
    pub fn store(&self) -> SharedStore {
        self.store.clone()
    }

    /// Stops accepting connections, ends open watches and waits (up to 5 s) for requests in
    /// flight to finish.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let mut task = self.task;
        if tokio::time::timeout(Duration::from_secs(5), &mut task)
            .await
            .is_err()
        {
            task.abort();
        }
    }
}
