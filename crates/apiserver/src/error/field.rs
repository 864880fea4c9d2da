//! Field errors: why one field of a written object is refused, rendered as Kubernetes'
//! `field.Error` (`spec.x: Invalid value: "y": why`) and as a `StatusCause` of a 422.

use serde_json::{Value, json};

/// The type of a field error, as Kubernetes' `field.ErrorType` (the cause's `reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorType {
    /// A value that must be given is missing.
    Required,
    /// A malformed value.
    Invalid,
    /// A value of the wrong type for its schema.
    TypeInvalid,
    /// A value outside an enumeration.
    NotSupported,
    /// A value not allowed here.
    Forbidden,
    /// A value already used.
    Duplicate,
}

impl FieldErrorType {
    /// The cause's `reason` on the wire.
    pub fn reason(self) -> &'static str {
        match self {
            FieldErrorType::Required => "FieldValueRequired",
            FieldErrorType::Invalid => "FieldValueInvalid",
            FieldErrorType::TypeInvalid => "FieldValueTypeInvalid",
            FieldErrorType::NotSupported => "FieldValueNotSupported",
            FieldErrorType::Forbidden => "FieldValueForbidden",
            FieldErrorType::Duplicate => "FieldValueDuplicate",
        }
    }

    /// The words Kubernetes prints for it.
    fn words(self) -> &'static str {
        match self {
            FieldErrorType::Required => "Required value",
            FieldErrorType::Invalid | FieldErrorType::TypeInvalid => "Invalid value",
            FieldErrorType::NotSupported => "Unsupported value",
            FieldErrorType::Forbidden => "Forbidden",
            FieldErrorType::Duplicate => "Duplicate value",
        }
    }

    /// Whether the message shows the bad value (Kubernetes omits it for these).
    fn shows_value(self) -> bool {
        !matches!(self, FieldErrorType::Required | FieldErrorType::Forbidden)
    }
}

/// One refused field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// What is wrong.
    pub kind: FieldErrorType,
    /// The path of the field (`spec.containers[0].resources.limits`).
    pub field: String,
    /// The refused value, shown for the types that show one.
    pub value: Value,
    /// Why, in Kubernetes' words; may be empty.
    pub detail: String,
}

impl FieldError {
    /// `field: Required value: detail`.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Required, field, Value::Null, detail)
    }

    /// `field: Invalid value: <value>: detail`.
    pub fn invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Invalid, field, value, detail)
    }

    /// `field: Forbidden: detail`.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Forbidden, field, Value::Null, detail)
    }

    /// A field error of any type.
    pub fn new(
        kind: FieldErrorType,
        field: impl Into<String>,
        value: Value,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            kind,
            field: field.into(),
            value,
            detail: detail.into(),
        }
    }

    /// The message without the field (`ErrorBody` in Kubernetes): the cause's `message`.
    pub fn body(&self) -> String {
        let mut s = self.kind.words().to_string();
        if self.kind.shows_value() {
            // Go prints strings quoted, numbers and booleans bare, anything else as JSON,
            // which is what serde_json's rendering of each gives.
            s.push_str(": ");
            s.push_str(&self.value.to_string());
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// The `StatusCause` of this error.
    pub fn cause(&self) -> Value {
        json!({"reason": self.kind.reason(), "message": self.body(), "field": self.field})
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// Several field errors as Kubernetes aggregates them in a message: one alone as itself, more
/// as `[a, b]`, repeats dropped.
pub fn aggregate(errors: &[FieldError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let m = e.to_string();
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    match seen.len() {
        1 => seen.remove(0),
        _ => format!("[{}]", seen.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_follow_kubernetes() {
        let e = FieldError::required(
            "spec.containers[0].resources.limits",
            "Limit must be set for non overcommitable resources",
        );
        assert_eq!(
            e.to_string(),
            "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"
        );
        let i = FieldError::invalid("spec.x", json!("1500m"), "must be an integer");
        assert_eq!(i.body(), "Invalid value: \"1500m\": must be an integer");
        assert_eq!(i.cause()["reason"], "FieldValueInvalid");
        assert_eq!(i.cause()["field"], "spec.x");
        assert_eq!(aggregate(std::slice::from_ref(&i)), i.to_string());
        assert_eq!(
            aggregate(&[i.clone(), e.clone(), i.clone()]),
            format!("[{i}, {e}]")
        );
    }
}
