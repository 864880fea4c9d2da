//! Lifecycle policies: which action a request leads to, and after what delay.

use std::time::Duration;

use volcano_api::batch::{Job, LifecyclePolicy};
use volcano_api::bus::{BusAction, BusEvent};

use super::request::Request;
use crate::time::parse_duration;

/// The action a request leads to and how long to wait before taking it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The action.
    pub action: BusAction,
    /// Delay from the policy's `timeout`, if any.
    pub delay: Option<Duration>,
}

impl Decision {
    fn now(action: BusAction) -> Self {
        Decision {
            action,
            delay: None,
        }
    }
}

/// Decides what to do about `req` for `job`: an explicit action wins; internal events, events
/// of another job of the same name and events of an older job generation only sync; otherwise
/// the task's policies, then the job's, and the first policy that matches the event (or `*`)
/// or the exit code gives the action. A pending pod matches only a policy with a timeout,
/// since "pending" is only a problem when it lasts.
pub fn decide(job: &Job, req: &Request) -> Decision {
    let version = job.status.as_ref().map_or(0, |s| s.version);
    if let Some(action) = req.action {
        // A delayed policy action about an older generation of the job is moot: the job was
        // killed and restarted since.
        let delayed = req.event != BusEvent::CommandIssued;
        if delayed && req.job_version < version {
            return Decision::now(BusAction::SyncJob);
        }
        return Decision::now(action);
    }
    if req.is_internal() {
        return Decision::now(BusAction::SyncJob);
    }
    let uid = job.metadata.uid.as_deref().unwrap_or_default();
    if !req.job_uid.is_empty() && req.job_uid != uid {
        return Decision::now(BusAction::SyncJob);
    }
    if req.job_version < version {
        return Decision::now(BusAction::SyncJob);
    }
    if !req.task.is_empty()
        && let Some(task) = job.spec.tasks.iter().find(|t| t.name == req.task)
        && let Some(d) = first_match(&task.policies, req)
    {
        return d;
    }
    first_match(&job.spec.policies, req).unwrap_or(Decision::now(BusAction::SyncJob))
}

fn first_match(policies: &[LifecyclePolicy], req: &Request) -> Option<Decision> {
    policies.iter().find_map(|p| matches(p, req))
}

fn matches(policy: &LifecyclePolicy, req: &Request) -> Option<Decision> {
    let action = BusAction::parse(&policy.action)?;
    let delay = policy.timeout.as_deref().and_then(parse_duration);
    let by_event = policy_events(policy).any(|e| e == req.event || e == BusEvent::Any)
        && (req.event != BusEvent::PodPending || policy.timeout.is_some());
    let by_exit_code = policy.exit_code.is_some_and(|c| c == req.exit_code);
    (by_event || by_exit_code).then_some(Decision { action, delay })
}

/// The events a policy names (`event` and `events`); unknown names never match.
pub fn policy_events(policy: &LifecyclePolicy) -> impl Iterator<Item = BusEvent> + '_ {
    std::iter::once(policy.event.as_str())
        .filter(|e| !e.is_empty())
        .chain(policy.events.iter().map(String::as_str))
        .filter_map(BusEvent::parse)
}

#[cfg(test)]
mod tests {
    use super::*;
    use volcano_api::batch::{JobSpec, JobStatus, TaskSpec};

    fn policy(event: &str, action: &str) -> LifecyclePolicy {
        LifecyclePolicy {
            event: event.into(),
            action: action.into(),
            ..Default::default()
        }
    }

    fn job(job_policies: Vec<LifecyclePolicy>, task_policies: Vec<LifecyclePolicy>) -> Job {
        let mut job = Job::new(
            "j",
            JobSpec {
                tasks: vec![TaskSpec {
                    name: "worker".into(),
                    replicas: 2,
                    policies: task_policies,
                    ..Default::default()
                }],
                policies: job_policies,
                ..Default::default()
            },
        );
        job.metadata.uid = Some("uid-1".into());
        job.status = Some(JobStatus {
            version: 2,
            ..Default::default()
        });
        job
    }

    fn pod_event(event: BusEvent) -> Request {
        Request {
            task: "worker".into(),
            job_uid: "uid-1".into(),
            job_version: 2,
            ..Request::event(event)
        }
    }

    #[test]
    fn task_policy_is_checked_before_job_policy() {
        let j = job(
            vec![policy("PodFailed", "AbortJob")],
            vec![policy("PodFailed", "RestartTask")],
        );
        assert_eq!(
            decide(&j, &pod_event(BusEvent::PodFailed)).action,
            BusAction::RestartTask
        );
    }

    #[test]
    fn wildcard_and_exit_code_match() {
        let j = job(vec![policy("*", "TerminateJob")], vec![]);
        assert_eq!(
            decide(&j, &pod_event(BusEvent::PodEvicted)).action,
            BusAction::TerminateJob
        );
        let by_code = LifecyclePolicy {
            exit_code: Some(137),
            action: "RestartJob".into(),
            ..Default::default()
        };
        let j = job(vec![by_code], vec![]);
        let mut req = pod_event(BusEvent::PodFailed);
        assert_eq!(decide(&j, &req).action, BusAction::SyncJob);
        req.exit_code = 137;
        assert_eq!(decide(&j, &req).action, BusAction::RestartJob);
    }

    #[test]
    fn pending_pods_need_a_timeout_to_match() {
        let j = job(vec![policy("PodPending", "RestartJob")], vec![]);
        assert_eq!(
            decide(&j, &pod_event(BusEvent::PodPending)).action,
            BusAction::SyncJob
        );
        let mut timed = policy("PodPending", "RestartJob");
        timed.timeout = Some("10m".into());
        let j = job(vec![timed], vec![]);
        let d = decide(&j, &pod_event(BusEvent::PodPending));
        assert_eq!(d.action, BusAction::RestartJob);
        assert_eq!(d.delay, Some(Duration::from_secs(600)));
    }

    #[test]
    fn stale_generations_and_other_jobs_only_sync() {
        let j = job(vec![policy("PodFailed", "RestartJob")], vec![]);
        let mut old = pod_event(BusEvent::PodFailed);
        old.job_version = 1;
        assert_eq!(decide(&j, &old).action, BusAction::SyncJob);
        let mut other = pod_event(BusEvent::PodFailed);
        other.job_uid = "uid-0".into();
        assert_eq!(decide(&j, &other).action, BusAction::SyncJob);
    }

    #[test]
    fn a_delayed_action_of_an_older_generation_only_syncs() {
        let j = job(vec![], vec![]);
        let mut late = pod_event(BusEvent::PodPending);
        late.action = Some(BusAction::RestartJob);
        assert_eq!(decide(&j, &late).action, BusAction::RestartJob);
        late.job_version = 1;
        assert_eq!(decide(&j, &late).action, BusAction::SyncJob);
    }

    #[test]
    fn explicit_action_and_internal_events() {
        let j = job(vec![policy("*", "RestartJob")], vec![]);
        let mut cmd = Request::event(BusEvent::CommandIssued);
        cmd.action = Some(BusAction::AbortJob);
        assert_eq!(decide(&j, &cmd).action, BusAction::AbortJob);
        assert_eq!(decide(&j, &Request::sync()).action, BusAction::SyncJob);
    }
}
