//! API errors with the reasons, codes and message formats of the Kubernetes API server.
//!
//! Clients match on these: kube-rs on `code` and `reason`, kubectl prints `message` verbatim
//! (`Error from server (NotFound): pods "x" not found`), so the wording follows Kubernetes.

pub mod field;

use serde_json::{Value, json};

pub use field::{FieldError, FieldErrorType};

use crate::kinds::KindInfo;

/// The `reason` of a failed request, as in Kubernetes' `metav1.StatusReason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// 404.
    NotFound,
    /// 409 on create.
    AlreadyExists,
    /// 409 on a stale write.
    Conflict,
    /// 400.
    BadRequest,
    /// 422.
    Invalid,
    /// 410, a watch or list from a compacted resourceVersion.
    Expired,
    /// 405.
    MethodNotAllowed,
    /// 415.
    UnsupportedMediaType,
    /// 403.
    Forbidden,
    /// 413.
    RequestEntityTooLarge,
    /// 500.
    InternalError,
}

impl Reason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotFound => "NotFound",
            Reason::AlreadyExists => "AlreadyExists",
            Reason::Conflict => "Conflict",
            Reason::BadRequest => "BadRequest",
            Reason::Invalid => "Invalid",
            Reason::Expired => "Expired",
            Reason::MethodNotAllowed => "MethodNotAllowed",
            Reason::UnsupportedMediaType => "UnsupportedMediaType",
            Reason::Forbidden => "Forbidden",
            Reason::RequestEntityTooLarge => "RequestEntityTooLarge",
            Reason::InternalError => "InternalError",
        }
    }

    /// The HTTP status code Kubernetes uses for it.
    pub fn code(self) -> u16 {
        match self {
            Reason::NotFound => 404,
            Reason::AlreadyExists | Reason::Conflict => 409,
            Reason::BadRequest => 400,
            Reason::Invalid => 422,
            Reason::Expired => 410,
            Reason::MethodNotAllowed => 405,
            Reason::UnsupportedMediaType => 415,
            Reason::Forbidden => 403,
            Reason::RequestEntityTooLarge => 413,
            Reason::InternalError => 500,
        }
    }
}

/// A failed API request, rendered as a `Status` object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// Why it failed.
    pub reason: Reason,
    /// The human-readable message, in Kubernetes' wording.
    pub message: String,
    /// `details`: the object's name and its group and resource, when the error is about one.
    pub details: Option<Box<Details>>,
}

/// The `details` of a Status: which object the error is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Details {
    /// Object name.
    pub name: String,
    /// API group.
    pub group: String,
    /// Resource plural, which Kubernetes puts in `details.kind` (the Kind for `Invalid`).
    pub kind: String,
    /// The refused fields of an `Invalid` error; kubectl prints one line per cause.
    pub causes: Vec<FieldError>,
}

impl ApiError {
    /// An error without details.
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        ApiError {
            reason,
            message: message.into(),
            details: None,
        }
    }

    pub(crate) fn about(reason: Reason, kind: &KindInfo, name: &str, message: String) -> Self {
        ApiError {
            reason,
            message,
            details: Some(Box::new(Details {
                name: name.to_string(),
                group: kind.group.to_string(),
                kind: kind.resource.to_string(),
                causes: Vec::new(),
            })),
        }
    }

    /// `pods "x" not found`.
    pub fn not_found(kind: &KindInfo, name: &str) -> Self {
        let message = format!("{} \"{name}\" not found", kind.qualified());
        Self::about(Reason::NotFound, kind, name, message)
    }

    /// `jobs.batch.volcano.sh "x" already exists`.
    pub fn already_exists(kind: &KindInfo, name: &str) -> Self {
        let message = format!("{} \"{name}\" already exists", kind.qualified());
        Self::about(Reason::AlreadyExists, kind, name, message)
    }

    /// A stale resourceVersion or failed precondition: `Operation cannot be fulfilled on ...`.
    pub fn conflict(kind: &KindInfo, name: &str, why: &str) -> Self {
        let message = format!(
            "Operation cannot be fulfilled on {} \"{name}\": {why}",
            kind.qualified()
        );
        Self::about(Reason::Conflict, kind, name, message)
    }

    /// The conflict of a write based on an old resourceVersion.
    pub fn stale(kind: &KindInfo, name: &str) -> Self {
        Self::conflict(
            kind,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// `Pod "x" is invalid: why`, for a refusal not about one field (no causes).
    pub fn invalid(kind: &KindInfo, name: &str, why: &str) -> Self {
        Self::invalid_with(kind, name, why.to_string(), Vec::new())
    }

    /// The 422 of refused fields, as Kubernetes' `NewInvalid`: `Job.batch.volcano.sh "x" is
    /// invalid: spec.y: Required value: ...`, with one cause per field error.
    pub fn invalid_fields(kind: &KindInfo, name: &str, errors: Vec<FieldError>) -> Self {
        let why = field::aggregate(&errors);
        Self::invalid_with(kind, name, why, errors)
    }

    fn invalid_with(kind: &KindInfo, name: &str, why: String, causes: Vec<FieldError>) -> Self {
        let qualified = if kind.group.is_empty() {
            kind.kind.to_string()
        } else {
            format!("{}.{}", kind.kind, kind.group)
        };
        let message = if why.is_empty() {
            format!("{qualified} \"{name}\" is invalid")
        } else {
            format!("{qualified} \"{name}\" is invalid: {why}")
        };
        ApiError {
            reason: Reason::Invalid,
            message,
            details: Some(Box::new(Details {
                name: name.to_string(),
                group: kind.group.to_string(),
                kind: kind.kind.to_string(),
                causes,
            })),
        }
    }

    /// The field errors of an `Invalid` error.
    pub fn causes(&self) -> &[FieldError] {
        self.details.as_ref().map_or(&[], |d| d.causes.as_slice())
    }

    /// 400 with a message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(Reason::BadRequest, message)
    }

    /// The 404 of a path that names no served resource.
    pub fn no_route() -> Self {
        Self::new(
            Reason::NotFound,
            "the server could not find the requested resource",
        )
    }

    /// 410 for a watch or list from before the retained history.
    pub fn expired(requested: u64, oldest: u64) -> Self {
        Self::new(
            Reason::Expired,
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        self.reason.code()
    }

    /// Whether this is a 404.
    pub fn is_not_found(&self) -> bool {
        self.reason == Reason::NotFound
    }

    /// Whether this is a 409 of either kind.
    pub fn is_conflict(&self) -> bool {
        matches!(self.reason, Reason::Conflict | Reason::AlreadyExists)
    }

    /// The `Status` object Kubernetes returns for this error.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason.as_str(),
            "code": self.code(),
        });
        if let Some(d) = &self.details {
            // Empty members are left out, as Kubernetes' `omitempty` does.
            let mut details = json!({});
            for (key, value) in [("name", &d.name), ("group", &d.group), ("kind", &d.kind)] {
                if !value.is_empty() {
                    details[key] = json!(value);
                }
            }
            if !d.causes.is_empty() {
                let causes: Vec<Value> = d.causes.iter().map(FieldError::cause).collect();
                details["causes"] = json!(causes);
            }
            status["details"] = details;
        }
        status
    }
}

/// A `Status` of success, as returned by eviction and binding.
pub fn success_status(code: u16) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;

    #[test]
    fn messages_follow_kubernetes() {
        let pods = kinds::pods();
        assert_eq!(
            ApiError::not_found(pods, "x").message,
            "pods \"x\" not found"
        );
        let jobs = kinds::find("jobs").unwrap();
        let e = ApiError::already_exists(jobs, "x");
        assert_eq!(e.message, "jobs.batch.volcano.sh \"x\" already exists");
        let s = e.to_status();
        assert_eq!(s["code"], 409);
        assert_eq!(s["details"]["group"], "batch.volcano.sh");
        assert_eq!(s["details"]["kind"], "jobs");
        assert!(
            ApiError::stale(pods, "x")
                .message
                .contains("the object has been modified")
        );
    }

    #[test]
    fn invalid_names_the_qualified_kind_and_lists_causes() {
        let jobs = kinds::find("jobs").unwrap();
        let e = ApiError::invalid_fields(
            jobs,
            "j",
            vec![
                FieldError::required("spec.a", "needed"),
                FieldError::invalid("spec.b", json!(3), "too big"),
            ],
        );
        assert_eq!(
            e.message,
            "Job.batch.volcano.sh \"j\" is invalid: [spec.a: Required value: needed, spec.b: Invalid value: 3: too big]"
        );
        let s = e.to_status();
        assert_eq!(s["code"], 422);
        assert_eq!(s["reason"], "Invalid");
        assert_eq!(s["details"]["kind"], "Job");
        assert_eq!(s["details"]["group"], "batch.volcano.sh");
        assert_eq!(
            s["details"]["causes"][0],
            json!({"reason": "FieldValueRequired", "message": "Required value: needed", "field": "spec.a"})
        );
        assert_eq!(
            s["details"]["causes"][1]["message"],
            "Invalid value: 3: too big"
        );
        let pod = ApiError::invalid_fields(
            kinds::pods(),
            "p",
            vec![FieldError::required("spec.c", "x")],
        );
        assert_eq!(
            pod.message,
            "Pod \"p\" is invalid: spec.c: Required value: x"
        );
    }
}
