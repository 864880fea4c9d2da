//! `gang`: a job runs with at least `minMember` tasks (and `minTaskMember` per role) or not at
//! all, and says why at session close.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use volcano_api::scheduling::PodGroupCondition;

use crate::framework::conditions::{NOT_ENOUGH_RESOURCES, SCHEDULED, UNSCHEDULABLE};
use crate::framework::pending::{gang_unschedulable, largest_node, satisfied_by_releasing};
use crate::framework::{EvictionUnit, Plugin, Vote};
use crate::model::{JobId, Snapshot, TaskId, TaskStatus, occupied};

/// The gang plugin.
pub struct Gang;

/// Tasks per role counted by `counts(status, best_effort)`.
fn per_role(
    s: &Snapshot,
    j: JobId,
    counts: impl Fn(TaskStatus, bool) -> bool,
) -> BTreeMap<String, i32> {
    let mut m = BTreeMap::new();
    for &t in &s.job(j).tasks {
        let task = s.task(t);
        if counts(task.status, task.best_effort) {
            *m.entry(task.role.clone().unwrap_or_default()).or_insert(0) += 1;
        }
    }
    m
}

/// Whether per-role minimums apply at all: Volcano skips them when the gang minimum is below
/// their sum.
fn roles_apply(s: &Snapshot, j: JobId) -> bool {
    let job = s.job(j);
    let sum: i64 = job.min_task_member.values().map(|v| i64::from(*v)).sum();
    !job.min_task_member.is_empty() && i64::from(job.min_available) >= sum
}

fn roles_satisfied(s: &Snapshot, j: JobId, counts: impl Fn(TaskStatus, bool) -> bool) -> bool {
    if !roles_apply(s, j) {
        return true;
    }
    let have = per_role(s, j, counts);
    s.job(j)
        .min_task_member
        .iter()
        .all(|(role, min)| have.get(role).copied().unwrap_or(0) >= *min)
}

/// Whether every `minSubGroups` of the job's sub-group policies is met by sub-groups whose
/// tasks `counts` reach their size (Volcano's `CheckSubJobReady`/`CheckSubJobPipelined`).
fn sub_groups_satisfied(s: &Snapshot, j: JobId, counts: impl Fn(TaskStatus, bool) -> bool) -> bool {
    s.job(j)
        .sub_groups
        .as_ref()
        .is_none_or(|g| g.short_policy(&s.tasks, counts).is_none())
}

/// Sets the condition of `type_`, replacing the previous one of that type: at most one per type.
fn set_condition(conds: &mut Vec<PodGroupCondition>, c: PodGroupCondition) {
    match conds.iter_mut().find(|x| x.type_ == c.type_) {
        Some(x) => *x = c,
        None => conds.push(c),
    }
}

/// Whether `conds` hold gang's `Scheduled` condition as it sets it, and no `Unschedulable`
/// one that is True.
fn says_ready(conds: &[PodGroupCondition]) -> bool {
    conds.iter().any(|c| {
        c.type_ == SCHEDULED
            && c.status == "True"
            && c.reason == READY_REASON
            && c.message.is_empty()
    }) && !conds
        .iter()
        .any(|c| c.type_ == UNSCHEDULABLE && c.status == "True")
}

/// The reason of gang's `Scheduled` condition.
const READY_REASON: &str = "tasks in gang are ready to be scheduled";

/// Marks a condition of `type_` False, so the newest True condition always tells the truth.
fn clear_condition(conds: &mut [PodGroupCondition], type_: &str) {
    for c in conds
        .iter_mut()
        .filter(|c| c.type_ == type_ && c.status == "True")
    {
        c.status = "False".to_string();
    }
}

/// Victims among `candidates` that never break a running gang: a job's tasks are taken, in
/// the order given, only while it keeps more than `minMember` ready; a job that cannot spare
/// any is taken whole when every one of its ready tasks is a candidate (a single-pod job, a
/// gang packed on one node). Volcano's gang never offers the whole gang, so with its default
/// tiers a single-pod job could only be preempted when a later tier happened to agree.
pub fn gang_safe_victims(s: &Snapshot, candidates: &[TaskId]) -> Vec<TaskId> {
    let mut occupied: BTreeMap<JobId, i64> = BTreeMap::new();
    let mut held_back: BTreeMap<JobId, Vec<TaskId>> = BTreeMap::new();
    let mut victims = Vec::new();
    for &v in candidates {
        let Some(j) = s.task(v).job else { continue };
        let job = s.job(j);
        let left = occupied
            .entry(j)
            .or_insert_with(|| i64::from(job.ready_task_num()));
        if *left > i64::from(job.min_available) {
            *left -= 1;
            victims.push(v);
        } else {
            held_back.entry(j).or_default().push(v);
        }
    }
    let whole: Vec<TaskId> = held_back
        .into_iter()
        .filter(|(j, tasks)| {
            let job = s.job(*j);
            job.ready_task_num() > 0
                && i64::from(job.ready_task_num()) <= i64::from(job.min_available)
                && tasks.len() == job.ready_task_num() as usize
        })
        .flat_map(|(_, tasks)| tasks)
        .collect();
    if whole.is_empty() {
        return victims;
    }
    // Keep the caller's order.
    candidates
        .iter()
        .copied()
        .filter(|t| victims.contains(t) || whole.contains(t))
        .collect()
}

/// [`gang_safe_victims`] of `victims` as eviction units: a gang taken whole (it could spare
/// none) is one unit, at the position of its first member; every other victim is alone.
fn gang_units(s: &Snapshot, victims: &[TaskId]) -> Vec<EvictionUnit> {
    let mut units: Vec<EvictionUnit> = Vec::new();
    let mut whole: HashMap<JobId, usize> = HashMap::new();
    for v in gang_safe_victims(s, victims) {
        let taken_whole = s.task(v).job.filter(|&j| {
            let job = s.job(j);
            i64::from(job.ready_task_num()) <= i64::from(job.min_available)
        });
        match taken_whole.and_then(|j| whole.get(&j).copied()) {
            Some(at) => units[at].push(v),
            None => {
                if let Some(j) = taken_whole {
                    whole.insert(j, units.len());
                }
                units.push(vec![v]);
            }
        }
    }
    units
}

impl Plugin for Gang {
    fn name(&self) -> &'static str {
        "gang"
    }

    fn preemptable(&self, s: &Snapshot, _p: TaskId, candidates: &[TaskId]) -> Option<Vec<TaskId>> {
        Some(gang_safe_victims(s, candidates))
    }

    fn reclaimable(&self, s: &Snapshot, _r: TaskId, candidates: &[TaskId]) -> Option<Vec<TaskId>> {
        Some(gang_safe_victims(s, candidates))
    }

    fn victim_units(&self, s: &Snapshot, victims: &[TaskId]) -> Option<Vec<EvictionUnit>> {
        Some(gang_units(s, victims))
    }

    fn job_valid(&self, s: &Snapshot, j: JobId) -> Option<Result<(), (String, String)>> {
        let job = s.job(j);
        let valid = |st: TaskStatus, _| {
            st.is_allocated()
                || matches!(
                    st,
                    TaskStatus::Succeeded | TaskStatus::Pipelined | TaskStatus::Pending
                )
        };
        if roles_apply(s, j) {
            let have = per_role(s, j, valid);
            for (role, min) in &job.min_task_member {
                let n = have.get(role).copied().unwrap_or(0);
                if n < *min {
                    return Some(Err((
                        "NotEnoughPodsOfTask".to_string(),
                        format!(
                            "not enough pods of task {role:?} for gang-scheduling: valid {n}, min {min}"
                        ),
                    )));
                }
            }
        }
        if let Some((policy, have, min)) = job.sub_groups.as_ref().and_then(|g| g.too_few()) {
            return Some(Err((
                "NotEnoughPodsOfTask".to_string(),
                format!(
                    "not enough sub-groups of subGroupPolicy {policy:?} for gang-scheduling: {have} formed by the pods' labels, minSubGroups {min}"
                ),
            )));
        }
        let valid_num = job.valid_task_num();
        if i64::from(valid_num) < i64::from(job.min_available) {
            return Some(Err((
                "NotEnoughTasks".to_string(),
                format!(
                    "Not enough valid tasks for gang-scheduling, valid: {valid_num}, min: {}",
                    job.min_available
                ),
            )));
        }
        Some(Ok(()))
    }

    fn job_ready(&self, s: &Snapshot, j: JobId) -> Option<bool> {
        Some(
            roles_satisfied(s, j, occupied)
                && sub_groups_satisfied(s, j, occupied)
                && s.job(j).is_ready(),
        )
    }

    fn job_pipelined(&self, s: &Snapshot, j: JobId) -> Option<Vote> {
        let counts = |st, be| occupied(st, be) || st == TaskStatus::Pipelined;
        let ok = roles_satisfied(s, j, counts)
            && sub_groups_satisfied(s, j, counts)
            && s.job(j).is_pipelined();
        Some(if ok { Vote::Permit } else { Vote::Reject })
    }

    fn job_starving(&self, s: &Snapshot, j: JobId) -> Option<bool> {
        Some(s.job(j).is_starving())
    }

    fn job_order(&self, s: &Snapshot, l: JobId, r: JobId) -> Option<Ordering> {
        Some(match (s.job(l).is_ready(), s.job(r).is_ready()) {
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => Ordering::Equal,
        })
    }

    fn on_session_close(&mut self, s: &mut Snapshot, session_uid: &str) {
        let largest = largest_node(s);
        for j in s.job_ids() {
            // Volcano writes no condition for a PodGroup whose pods do not exist yet.
            if s.job(j).tasks.is_empty() {
                continue;
            }
            let ready = s.job(j).is_ready();
            if !ready && satisfied_by_releasing(s, j) {
                continue;
            }
            // Ready and saying so already: the same condition again would differ only in its
            // session ID, and would copy the job out of the snapshot it shares with the cache,
            // for every running job in every session.
            if ready && says_ready(&s.job(j).conditions) {
                continue;
            }
            let condition = if ready {
                PodGroupCondition {
                    type_: SCHEDULED.to_string(),
                    status: "True".to_string(),
                    transition_id: session_uid.to_string(),
                    reason: READY_REASON.to_string(),
                    ..Default::default()
                }
            } else {
                let (_, message) = gang_unschedulable(s, j, &largest);
                PodGroupCondition {
                    type_: UNSCHEDULABLE.to_string(),
                    status: "True".to_string(),
                    transition_id: session_uid.to_string(),
                    reason: NOT_ENOUGH_RESOURCES.to_string(),
                    message,
                    ..Default::default()
                }
            };
            let job = s.job_mut(j);
            clear_condition(
                &mut job.conditions,
                if ready { UNSCHEDULABLE } else { SCHEDULED },
            );
            set_condition(&mut job.conditions, condition);
        }
    }
}
