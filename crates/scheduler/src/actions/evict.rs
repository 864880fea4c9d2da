//! Making room for one task on one node by evicting victims, shared by `preempt` and
//! `reclaim`.
//!
//! The victims are tried in Volcano's order (`BuildVictimsPriorityQueue`) until the task fits,
//! as Volcano does. Then volcano-rs goes further on three points:
//! - the set is made minimal: a victim whose eviction is not needed for the task to fit is
//!   spared, trying to spare higher-priority and longer-running pods first;
//! - "fits" means the task then passes every predicate on the node, not only the resource count;
//! - a set is refused when a victim's job could take the task's place back in the next session
//!   under the same configuration (ping-pong).

use std::cmp::Reverse;
use std::collections::HashMap;

use super::topology;
use crate::framework::{EvictionUnit, PriorityQueue, Session, Statement};
use crate::model::{DomainId, JobId, NodeId, TaskId, TaskStatus};

/// Which action is evicting: decides the reason text and the ping-pong check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Within a queue, by priority.
    Preempt,
    /// Across queues, by share.
    Reclaim,
}

/// Whether victim `l` is evicted before victim `r` for `preemptor` (Volcano's
/// `BuildVictimsPriorityQueue` order).
fn victim_less(ssn: &Session, l: TaskId, r: TaskId, preemptor: TaskId) -> bool {
    let s = &ssn.snap;
    let (lj, rj) = (s.task(l).job, s.task(r).job);
    if lj == rj {
        return !ssn.task_order_less(l, r);
    }
    let (Some(lj), Some(rj)) = (lj, rj) else {
        // A task without a job goes first: nothing of it is worth keeping.
        return lj.is_none();
    };
    let job_then_task = |lj: JobId, rj: JobId| match ssn.job_order_opinion(lj, rj) {
        Some(l_first) => !l_first,
        None => !ssn.task_order_less(l, r),
    };
    let Some(pj) = s.task(preemptor).job else {
        return job_then_task(lj, rj);
    };
    let (lq, rq) = (s.job(lj).queue, s.job(rj).queue);
    if lq != rq {
        return ssn.victim_queue_order_less(lq, rq, s.job(pj).queue);
    }
    job_then_task(lj, rj)
}

/// `candidates` in the order they would be evicted. Plugins that count victims against a
/// running total (gang, drf, the queue-share plugins) then spend it on the cheapest victims
/// first; Volcano hands them a node's tasks in map order, which varies from run to run.
pub fn in_victim_order(ssn: &Session, preemptor: TaskId, candidates: Vec<TaskId>) -> Vec<TaskId> {
    let mut order = PriorityQueue::new();
    for v in candidates {
        order.push(v, &mut |a, b| victim_less(ssn, a, b, preemptor));
    }
    let mut sorted = Vec::with_capacity(order.len());
    while let Some(v) = order.pop(&mut |a, b| victim_less(ssn, a, b, preemptor)) {
        sorted.push(v);
    }
    sorted
}

/// When the pod started (its start time, else its creation), for "least progress lost".
fn started(ssn: &Session, t: TaskId) -> i64 {
    let task = ssn.snap.task(t);
    task.pod
        .status
        .as_ref()
        .and_then(|st| st.start_time.as_ref())
        .map_or(task.creation, |t| t.0.as_second())
}

/// Whether evicting exactly `set` lets the task fit by `fits`; the session is left unchanged.
fn fits_after(ssn: &mut Session, set: &[TaskId], fits: &dyn Fn(&Session) -> bool) -> bool {
    let mut trial = Statement::new();
    for &v in set {
        ssn.stmt_evict(&mut trial, v, String::new());
    }
    let ok = fits(ssn);
    ssn.discard(trial);
    ok
}

/// The reason written on each victim.
fn reason(ssn: &Session, mode: Mode, preemptor: TaskId, node: NodeId) -> String {
    let s = &ssn.snap;
    let task = s.task(preemptor);
    let node = &s.node(node).name;
    match (mode, task.job) {
        (Mode::Preempt, Some(j)) => format!(
            "preempted by {} (job {}, priority {}) to run on node {node}",
            task.key,
            s.job(j).key,
            s.job(j).priority
        ),
        (Mode::Reclaim, Some(j)) => format!(
            "reclaimed by queue {} for {} (job {}) to run on node {node}",
            s.job_queue(j).name,
            task.key,
            s.job(j).key
        ),
        (_, None) => format!("evicted for {} to run on node {node}", task.key),
    }
}

/// Victims evicted together: one pod, or every running pod of a gang that cannot lose fewer.
pub type Unit = EvictionUnit;

/// Tries to place `preemptor` on `node` by evicting some of `units` (already filtered by the
/// plugins and the guards, in eviction order). On success returns a statement holding the
/// evictions and the pipelined preemptor, already applied to the session; on failure the
/// session is unchanged.
pub fn make_room(
    ssn: &mut Session,
    mode: Mode,
    preemptor: TaskId,
    node: NodeId,
    units: Vec<Unit>,
    fits: &dyn Fn(&Session) -> bool,
) -> Option<Statement> {
    let mut node_stmt = Statement::new();
    let mut evicted: Vec<Unit> = Vec::new();
    let mut next = units.into_iter();
    while !fits(ssn) {
        let Some(unit) = next.next() else { break };
        for &v in &unit {
            ssn.stmt_evict(&mut node_stmt, v, String::new());
        }
        evicted.push(unit);
    }
    let fitted = fits(ssn);
    ssn.discard(node_stmt);
    if !fitted {
        return None;
    }

    let chosen: Vec<TaskId> = minimal_subset(ssn, evicted, fits)
        .into_iter()
        .flatten()
        .collect();
    let why = reason(ssn, mode, preemptor, node);
    let mut node_stmt = Statement::new();
    for &v in &chosen {
        ssn.stmt_evict(&mut node_stmt, v, why.clone());
    }
    if !fits(ssn) {
        // Cannot happen for monotone predicates; refuse rather than evict for nothing.
        ssn.discard(node_stmt);
        return None;
    }
    ssn.stmt_pipeline_nominated(&mut node_stmt, preemptor, node, !chosen.is_empty());
    if chosen
        .iter()
        .any(|&v| would_take_back(ssn, mode, v, preemptor))
    {
        ssn.discard(node_stmt);
        return None;
    }
    Some(node_stmt)
}

/// Sort key putting the units most worth keeping first: highest priority, then longest running.
fn spare_first(ssn: &Session, unit: &Unit) -> (Reverse<i32>, Reverse<i32>, i64, String) {
    let t = unit.first().copied().unwrap_or(TaskId(0));
    let task = ssn.snap.task(t);
    let job_priority = task.job.map_or(i32::MIN, |j| ssn.snap.job(j).priority);
    (
        Reverse(job_priority),
        Reverse(task.priority),
        started(ssn, t),
        // The printed key, so ties break in the order they always did.
        task.key.to_string(),
    )
}

/// Whether `p` fits on `n` now: the resources (counting what is being released), every
/// predicate, and for `preempt` its queue's allocatable check.
pub fn preemptor_fits(ssn: &Session, mode: Mode, p: TaskId, n: NodeId) -> bool {
    let s = &ssn.snap;
    let queue_ok = match (mode, s.task(p).job) {
        (Mode::Preempt, Some(j)) => ssn.allocatable(s.job(j).queue, p).is_ok(),
        (Mode::Preempt, None) => false,
        (Mode::Reclaim, _) => true,
    };
    queue_ok && s.task(p).resreq.fits_in(&s.node(n).future_idle) && ssn.predicate(p, n).is_ok()
}

/// Once all of a job's tasks are placed, spares the victims that turned out not to be needed:
/// each placement took a minimal set for itself, but a later victim on the same node may have
/// freed enough for an earlier one too. A victim (or a group of victims) is spared when every
/// task the statement pipelines on its node still fits and no gang is left between zero and
/// its minimum.
pub fn spare_unneeded(ssn: &mut Session, mode: Mode, stmt: &mut Statement) {
    let evicted: Vec<TaskId> = stmt.evicted().collect();
    if evicted.len() <= 1 {
        return;
    }
    let placed: Vec<(TaskId, NodeId)> = stmt.pipelined().collect();
    let mut units: Vec<Unit> = evicted.iter().map(|&v| vec![v]).collect();
    // A gang the statement took below its minimum needs several pods back at once to be
    // valid again: try every such group when there are few, else the most valuable one.
    let mut by_job: HashMap<JobId, Vec<TaskId>> = HashMap::new();
    for &v in &evicted {
        if let Some(j) = ssn.snap.task(v).job {
            by_job.entry(j).or_default().push(v);
        }
    }
    for (j, mut victims) in by_job {
        let job = ssn.snap.job(j);
        let needed = i64::from(job.min_available) - i64::from(job.ready_task_num());
        if needed < 2 || needed as usize > victims.len() {
            continue;
        }
        victims.sort_by_key(|&v| spare_first(ssn, &vec![v]));
        units.extend(groups(&victims, needed as usize));
    }
    units.sort_by_key(|u| (spare_first(ssn, u), u.len()));
    let mut spared: Vec<TaskId> = Vec::new();
    for unit in units {
        if unit.iter().any(|t| spared.contains(t)) {
            continue;
        }
        let reasons: Vec<(TaskId, String)> = unit
            .iter()
            .filter_map(|&t| ssn.stmt_unevict(stmt, t).map(|r| (t, r)))
            .collect();
        let mut nodes: Vec<NodeId> = unit.iter().filter_map(|&t| ssn.snap.task(t).node).collect();
        nodes.dedup();
        let ok = unit.iter().all(|&t| gang_whole_or_above_min(ssn, t))
            && nodes.iter().all(|&n| all_fit(ssn, mode, &placed, n));
        if ok {
            spared.extend(unit);
        } else {
            for (t, reason) in reasons {
                ssn.stmt_evict(stmt, t, reason);
            }
        }
    }
}

/// Up to 20 choices of `k` of `items` (in order), so a large gang costs little.
fn groups(items: &[TaskId], k: usize) -> Vec<Unit> {
    let mut out = Vec::new();
    let mut pick: Vec<usize> = (0..k).collect();
    while out.len() < 20 {
        out.push(pick.iter().map(|&i| items[i]).collect());
        // Next combination in lexicographic order.
        let Some(i) = (0..k).rev().find(|&i| pick[i] < items.len() - k + i) else {
            break;
        };
        pick[i] += 1;
        for j in i + 1..k {
            pick[j] = pick[j - 1] + 1;
        }
    }
    out
}

/// Whether the task's gang runs with at least its minimum, or not at all.
fn gang_whole_or_above_min(ssn: &Session, t: TaskId) -> bool {
    let Some(j) = ssn.snap.task(t).job else {
        return true;
    };
    let job = ssn.snap.job(j);
    job.ready_task_num() == 0 || i64::from(job.ready_task_num()) >= i64::from(job.min_available)
}

/// Whether every task pipelined on `node` would fit there if it were placed last.
fn all_fit(ssn: &mut Session, mode: Mode, placed: &[(TaskId, NodeId)], node: NodeId) -> bool {
    for &(p, _) in placed.iter().filter(|(_, n)| *n == node) {
        ssn.snap.unplace(p, TaskStatus::Pending);
        ssn.fire_deallocate(p);
        let ok = preemptor_fits(ssn, mode, p, node);
        ssn.snap.place(p, node, TaskStatus::Pipelined);
        ssn.fire_allocate(p);
        if !ok {
            return false;
        }
    }
    true
}

/// Spares every unit whose eviction is not needed, trying the most valuable first (highest
/// priority, then longest running); what is left is minimal: sparing any one more unit of it
/// would leave the task unable to fit.
fn minimal_subset(
    ssn: &mut Session,
    evicted: Vec<Unit>,
    fits: &dyn Fn(&Session) -> bool,
) -> Vec<Unit> {
    if evicted.len() <= 1 {
        // The task did not fit before the first eviction, so one unit is already minimal.
        return evicted;
    }
    let mut spare_order: Vec<usize> = (0..evicted.len()).collect();
    spare_order.sort_by_key(|&i| spare_first(ssn, &evicted[i]));
    let mut kept = vec![true; evicted.len()];
    for i in spare_order {
        kept[i] = false;
        let without: Vec<TaskId> = evicted
            .iter()
            .zip(&kept)
            .filter(|(_, k)| **k)
            .flat_map(|(u, _)| u.iter().copied())
            .collect();
        if !fits_after(ssn, &without, fits) {
            kept[i] = true;
        }
    }
    evicted
        .into_iter()
        .zip(kept)
        .filter(|(_, k)| *k)
        .map(|(u, _)| u)
        .collect()
}

/// Whether the victim's job could, in the next session under the same configuration, evict
/// the preemptor to get its task back: the placement would then be undone and redone forever.
///
/// Evaluated on the session as it will look then: the preemptor running on its node, the
/// victim gone and asking again.
fn would_take_back(ssn: &mut Session, mode: Mode, victim: TaskId, preemptor: TaskId) -> bool {
    let s = &ssn.snap;
    let (v, p) = (s.task(victim), s.task(preemptor));
    if v.preemption_never || !p.preemptable || (v.best_effort && !p.best_effort) {
        return false;
    }
    let (Some(vj), Some(pj)) = (v.job, p.job) else {
        return false;
    };
    let (vq, pq) = (s.job(vj).queue, s.job(pj).queue);
    let before = p.status;
    ssn.snap.update_on_node(preemptor, TaskStatus::Running);
    // The same questions the actions ask: is the victim's job starving, would the tiers offer
    // the preemptor as its victim, and would the guards let it go.
    let offered = |ssn: &Session, victims: Vec<TaskId>| {
        guard(ssn, mode, victim, victims)
            .iter()
            .flatten()
            .any(|&t| t == preemptor)
    };
    let back = ssn.job_starving(vj)
        && match mode {
            Mode::Preempt => offered(ssn, ssn.preemptable(victim, &[preemptor])),
            Mode::Reclaim => {
                ssn.snap.queue(pq).reclaimable
                    && !ssn.overused(vq)
                    && ssn.preemptive(vq, victim)
                    && offered(ssn, ssn.reclaimable(victim, &[preemptor]))
            }
        };
    ssn.snap.update_on_node(preemptor, before);
    back
}

/// Rules that hold whatever the tiers say, turning the tiers' victims into eviction units.
///
/// Volcano lets a later tier decide when an earlier one returns no victims, so with the
/// default tiers an empty answer from `priority` skips `gang` and hands the choice to `drf`,
/// which may then take a task of equal priority or break a running gang. volcano-rs keeps the
/// tiers' answer but never lets it do that:
/// - `preempt` never evicts a pod of equal or higher priority than its preemptor (job priority
///   between jobs, task priority within one);
/// - then every plugin enabled for this kind of eviction guards the victims, whichever tier
///   chose them ([`Session::guard_victims`]): `conformance` protects critical pods, `gang`
///   lets a running gang lose only pods above its `minMember`, or all of its running pods at
///   once when every one of them is a victim here (a single-pod job, a gang packed on this
///   node). A configuration that leaves `gang` out of victim selection, as some of Volcano's
///   own tests do, gets one unit per pod.
pub fn guard(ssn: &Session, mode: Mode, preemptor: TaskId, victims: Vec<TaskId>) -> Vec<Unit> {
    let s = &ssn.snap;
    let p = s.task(preemptor);
    let victims: Vec<TaskId> = victims
        .into_iter()
        .filter(|&v| {
            let vt = s.task(v);
            match (mode, p.job, vt.job) {
                (Mode::Preempt, Some(pj), Some(vj)) if pj == vj => vt.priority < p.priority,
                (Mode::Preempt, Some(pj), Some(vj)) => s.job(vj).priority < s.job(pj).priority,
                (Mode::Preempt, _, _) => false,
                (Mode::Reclaim, _, _) => true,
            }
        })
        .collect();
    match mode {
        Mode::Preempt => ssn.guard_victims(|f| f.preemptable, victims),
        Mode::Reclaim => ssn.guard_victims(|f| f.reclaimable, victims),
    }
}

/// The nodes `t` may preempt on: every node whose predicates either pass or fail for a reason
/// evicting pods could resolve, minus nodes out of sync, and, for a gang with a hard network
/// topology, minus nodes outside the domain it must stay in (`within`: the attempt's domain).
pub fn candidate_nodes(ssn: &Session, t: TaskId, within: Option<DomainId>) -> Vec<NodeId> {
    let scope = topology::eviction_scope(ssn, t, within);
    ssn.snap
        .node_ids()
        .filter(|&n| !ssn.snap.node(n).out_of_sync)
        .filter(|&n| {
            scope
                .as_ref()
                .is_none_or(|s| s.allows(&ssn.snap.topology, n))
        })
        .filter(|&n| match ssn.predicate(t, n) {
            Ok(()) => true,
            Err(e) => !e.unresolvable,
        })
        .collect()
}

/// Whether the resources victims hold, with the node's future idle, could hold `t` at all
/// (Volcano's `ValidateVictims`).
pub fn victims_could_suffice(
    ssn: &Session,
    t: TaskId,
    n: NodeId,
    victims: impl Iterator<Item = TaskId>,
) -> bool {
    let s = &ssn.snap;
    let mut avail = s.node(n).future_idle.clone();
    for v in victims {
        avail.add(&s.task(v).resreq);
    }
    s.task(t).resreq.fits_in(&avail)
}
