//! A JobFlow's status from its Jobs, as Volcano's `getAllJobStatus` computes it, and the phase
//! transitions of its state machine (`state/pending.go`, `state/running.go`).

use volcano_api::batch::{Job, job_phase};
use volcano_api::flow::{Condition, JobFlowStatus, JobRunningHistory, JobStatus, flow_phase};

use crate::time::{Instant, parse_duration};

/// The status of a flow whose Jobs are `jobs`, carrying over its phase and each Job's history
/// from `previous`; `now` stamps the phase changes seen in this turn.
pub fn job_flow_status(previous: &JobFlowStatus, jobs: &[&Job], now: Instant) -> JobFlowStatus {
    let mut status = JobFlowStatus {
        state: previous.state.clone(),
        job_status_list: previous.job_status_list.clone(),
        ..JobFlowStatus::default()
    };
    for job in jobs {
        let name = job.metadata.name.clone().unwrap_or_default();
        let js = job.status.clone().unwrap_or_default();
        let phase = js.state.phase.clone();
        let list = match phase.as_str() {
            job_phase::PENDING => Some(&mut status.pending_jobs),
            job_phase::RUNNING => Some(&mut status.running_jobs),
            job_phase::FAILED => Some(&mut status.failed_jobs),
            job_phase::COMPLETED => Some(&mut status.completed_jobs),
            job_phase::TERMINATED => Some(&mut status.terminated_jobs),
            // Volcano counts these as known phases but lists them nowhere.
            job_phase::COMPLETING | job_phase::TERMINATING => None,
            _ => Some(&mut status.un_know_jobs),
        };
        if let Some(list) = list {
            list.push(name.clone());
        }
        status.conditions.insert(
            name.clone(),
            Condition {
                phase: phase.clone(),
                create_time: job.metadata.creation_timestamp.clone(),
                running_duration: js.running_duration.clone(),
                task_status_count: js.task_status_count.clone(),
            },
        );
        let end_timestamp = match (&job.metadata.creation_timestamp, &js.running_duration) {
            (Some(created), Some(ran)) => {
                parse_duration(ran).map(|d| Instant::from_time(created).after(d).to_time())
            }
            _ => None,
        };
        let histories = running_histories(&status.job_status_list, &name, &phase, now);
        let entry = JobStatus {
            name: name.clone(),
            state: phase,
            start_timestamp: job.metadata.creation_timestamp.clone(),
            end_timestamp,
            restart_count: js.retry_count,
            running_histories: histories,
        };
        match status.job_status_list.iter_mut().find(|s| s.name == name) {
            Some(slot) => *slot = entry,
            None => status.job_status_list.push(entry),
        }
    }
    status
}

/// A Job's phase history: the last entry closed and a new one opened when its phase changed.
fn running_histories(
    list: &[JobStatus],
    name: &str,
    phase: &str,
    now: Instant,
) -> Vec<JobRunningHistory> {
    let stamp = || Some(now.to_time());
    let opened = |state: &str| JobRunningHistory {
        start_timestamp: stamp(),
        end_timestamp: None,
        state: state.to_string(),
    };
    let mut histories = list
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.running_histories.clone())
        .unwrap_or_default();
    match histories.last_mut() {
        Some(last) if last.state != phase => {
            last.end_timestamp = stamp();
            histories.push(opened(phase));
        }
        Some(_) => {}
        None if !phase.is_empty() => histories.push(opened(phase)),
        None => {}
    }
    histories
}

/// The phase a flow of `flows` flows moves to, given its recomputed Job lists.
pub fn advance_phase(status: &mut JobFlowStatus, flows: usize) {
    let failed = !status.failed_jobs.is_empty() || !status.terminated_jobs.is_empty();
    let next = match status.state.phase.as_str() {
        "" | flow_phase::PENDING => {
            let started = !status.running_jobs.is_empty() || !status.completed_jobs.is_empty();
            if started && status.failed_jobs.is_empty() {
                flow_phase::RUNNING
            } else if failed {
                flow_phase::FAILED
            } else {
                flow_phase::PENDING
            }
        }
        flow_phase::RUNNING => {
            if status.completed_jobs.len() == flows {
                flow_phase::SUCCEED
            } else if failed {
                flow_phase::FAILED
            } else {
                flow_phase::RUNNING
            }
        }
        _ => return,
    };
    status.state.phase = next.to_string();
}
