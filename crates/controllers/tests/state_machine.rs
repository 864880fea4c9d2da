//! Every (phase, action) row of Volcano's job state machine (§6.3 of volcano-semantics.md):
//! the work it does to the pods and the rule that moves the phase.

use volcano_api::batch::{JobSpec, JobStatus, TaskSpec, TaskState, job_phase as p};
use volcano_api::bus::BusAction as A;
use volcano_controllers::job::state::{PhaseRule, Plan, Retain, Work, apply_rule, plan_for};

const RESTART: PhaseRule = PhaseRule::Enter {
    phase: p::RESTARTING,
    retry: true,
};

fn enter(phase: &'static str) -> PhaseRule {
    PhaseRule::Enter {
        phase,
        retry: false,
    }
}

fn plan(work: Work, rule: PhaseRule) -> Plan {
    Plan { work, rule }
}

/// Actions that neither kill nor restart: they all fall to the phase's default row.
const OTHERS: &[A] = &[A::SyncJob, A::EnqueueJob, A::ResumeJob];
const TARGETED: &[A] = &[A::RestartTask, A::RestartPod, A::RestartPartition];

#[test]
fn pending_and_running_rows() {
    for phase in [p::PENDING, p::RUNNING] {
        assert_eq!(
            plan_for(phase, A::RestartJob),
            plan(Work::KillJob(Retain::Nothing), RESTART)
        );
        for &a in TARGETED {
            assert_eq!(
                plan_for(phase, a),
                plan(Work::KillTarget, RESTART),
                "{phase} {a}"
            );
        }
        assert_eq!(
            plan_for(phase, A::AbortJob),
            plan(Work::KillJob(Retain::Finished), enter(p::ABORTING))
        );
        assert_eq!(
            plan_for(phase, A::CompleteJob),
            plan(Work::KillJob(Retain::Finished), enter(p::COMPLETING))
        );
        assert_eq!(
            plan_for(phase, A::TerminateJob),
            plan(Work::KillJob(Retain::Finished), enter(p::TERMINATING))
        );
    }
    for &a in OTHERS {
        assert_eq!(
            plan_for(p::PENDING, a),
            plan(Work::Sync, PhaseRule::Start),
            "{a}"
        );
        assert_eq!(
            plan_for(p::RUNNING, a),
            plan(Work::Sync, PhaseRule::Progress),
            "{a}"
        );
    }
}

#[test]
fn restarting_rows() {
    assert_eq!(
        plan_for(p::RESTARTING, A::SyncJob),
        plan(Work::Sync, PhaseRule::Restart)
    );
    for &a in TARGETED {
        assert_eq!(
            plan_for(p::RESTARTING, a),
            plan(Work::KillTarget, PhaseRule::Restart)
        );
    }
    for a in [
        A::RestartJob,
        A::AbortJob,
        A::ResumeJob,
        A::EnqueueJob,
        A::TerminateJob,
    ] {
        assert_eq!(
            plan_for(p::RESTARTING, a),
            plan(Work::KillJob(Retain::Nothing), PhaseRule::Restart),
            "{a}"
        );
    }
}

#[test]
fn aborting_aborted_and_draining_rows() {
    for phase in [p::ABORTING, p::ABORTED] {
        assert_eq!(
            plan_for(phase, A::ResumeJob),
            plan(Work::KillJob(Retain::Finished), RESTART)
        );
    }
    for a in [A::SyncJob, A::AbortJob, A::RestartJob] {
        assert_eq!(
            plan_for(p::ABORTING, a),
            plan(
                Work::KillJob(Retain::Finished),
                PhaseRule::WhenDrained(p::ABORTED)
            )
        );
        assert_eq!(
            plan_for(p::ABORTED, a),
            plan(Work::KillJob(Retain::Finished), PhaseRule::Keep)
        );
    }
    for a in [A::SyncJob, A::ResumeJob, A::RestartJob, A::AbortJob] {
        assert_eq!(
            plan_for(p::COMPLETING, a),
            plan(
                Work::KillJob(Retain::Finished),
                PhaseRule::WhenDrained(p::COMPLETED)
            )
        );
        assert_eq!(
            plan_for(p::TERMINATING, a),
            plan(
                Work::KillJob(Retain::Finished),
                PhaseRule::WhenDrained(p::TERMINATED)
            )
        );
        for finished in [p::COMPLETED, p::FAILED, p::TERMINATED] {
            assert_eq!(
                plan_for(finished, a),
                plan(Work::KillJob(Retain::Finished), PhaseRule::Keep)
            );
        }
    }
}

#[test]
fn an_unknown_phase_is_pending() {
    assert_eq!(plan_for("", A::SyncJob), plan_for(p::PENDING, A::SyncJob));
    assert_eq!(
        plan_for("Weird", A::RestartJob),
        plan_for(p::PENDING, A::RestartJob)
    );
}

fn spec(min_available: i32, tasks: &[(&str, i32, Option<i32>)]) -> JobSpec {
    JobSpec {
        min_available: Some(min_available),
        max_retry: Some(3),
        tasks: tasks
            .iter()
            .map(|&(name, replicas, min)| TaskSpec {
                name: name.into(),
                replicas,
                min_available: min,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn status(phase: &str, pending: i32, running: i32, succeeded: i32, failed: i32) -> JobStatus {
    let mut s = JobStatus {
        pending,
        running,
        succeeded,
        failed,
        min_available: 0,
        ..Default::default()
    };
    s.state.phase = phase.into();
    s
}

fn after(rule: PhaseRule, spec: &JobSpec, mut s: JobStatus) -> (bool, String, i32) {
    let moved = apply_rule(rule, spec, &mut s);
    (moved, s.state.phase, s.retry_count)
}

#[test]
fn pending_starts_once_min_available_pods_run_or_finished() {
    let sp = spec(3, &[("w", 4, None)]);
    assert_eq!(
        after(PhaseRule::Start, &sp, status(p::PENDING, 2, 2, 0, 0)).1,
        p::PENDING
    );
    assert_eq!(
        after(PhaseRule::Start, &sp, status(p::PENDING, 1, 2, 1, 0)).1,
        p::RUNNING
    );
}

#[test]
fn running_completes_fails_or_falls_back_to_pending() {
    let sp = spec(2, &[("w", 4, None)]);
    // All finished, enough succeeded.
    assert_eq!(
        after(PhaseRule::Progress, &sp, status(p::RUNNING, 0, 0, 3, 1)).1,
        p::COMPLETED
    );
    // All finished, too few succeeded.
    assert_eq!(
        after(PhaseRule::Progress, &sp, status(p::RUNNING, 0, 0, 1, 3)).1,
        p::FAILED
    );
    // More pending than the gang can spare: back to Pending.
    assert_eq!(
        after(PhaseRule::Progress, &sp, status(p::RUNNING, 3, 1, 0, 0)).1,
        p::PENDING
    );
    // Still running.
    assert_eq!(
        after(PhaseRule::Progress, &sp, status(p::RUNNING, 1, 3, 0, 0)),
        (false, p::RUNNING.to_string(), 0)
    );
}

#[test]
fn min_success_completes_early_and_fails_when_unreached() {
    let mut sp = spec(1, &[("w", 4, None)]);
    sp.min_success = Some(2);
    assert_eq!(
        after(PhaseRule::Progress, &sp, status(p::RUNNING, 0, 2, 2, 0)).1,
        p::COMPLETED
    );
    assert_eq!(
        after(PhaseRule::Progress, &sp, status(p::RUNNING, 0, 0, 1, 3)).1,
        p::FAILED
    );
}

#[test]
fn a_task_short_of_its_minimum_fails_the_job() {
    let sp = spec(3, &[("master", 1, Some(1)), ("worker", 2, Some(2))]);
    let mut s = status(p::RUNNING, 0, 0, 2, 1);
    s.task_status_count.insert(
        "master".into(),
        TaskState {
            phase: [("Failed".to_string(), 1)].into(),
        },
    );
    s.task_status_count.insert(
        "worker".into(),
        TaskState {
            phase: [("Succeeded".to_string(), 2)].into(),
        },
    );
    assert_eq!(after(PhaseRule::Progress, &sp, s).1, p::FAILED);
}

#[test]
fn restarting_fails_at_max_retry_or_returns_to_pending() {
    let sp = spec(2, &[("w", 2, None)]);
    let mut s = status(p::RESTARTING, 0, 0, 0, 0);
    s.min_available = 2;
    s.retry_count = 3;
    assert_eq!(after(PhaseRule::Restart, &sp, s.clone()).1, p::FAILED);
    s.retry_count = 1;
    s.terminating = 2;
    assert_eq!(
        after(PhaseRule::Restart, &sp, s.clone()),
        (false, p::RESTARTING.to_string(), 1)
    );
    s.terminating = 0;
    assert_eq!(after(PhaseRule::Restart, &sp, s).1, p::PENDING);
}

#[test]
fn draining_phases_wait_for_every_pod() {
    let sp = spec(1, &[("w", 2, None)]);
    let rule = PhaseRule::WhenDrained(p::ABORTED);
    let mut s = status(p::ABORTING, 0, 0, 1, 0);
    s.terminating = 1;
    assert_eq!(after(rule, &sp, s.clone()).1, p::ABORTING);
    s.terminating = 0;
    assert_eq!(after(rule, &sp, s).1, p::ABORTED);
}

#[test]
fn entering_a_restart_counts_a_retry() {
    let sp = spec(1, &[("w", 1, None)]);
    assert_eq!(
        after(RESTART, &sp, status(p::RUNNING, 0, 1, 0, 0)),
        (true, p::RESTARTING.to_string(), 1)
    );
    assert_eq!(
        after(enter(p::ABORTING), &sp, status(p::RUNNING, 0, 1, 0, 0)),
        (true, p::ABORTING.to_string(), 0)
    );
}
