//! The Job state machine: for a job's phase and an action, the work to do (sync, or kill which
//! pods) and the rule that moves the phase once the pods are counted.

use volcano_api::batch::{JobSpec, JobStatus, job_phase};
use volcano_api::bus::BusAction;

/// Which pods a whole-job kill keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retain {
    /// Keep Succeeded and Failed pods (their results stay visible).
    Finished,
    /// Keep nothing.
    Nothing,
}

/// What to do to the job's pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Create missing pods (once the PodGroup is admitted), delete surplus ones, count.
    Sync,
    /// Kill the job's pods (but `Retain`), bump the version and delete the PodGroup, so the
    /// job goes through admission again.
    KillJob(Retain),
    /// Kill the pods the request targets (its task, its pod); the PodGroup stays.
    KillTarget,
}

/// How the phase moves once the pods are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseRule {
    /// Pending → Running once `minAvailable` pods run or finished.
    Start,
    /// Running → Completed / Failed / back to Pending, by the counts (see [`running`]).
    Progress,
    /// Restarting → Failed at `maxRetry`, else → Pending once enough pods are gone.
    Restart,
    /// Enter a phase; with `retry`, count one more retry.
    Enter {
        /// The phase entered.
        phase: &'static str,
        /// Whether this is a retry.
        retry: bool,
    },
    /// Enter a phase once no pod is pending, running or terminating.
    WhenDrained(&'static str),
    /// Leave the phase as it is.
    Keep,
}

/// The work and the phase rule for one (phase, action) pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// What to do to the pods.
    pub work: Work,
    /// How the phase moves afterwards.
    pub rule: PhaseRule,
}

const fn plan(work: Work, rule: PhaseRule) -> Plan {
    Plan { work, rule }
}

const fn enter(phase: &'static str) -> PhaseRule {
    PhaseRule::Enter {
        phase,
        retry: false,
    }
}

const RESTART: PhaseRule = PhaseRule::Enter {
    phase: job_phase::RESTARTING,
    retry: true,
};

fn is_targeted_restart(action: BusAction) -> bool {
    matches!(
        action,
        BusAction::RestartTask | BusAction::RestartPod | BusAction::RestartPartition
    )
}

/// The state machine of Volcano's job controller (`pkg/controllers/job/state`). An unknown or
/// empty phase is Pending.
pub fn plan_for(phase: &str, action: BusAction) -> Plan {
    use BusAction as A;
    use Retain::{Finished, Nothing};
    match phase {
        job_phase::PENDING | job_phase::RUNNING | "" => match action {
            A::RestartJob => plan(Work::KillJob(Nothing), RESTART),
            a if is_targeted_restart(a) => plan(Work::KillTarget, RESTART),
            A::AbortJob => plan(Work::KillJob(Finished), enter(job_phase::ABORTING)),
            A::CompleteJob => plan(Work::KillJob(Finished), enter(job_phase::COMPLETING)),
            A::TerminateJob => plan(Work::KillJob(Finished), enter(job_phase::TERMINATING)),
            _ if phase == job_phase::RUNNING => plan(Work::Sync, PhaseRule::Progress),
            _ => plan(Work::Sync, PhaseRule::Start),
        },
        job_phase::RESTARTING => match action {
            A::SyncJob => plan(Work::Sync, PhaseRule::Restart),
            a if is_targeted_restart(a) => plan(Work::KillTarget, PhaseRule::Restart),
            _ => plan(Work::KillJob(Nothing), PhaseRule::Restart),
        },
        job_phase::ABORTING => match action {
            A::ResumeJob => plan(Work::KillJob(Finished), RESTART),
            _ => plan(
                Work::KillJob(Finished),
                PhaseRule::WhenDrained(job_phase::ABORTED),
            ),
        },
        job_phase::ABORTED => match action {
            A::ResumeJob => plan(Work::KillJob(Finished), RESTART),
            _ => plan(Work::KillJob(Finished), PhaseRule::Keep),
        },
        job_phase::COMPLETING => plan(
            Work::KillJob(Finished),
            PhaseRule::WhenDrained(job_phase::COMPLETED),
        ),
        job_phase::TERMINATING => plan(
            Work::KillJob(Finished),
            PhaseRule::WhenDrained(job_phase::TERMINATED),
        ),
        job_phase::COMPLETED | job_phase::FAILED | job_phase::TERMINATED => {
            plan(Work::KillJob(Finished), PhaseRule::Keep)
        }
        _ => plan_for(job_phase::PENDING, action),
    }
}

fn total_replicas(spec: &JobSpec) -> i32 {
    spec.tasks.iter().map(|t| t.replicas.max(0)).sum()
}

fn total_task_min_available(spec: &JobSpec) -> i32 {
    spec.tasks
        .iter()
        .map(|t| t.min_available.unwrap_or(t.replicas))
        .sum()
}

/// Applies `rule` to a freshly counted status; returns whether the phase was set (even to the
/// same value, as Volcano's update functions report).
pub fn apply_rule(rule: PhaseRule, spec: &JobSpec, status: &mut JobStatus) -> bool {
    let min_available = spec.min_available.unwrap_or(0);
    let phase = match rule {
        PhaseRule::Keep => return false,
        PhaseRule::Enter { phase, retry } => {
            if retry {
                status.retry_count += 1;
            }
            phase
        }
        PhaseRule::WhenDrained(phase) => {
            if status.terminating != 0 || status.pending != 0 || status.running != 0 {
                return false;
            }
            phase
        }
        PhaseRule::Start => {
            if min_available > status.running + status.succeeded + status.failed {
                return false;
            }
            job_phase::RUNNING
        }
        PhaseRule::Restart => {
            if status.retry_count >= spec.max_retry.unwrap_or(DEFAULT_MAX_RETRY) {
                job_phase::FAILED
            } else if total_replicas(spec) - status.terminating >= status.min_available {
                job_phase::PENDING
            } else {
                return false;
            }
        }
        PhaseRule::Progress => match running(spec, status) {
            Some(p) => p,
            None => return false,
        },
    };
    status.state.phase = phase.to_string();
    true
}

/// Whole-job retries when `maxRetry` is not set (Volcano's webhook default).
pub const DEFAULT_MAX_RETRY: i32 = 3;

/// Where a Running job goes once its pods are counted, if anywhere.
fn running(spec: &JobSpec, status: &JobStatus) -> Option<&'static str> {
    let replicas = total_replicas(spec);
    if replicas == 0 {
        return None;
    }
    let min_available = spec.min_available.unwrap_or(0);
    if let Some(min_success) = spec.min_success
        && status.succeeded >= min_success
    {
        return Some(job_phase::COMPLETED);
    }
    if status.succeeded + status.failed == replicas {
        if min_available >= total_task_min_available(spec) {
            let short_task = spec.tasks.iter().any(|task| {
                let Some(min) = task.min_available else {
                    return false;
                };
                status
                    .task_status_count
                    .get(&task.name)
                    .is_some_and(|t| t.phase.get("Succeeded").copied().unwrap_or(0) < min)
            });
            if short_task {
                return Some(job_phase::FAILED);
            }
        }
        return Some(match spec.min_success {
            Some(min_success) if status.succeeded < min_success => job_phase::FAILED,
            _ if status.succeeded >= min_available => job_phase::COMPLETED,
            _ => job_phase::FAILED,
        });
    }
    (status.pending > replicas - min_available).then_some(job_phase::PENDING)
}
