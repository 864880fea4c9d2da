//! Kubernetes-facing types of volcano-rs: the Volcano CRDs, the Kubernetes objects a scenario
//! holds, Kubernetes quantity parsing and multi-document YAML loading with precise errors, and
//! the lifecycle annotations of simulated pods ([`lifecycle`]).
//!
//! This crate holds no scheduling logic. It guarantees that every object it hands out has passed
//! the checks a user would expect `kubectl apply` and Volcano's webhooks to make, and that every
//! error names the file, document, object and field it is about.

pub mod batch;
pub mod bus;
pub mod crds;
pub mod cron_schedule;
pub mod cronjob;
pub mod custom_resource;
pub mod event;
pub mod field_error;
pub mod flow;
pub mod go_duration;
pub mod keys;
pub mod label_selector;
pub mod lifecycle;
pub mod object_ref;
pub mod pod_group_of_pod;
pub mod pod_meta;
pub mod quantity;
pub mod resources;
pub mod scenario;
pub mod scheduling;
mod schema;
pub mod spec_checks;
pub mod store;
pub mod topology;
pub mod workload;

pub use k8s_openapi;
pub use object_ref::{NamespacedName, ObjectKind, ObjectRef};
pub use scenario::{LoadError, Objects, Scenario, Source};
pub use store::{ObjectStore, WatchEvent};
