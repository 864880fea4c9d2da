//! The local control plane of volcano-rs: the Kubernetes API for the kinds the system uses,
//! served over HTTP from an in-memory store, with simulated nodes whose kubelets run pods.
