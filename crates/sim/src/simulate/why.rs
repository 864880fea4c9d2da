//! Why a job waited and why it failed, from what the scheduler, the kubelets and the job
//! controller wrote: the why-pending message on its PodGroup after each session, the status
//! of its failed pods, and the Job's phases.

use std::time::Duration;

use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_controllers::time::Instant;
use volcano_scheduler::framework::signals::reason_part;

use crate::metrics::{FailureRecord, WaitedRecord};

/// Time under each why-pending message, added up interval by interval: a message that comes
/// back after another counts both of its stretches. Messages that differ only in their
/// figures (free GPUs, queue totals) are one reason, as the scheduler itself counts them
/// when it decides whether a condition is new; the reason shows the last message it wrote.
#[derive(Debug, Clone, Default)]
pub struct WaitAccount {
    /// The reason in force (figures aside) and since when.
    open: Option<(String, Instant)>,
    /// Each reason (figures aside), in the order first seen, with its last message and its
    /// time so far.
    totals: Vec<(String, String, Duration)>,
    /// Since when the job-level reason has been `NetworkTopology` (waiting for a domain).
    topology_open: Option<Instant>,
    /// Time under the job-level reason `NetworkTopology` so far.
    topology_total: Duration,
}

/// The job-level reason of a gang that waits for a network domain with room for it.
pub const NETWORK_TOPOLOGY_REASON: &str = "NetworkTopology";

impl WaitAccount {
    /// The PodGroup carries `message` from `now` (`None`: nothing, it is not waiting).
    pub fn observe(&mut self, message: Option<&str>, now: Instant) {
        let key = message.map(reason_part);
        if self.open.as_ref().map(|(k, _)| k) != key.as_ref() {
            self.close(now);
            self.open = key.clone().map(|k| (k, now));
        }
        if let (Some(key), Some(message)) = (key, message) {
            match self.totals.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, last, _)) => message.clone_into(last),
                None => self.totals.push((key, message.to_string(), Duration::ZERO)),
            }
        }
    }

    /// The PodGroup's job-level reason from `now` (`None`: it is not waiting); only
    /// `NetworkTopology` is timed here.
    pub fn observe_reason(&mut self, reason: Option<&str>, now: Instant) {
        let for_domain = reason == Some(NETWORK_TOPOLOGY_REASON);
        match (self.topology_open, for_domain) {
            (None, true) => self.topology_open = Some(now),
            (Some(since), false) => {
                self.topology_total += now.0.saturating_sub(since.0);
                self.topology_open = None;
            }
            _ => {}
        }
    }

    /// Time spent under the job-level reason `NetworkTopology`, counted up to `end`.
    pub fn network_topology_wait(&self, end: Instant) -> Duration {
        let open = self
            .topology_open
            .map_or(Duration::ZERO, |since| end.0.saturating_sub(since.0));
        self.topology_total + open
    }

    /// Whatever reason was in force stops counting at `now`.
    pub fn close(&mut self, now: Instant) {
        let Some((key, since)) = self.open.take() else {
            return;
        };
        if let Some((_, _, total)) = self.totals.iter_mut().find(|(k, _, _)| *k == key) {
            *total += now.0.saturating_sub(since.0);
        }
    }

    /// The account closed at `end`; a reason in force for no time at all is left out.
    pub fn records(mut self, end: Instant) -> Vec<WaitedRecord> {
        self.close(end);
        self.totals
            .into_iter()
            .filter(|(_, _, d)| !d.is_zero())
            .map(|(_, reason, d)| WaitedRecord {
                reason,
                seconds: d.as_secs_f64(),
            })
            .collect()
    }
}

/// A pod of the job that failed or was evicted, as its status (or the session) said.
#[derive(Debug, Clone, PartialEq)]
pub struct PodFailure {
    /// `namespace/name`.
    pub pod: String,
    /// `PodFailed`, `NodeLost` or `PodEvicted`.
    pub reason: String,
    /// What happened, in words.
    pub message: String,
    /// The first container's exit code, when it ended with one.
    pub exit_code: Option<i32>,
}

/// The failure a pod that has just become `Failed` reports: lost with its node (the pod's
/// status reason `NodeLost`), or ended by its container (its exit code).
pub fn pod_failure(pod: &Pod) -> PodFailure {
    let name = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    );
    let status = pod.status.as_ref();
    let terminated = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref());
    let exit_code = terminated.map(|t| t.exit_code);
    if let Some(reason) = status.and_then(|s| s.reason.as_deref()) {
        let message = status.and_then(|s| s.message.clone());
        return PodFailure {
            message: message.unwrap_or_else(|| format!("pod {name} failed: {reason}")),
            pod: name,
            reason: reason.to_string(),
            exit_code,
        };
    }
    let detail = terminated
        .and_then(|t| t.reason.as_deref())
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let message = match exit_code {
        Some(code) => format!("pod {name} failed with exit code {code}{detail}"),
        None => format!("pod {name} failed"),
    };
    PodFailure {
        pod: name,
        reason: "PodFailed".to_string(),
        message,
        exit_code,
    }
}

/// A pod a session evicted, with the session's reason (the preemptor or reclaiming queue).
pub fn pod_evicted(pod: &str, why: &str) -> PodFailure {
    let message = if why.is_empty() {
        format!("pod {pod} was evicted")
    } else {
        format!("pod {pod} was evicted: {why}")
    };
    PodFailure {
        pod: pod.to_string(),
        reason: "PodEvicted".to_string(),
        message,
        exit_code: None,
    }
}

/// What the Job controller recorded about a Volcano Job, for its failure account.
#[derive(Debug, Clone, Default)]
pub struct JobTrail {
    /// Phases in order, each once per stretch.
    pub phases: Vec<String>,
    /// `status.retryCount`.
    pub retries: i32,
    /// `spec.maxRetry`, defaulted as Volcano's webhook does.
    pub max_retry: i32,
    /// `status.state.reason` and `message`, when the controller set them.
    pub state_reason: String,
    /// See `state_reason`.
    pub state_message: String,
}

impl JobTrail {
    /// Notes a phase the controller wrote (a repeat of the last one adds nothing).
    pub fn phase(&mut self, phase: &str) {
        if self.phases.last().map(String::as_str) != Some(phase) {
            self.phases.push(phase.to_string());
        }
    }
}

/// Why a job that ended in `phase` failed: the last pod failure before its end, else the
/// reason the Job's status gives, else its phase (a Command aborted it, say).
pub fn failure(phase: &str, pod: Option<&PodFailure>, trail: Option<&JobTrail>) -> FailureRecord {
    let phases = trail.map(|t| t.phases.clone()).unwrap_or_default();
    let (retries, max_retry) = trail.map_or((0, 0), |t| (t.retries, t.max_retry));
    let state = trail.filter(|t| !t.state_reason.is_empty());
    let (reason, mut message, exit_code) = match (pod, state) {
        (Some(p), _) => (p.reason.clone(), p.message.clone(), p.exit_code),
        (None, Some(t)) => (t.state_reason.clone(), t.state_message.clone(), None),
        (None, None) => (phase.to_string(), format!("the job ended {phase}"), None),
    };
    if phases.len() > 1 {
        message.push_str(&format!("; Job phases {}", phases.join(" → ")));
    }
    if trail.is_some() {
        message.push_str(&format!(" (retries {retries} of maxRetry {max_retry})"));
    }
    FailureRecord {
        reason,
        message,
        exit_code,
        pod: pod.map(|p| p.pod.clone()),
        phases,
        retries,
        max_retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Instant {
        Instant(Duration::from_secs(s))
    }

    #[test]
    fn only_the_network_topology_reason_counts_as_waiting_for_a_domain() {
        let mut w = WaitAccount::default();
        w.observe_reason(Some("Unschedulable"), at(0));
        w.observe_reason(Some(NETWORK_TOPOLOGY_REASON), at(10));
        w.observe_reason(Some(NETWORK_TOPOLOGY_REASON), at(20)); // still the same stretch
        w.observe_reason(Some("Unschedulable"), at(40));
        w.observe_reason(Some(NETWORK_TOPOLOGY_REASON), at(50));
        // Still waiting for a domain when the run ends at 65.
        assert_eq!(w.network_topology_wait(at(65)), Duration::from_secs(45));
        w.observe_reason(None, at(60));
        assert_eq!(w.network_topology_wait(at(100)), Duration::from_secs(40));
    }

    #[test]
    fn a_reason_that_comes_back_adds_both_stretches() {
        let mut w = WaitAccount::default();
        w.observe(Some("A"), at(10));
        w.observe(Some("A"), at(15)); // the same message again: still one stretch
        w.observe(Some("B"), at(30));
        w.observe(Some("A"), at(70));
        w.observe(None, at(75)); // running
        w.observe(Some("B"), at(100)); // waits again after a restart
        let got = w.records(at(104));
        let got: Vec<(&str, f64)> = got.iter().map(|r| (r.reason.as_str(), r.seconds)).collect();
        assert_eq!(got, [("A", 25.0), ("B", 44.0)]);
    }

    #[test]
    fn messages_that_differ_in_figures_only_are_one_reason_shown_as_last_written() {
        let mut w = WaitAccount::default();
        w.observe(
            Some("0/4 nodes are available: 4 Insufficient gpu (free 3)"),
            at(0),
        );
        w.observe(
            Some("0/4 nodes are available: 4 Insufficient gpu (free 2)"),
            at(10),
        );
        w.observe(Some("queue q is full"), at(25));
        let got = w.records(at(30));
        let got: Vec<(&str, f64)> = got.iter().map(|r| (r.reason.as_str(), r.seconds)).collect();
        assert_eq!(
            got,
            [
                ("0/4 nodes are available: 4 Insufficient gpu (free 2)", 25.0),
                ("queue q is full", 5.0)
            ]
        );
    }

    #[test]
    fn a_reason_seen_for_no_time_is_left_out() {
        let mut w = WaitAccount::default();
        w.observe(Some("A"), at(5));
        w.observe(Some("B"), at(5));
        let got = w.records(at(9));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].reason, "B");
        assert_eq!(got[0].seconds, 4.0);
    }

    #[test]
    fn the_last_pod_failure_names_the_reason_and_the_phases_show_the_action() {
        let trail = JobTrail {
            phases: vec![
                "Pending".into(),
                "Running".into(),
                "Aborting".into(),
                "Aborted".into(),
            ],
            retries: 0,
            max_retry: 3,
            ..Default::default()
        };
        let pod = PodFailure {
            pod: "ns/p-0".into(),
            reason: "PodFailed".into(),
            message: "pod ns/p-0 failed with exit code 1 (Error)".into(),
            exit_code: Some(1),
        };
        let f = failure("Aborted", Some(&pod), Some(&trail));
        assert_eq!(f.reason, "PodFailed");
        assert_eq!(f.exit_code, Some(1));
        assert!(
            f.message.contains("Running → Aborting → Aborted"),
            "{}",
            f.message
        );
        let none = failure("Aborted", None, Some(&trail));
        assert_eq!(none.reason, "Aborted");
    }
}
