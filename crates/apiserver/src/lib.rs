//! The local control plane of volcano-rs: the Kubernetes API for the kinds the system uses,
//! served over HTTP from an in-memory store, with simulated nodes whose kubelets run pods.
//!
//! - [`kinds`]: the table of served kinds.
//! - [`store`]: the sans-IO object store (resourceVersions, patches, selectors, history).
//! - [`shared`]: the store behind a lock, with watches; what in-process components use.
//! - [`http`]: the Kubernetes REST API over it (discovery, CRUD, subresources, watch, tables).
//! - [`server`]: [`LocalApiServer`], the API served on a local port.
//! - [`kubelet`]: simulated nodes whose kubelets run pods against the store.
//! - [`kubeconfig()`]: a kubeconfig for kubectl and kube-rs.

pub mod error;
pub mod http;
pub mod kinds;
pub mod kubeconfig;
pub mod kubelet;
pub mod server;
pub mod shared;
pub mod store;
pub mod time;

pub use error::ApiError;
pub use kubeconfig::kubeconfig;
pub use server::{LocalApiServer, ServeError, ServerOptions};
pub use shared::{ObjectList, SharedOptions, SharedStore, StreamEvent, Watch};
pub use store::{ChangeType, PatchType, Selectors};
