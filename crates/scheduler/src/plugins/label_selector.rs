//! Kubernetes label selectors, shared with the API crate (HyperNode members read them too).

pub use volcano_api::label_selector::{selector_matches, set_operator_matches};
