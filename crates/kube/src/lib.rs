//! The volcano-rs runtime against a Kubernetes API server, built on kube-rs: reflectors feed
//! the scheduler cache and the controllers, the session loop runs on the schedule period, and
//! decisions and changes go back to the API server as patches of the fields each writer owns.
