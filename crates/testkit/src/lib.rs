//! The shared test kit.
//!
//! - [`build`]: fluent builders of the objects tests describe clusters with (Nodes, Pods,
//!   PodGroups, Queues, Jobs, PriorityClasses), as a user would apply them.
//! - [`conf`]: named `volcano-scheduler.conf` texts the tests run under.
//!
//! Both need only `volcano-api`. With the `cluster` feature (on by default), the kit also
//! brings up test clusters for the end-to-end tiers. The real tier runs the project against a real `kube-apiserver` and `etcd`, found the envtest
//! way: `KUBEBUILDER_ASSETS` names a folder holding both binaries (and, optionally,
//! `kube-controller-manager`). Where they are absent, tests of the tier skip and say so.
//!
//! - [`assets`]: finding the binaries.
//! - [`control_plane`]: etcd, the API server (RBAC and `OwnerReferencesPermissionEnforcement`
//!   on) and the controller manager, on loopback, each a child process of the test.
//! - [`install`]: `deploy/` applied as an administrator would, and clients that hold only the
//!   permissions of one of its ServiceAccounts.
//! - [`kubelet`]: nodes whose kubelets act through the API: bound pods start, run and end, and
//!   a pod deleted gracefully is confirmed gone, as a real kubelet does.
//! - [`ports`]: loopback ports for test servers, including ones a test restarts.
//! - [`module_layers`]: the circles among a crate's modules, read from its sources.

#[cfg(feature = "cluster")]
pub mod assets;
pub mod build;
pub mod conf;
#[cfg(feature = "cluster")]
pub mod control_plane;
#[cfg(feature = "cluster")]
pub mod install;
#[cfg(feature = "cluster")]
pub mod kubelet;
pub mod module_layers;
#[cfg(feature = "cluster")]
pub mod ports;
#[cfg(feature = "cluster")]
mod process;

#[cfg(feature = "cluster")]
pub use assets::Assets;
#[cfg(feature = "cluster")]
pub use control_plane::RealControlPlane;

/// Why a test cluster could not be brought up or driven.
#[cfg(feature = "cluster")]
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The API server refused a request, or the client could not be built.
    #[error("{what}: {source}")]
    Kube {
        /// What was being done.
        what: String,
        /// The failure.
        #[source]
        source: Box<kube::Error>,
    },
    /// A component did not become ready in time; its log's tail is in the message.
    #[error("{what} was not ready after {secs} s; last log lines:\n{log}")]
    NotReady {
        /// The component.
        what: String,
        /// How long it was given.
        secs: u64,
        /// The end of its log.
        log: String,
    },
    /// A manifest could not be read.
    #[error("{file}: {message}")]
    Manifest {
        /// The file.
        file: String,
        /// What is wrong with it.
        message: String,
    },
    /// A key could not be made.
    #[error("making a key: {0}")]
    Key(String),
    /// A value the harness made or read is not what it should be.
    #[error("{0}")]
    Invalid(String),
}

#[cfg(feature = "cluster")]
impl HarnessError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        HarnessError::Io {
            what: what.into(),
            source,
        }
    }

    pub(crate) fn kube(what: impl Into<String>, source: kube::Error) -> Self {
        HarnessError::Kube {
            what: what.into(),
            source: Box::new(source),
        }
    }
}
