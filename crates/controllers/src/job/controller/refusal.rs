//! Writes the API server refuses for a lasting reason (a 403, a 422): told on the Job at once,
//! tried again on a growing wait, never a reason to terminate the job.

use std::time::Duration;

use volcano_api::event::Event;
use volcano_api::{ObjectKind, ObjectRef};

use super::JobController;
use crate::job::request::JobKey;
use crate::time::Instant;

/// The longest wait before a turn the API server refused for a lasting reason is tried again
/// (unless the job changes first); the waits grow from [`REFUSED_FIRST_RETRY`]. Some refusals
/// that look lasting pass: a freshly restarted API server answers 403 until its RBAC caches
/// and its REST mapping of a new CRD's kind are filled, and an RBAC grant or a quota may be
/// fixed meanwhile. So the job is tried again soon at first, then every half minute.
pub const REFUSED_RETRY: Duration = Duration::from_secs(30);

/// The first wait after a lasting refusal; each further refusal in a row doubles it.
pub const REFUSED_FIRST_RETRY: Duration = Duration::from_millis(200);

/// A write the API server refused for a lasting reason, as the user is told of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The event reason: `FailedCreate`, `FailedUpdate` or `FailedDelete`.
    pub reason: &'static str,
    /// Which write (`create Pod default/mpi-worker-0`).
    pub what: String,
    /// The API server's message.
    pub message: String,
}

impl Refusal {
    /// Whether `other` says the same, but for the figures in its message.
    pub fn same_as(&self, other: &Refusal) -> bool {
        use volcano_api::event::figures_aside;
        self.reason == other.reason
            && self.what == other.what
            && figures_aside(&self.message) == figures_aside(&other.message)
    }
}

impl JobController {
    /// Reports a turn whose write the API server refused for a lasting reason (`refusal`: a
    /// 403, a 422, ...), which retrying at once cannot cure. The user is told with a Warning
    /// event on the Job (returned the first time this refusal is met in a row), and the turn
    /// is tried again after a wait that grows from [`REFUSED_FIRST_RETRY`] to
    /// [`REFUSED_RETRY`], or sooner when the job or one of its pods changes (news may cure
    /// it), without spending the retry budget: the job is never terminated for a refusal that
    /// is not its pods' doing.
    pub fn refused(&mut self, key: &JobKey, refusal: &Refusal, now: Instant) -> Option<Event> {
        if let Some(turn) = self.in_flight.remove(key) {
            let pending = self.requests.entry(key.clone()).or_default();
            if !pending.contains(&turn.request) {
                pending.push_front(turn.request);
            }
        }
        let (count, told) = self
            .refusals
            .get(key)
            .map_or((0, None), |(n, r)| (*n, Some(r)));
        // A refusal whose figures alone moved (a quota's usage) is the same refusal.
        let new = told.is_none_or(|t| !t.same_as(refusal));
        let wait = 1u32
            .checked_shl(count)
            .and_then(|f| REFUSED_FIRST_RETRY.checked_mul(f))
            .map_or(REFUSED_RETRY, |d| d.min(REFUSED_RETRY));
        self.refusals
            .insert(key.clone(), (count.saturating_add(1), refusal.clone()));
        self.queue.forget(key);
        self.queue.done(key);
        self.queue.add_after(key.clone(), now.after(wait));
        new.then(|| Event {
            object: ObjectRef::new(ObjectKind::Job, key.clone()),
            type_: volcano_api::event::EventType::Warning,
            reason: refusal.reason.to_string(),
            message: format!(
                "{}: {}; tried again every {} s at most, or when the job changes",
                refusal.what,
                refusal.message,
                REFUSED_RETRY.as_secs()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(used: &str) -> Refusal {
        Refusal {
            reason: "FailedCreate",
            what: "create Pod default/p-0".into(),
            message: format!("exceeded quota: compute, used: cpu={used}, limited: cpu=4"),
        }
    }

    #[test]
    fn a_refusal_whose_figures_alone_moved_is_the_same_refusal() {
        assert!(quota("3").same_as(&quota("2")));
        let mut other = quota("3");
        other.message = "Limit must be set for non overcommitable resources".into();
        assert!(!quota("3").same_as(&other));
        let mut elsewhere = quota("3");
        elsewhere.what = "create Pod default/p-1".into();
        assert!(!quota("3").same_as(&elsewhere));
    }
}
