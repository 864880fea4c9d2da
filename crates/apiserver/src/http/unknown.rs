//! Unknown fields in written bodies, answered as the Kubernetes API server answers them under
//! each `fieldValidation`: dropped, warned about (`Warning: 299 - "unknown field ..."`), or
//! refused (400 on create and update, 422 about `patch` on a patch).

use axum::http::HeaderValue;
use axum::response::Response;
use serde_json::Value;

use crate::error::{ApiError, Details, FieldError, Reason};
use crate::kinds::KindInfo;
use crate::store::fields::{self, FieldValidation};

/// Drops the fields the kind's schema does not name from a create or update body and returns
/// their paths; under `Strict` refuses the body instead, with the 400 of a strict decoding
/// error.
pub fn prune_body(
    kind: &KindInfo,
    validation: FieldValidation,
    object: &mut Value,
) -> Result<Vec<String>, ApiError> {
    let unknown = fields::prune_unknown(kind, object);
    if validation == FieldValidation::Strict && !unknown.is_empty() {
        return Err(ApiError::bad_request(format!(
            "{k} in version \"{v}\" cannot be handled as a {k}: {}",
            fields::strict_error(&unknown),
            k = kind.kind,
            v = kind.version,
        )));
    }
    Ok(unknown)
}

/// Adds a `Warning` header per unknown field, when asked to warn.
pub fn warn(response: &mut Response, validation: FieldValidation, unknown: &[String]) {
    if validation != FieldValidation::Warn {
        return;
    }
    for field in unknown {
        let text = format!("299 - \"unknown field \\\"{field}\\\"\"");
        if let Ok(value) = HeaderValue::from_str(&text) {
            response.headers_mut().append("Warning", value);
        }
    }
}

/// A patch that leaves unknown fields under `Strict`: Kubernetes answers 422 about the field
/// `patch`, showing the patched object, with no kind or name.
pub fn strict_patch_error(patched: &Value, unknown: &[String]) -> ApiError {
    let error = FieldError::invalid(
        "patch",
        Value::String(patched.to_string()),
        fields::strict_error(unknown),
    );
    let message = format!(" \"\" is invalid: {error}");
    ApiError {
        reason: Reason::Invalid,
        message,
        details: Some(Box::new(Details {
            name: String::new(),
            group: String::new(),
            kind: String::new(),
            causes: vec![error],
        })),
    }
}
