//! Refused writes on purpose: every n-th write of the scheduler's and controllers' kinds is
//! answered with a 409 Conflict (an update, a patch) or a 500 (a create, a bind, an eviction, a
//! delete), as a busy API server or etcd answers, to prove that the components retry and that
//! nothing is lost, repeated or bound twice.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::Method;

use super::target::Target;
use crate::error::{ApiError, Reason};

/// Which writes fail, and how many did.
#[derive(Debug, Default)]
pub struct WriteFaults {
    every: u64,
    writes: AtomicU64,
    refused: AtomicU64,
}

impl WriteFaults {
    /// Every `every`-th write refused; 0: none.
    pub fn new(every: u32) -> Self {
        WriteFaults {
            every: u64::from(every),
            ..Default::default()
        }
    }

    /// Writes refused so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The error to answer `method` on `target` with, when this write is one to refuse. Only
    /// what the scheduler and controllers write is refused: pods and their bindings and
    /// evictions, PodGroups, and the status of Jobs and Queues; a user's Jobs, Queues and
    /// Commands, and events, always go through.
    pub fn refuse(&self, method: &Method, target: &Target) -> Option<ApiError> {
        if self.every == 0 || *method == Method::GET {
            return None;
        }
        let ours = match target.kind.resource {
            "pods" | "podgroups" => true,
            "jobs" | "queues" => target.sub.as_deref() == Some("status"),
            _ => false,
        };
        if !ours {
            return None;
        }
        let n = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
        if !n.is_multiple_of(self.every) {
            return None;
        }
        self.refused.fetch_add(1, Ordering::Relaxed);
        let name = target.name.as_deref().unwrap_or_default();
        Some(if *method == Method::PUT || *method == Method::PATCH {
            ApiError::conflict(
                target.kind,
                name,
                "the object has been modified; please apply your changes to the latest version and try again (injected fault)",
            )
        } else {
            ApiError::new(
                Reason::InternalError,
                format!(
                    "etcdserver: request timed out (injected fault on {} {name})",
                    target.kind.resource
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;

    fn target(resource: &str, sub: Option<&str>) -> Target {
        Target {
            kind: kinds::find(resource).unwrap_or_else(|| panic!("no kind {resource}")),
            ns: Some("default".to_string()),
            name: Some("x".to_string()),
            sub: sub.map(str::to_string),
        }
    }

    #[test]
    fn every_nth_write_of_the_components_kinds_is_refused_and_nothing_else() {
        let f = WriteFaults::new(3);
        let bind = target("pods", Some("binding"));
        let refused: Vec<bool> = (0..6)
            .map(|_| f.refuse(&Method::POST, &bind).is_some())
            .collect();
        assert_eq!(refused, [false, false, true, false, false, true]);
        assert_eq!(f.refused(), 2);

        // Reads, a user's Jobs and Queues, and events always go through (and are not counted).
        for (m, t) in [
            (Method::GET, target("pods", None)),
            (Method::POST, target("jobs", None)),
            (Method::PUT, target("queues", None)),
            (Method::POST, target("events", None)),
        ] {
            for _ in 0..3 {
                assert!(f.refuse(&m, &t).is_none(), "{m} {}", t.kind.resource);
            }
        }
        // A status update is refused as a conflict, a create as a server error.
        let status = target("podgroups", Some("status"));
        assert!(f.refuse(&Method::PATCH, &status).is_none());
        assert!(f.refuse(&Method::PATCH, &status).is_none());
        assert_eq!(
            f.refuse(&Method::PATCH, &status).map(|e| e.reason),
            Some(Reason::Conflict)
        );
        let create = target("pods", None);
        f.refuse(&Method::POST, &create);
        f.refuse(&Method::POST, &create);
        assert_eq!(
            f.refuse(&Method::POST, &create).map(|e| e.reason),
            Some(Reason::InternalError)
        );
        assert!(WriteFaults::new(0).refuse(&Method::POST, &bind).is_none());
    }
}
