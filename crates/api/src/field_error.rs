//! A field of an object and what is wrong with it: the answer of every object check.

/// A field of an object and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// The field's path (`spec.schedule`, `spec.flows[1].dependsOn.targets[0]`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl FieldError {
    /// The error `message` about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}
