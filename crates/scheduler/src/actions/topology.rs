//! Placing a gang that has a network topology (Volcano's hypernode search in allocate, with
//! the network-topology-aware plugin's gradient): the candidate domains are those of tier at
//! most the job's limit, inside the domain its running pods already use; they are tried tier
//! by tier, lowest first, best scored first, each as a dry run on its own nodes; the first
//! where the gang reaches its minimum wins. In hard mode a gang that fits no candidate places
//! nothing and says how short each domain was; in soft mode it is then placed as if it had no
//! topology.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use volcano_api::scheduling::NetworkTopologySpec;
use volcano_api::spec_checks::MODE_SOFT;

use super::placer::{Goal, Placer};
use crate::conf::PluginKind;
use crate::framework::conditions::NETWORK_TOPOLOGY;
use crate::framework::{PriorityQueue, Session, Statement};
use crate::model::{DomainId, DomainLedger, JobId, NodeId, QueueId, TaskId, TaskStatus, Topology};
use crate::resource::Resource;

/// How many candidate domains a reason names before it counts the rest.
const LISTED_DOMAINS: usize = 5;

/// What a job's `networkTopology` asks of this session.
pub(super) enum Constraint {
    /// Search the domains of tier at most `tier`.
    Search {
        /// Hard (nothing outside one domain) or soft (a preference).
        hard: bool,
        /// The highest tier allowed.
        tier: i64,
    },
    /// The job cannot be placed in this session, for this reason.
    Blocked(String),
}

/// The constraint of job `j`, when it has a network topology the session holds it to.
pub(super) fn constraint(ssn: &Session, j: JobId) -> Option<Constraint> {
    let nt = ssn.snap.job(j).network_topology.as_ref()?;
    limit(ssn, nt)
}

/// What network topology `nt` (a job's or a sub-group's) asks of this session; `None` when the
/// session does not search HyperNodes.
pub(super) fn limit(ssn: &Session, nt: &NetworkTopologySpec) -> Option<Constraint> {
    if !ssn.hyper_node_gradient() {
        return None;
    }
    let topo = &ssn.snap.topology;
    let hard = nt.mode != MODE_SOFT;
    if let Some(why) = &topo.not_ready {
        return Some(Constraint::Blocked(format!(
            "the HyperNodes are not usable, so no gang with a network topology is placed: {why}"
        )));
    }
    let top = topo.domain(topo.root()).tier;
    let tier = match (nt.highest_tier_allowed, nt.highest_tier_name.as_str()) {
        (Some(t), _) => t,
        (None, "") => top,
        (None, name) => match topo.tier_named(name) {
            Some(t) => t,
            None if hard => {
                return Some(Constraint::Blocked(format!(
                    "networkTopology.highestTierName {name:?} names no tier of any HyperNode"
                )));
            }
            None => top,
        },
    };
    Some(Constraint::Search { hard, tier })
}

/// Where a task of a gang with a hard network topology may go by evicting others (preempt,
/// reclaim place pods one by one, not as a gang search).
pub(super) enum EvictionScope {
    /// Inside this domain: the widest of the allowed tier around the gang's placed pods.
    Domain(DomainId),
    /// On nodes in some domain of tier at most this, before any pod of the gang is placed.
    AnyDomainUpTo(i64),
    /// Nowhere: the gang's pods already span more than its tier allows, or the HyperNodes
    /// are unusable.
    Nowhere,
}

/// The domains a preempting or reclaiming job tries one after the other, each as one attempt
/// whose evictions stay inside it: for a gang with a hard network topology and no pod placed
/// yet, every domain of its allowed tier or below, lowest tier first; otherwise one attempt
/// with no domain of its own (`None`).
pub(super) fn eviction_domains(ssn: &Session, j: JobId) -> Vec<Option<DomainId>> {
    let Some(t) = ssn.snap.job(j).tasks.first().copied() else {
        return vec![None];
    };
    let Some(EvictionScope::AnyDomainUpTo(tier)) = eviction_scope(ssn, t, None) else {
        return vec![None];
    };
    let topo = &ssn.snap.topology;
    let mut ds: Vec<DomainId> = (0..topo.domains.len() as u32)
        .map(DomainId)
        .filter(|&d| d != topo.root())
        .filter(|&d| {
            let dom = topo.domain(d);
            dom.tier <= tier && !dom.nodes.is_empty()
        })
        .collect();
    // Domains come by tier then name already; the narrowest are tried first.
    ds.sort_by_key(|&d| (topo.domain(d).tier, d));
    ds.into_iter().map(Some).collect()
}

/// The eviction scope of task `t`, when its gang has a hard network topology; `within`, when
/// the job's attempt has one, confines it further.
pub(super) fn eviction_scope(
    ssn: &Session,
    t: TaskId,
    within: Option<DomainId>,
) -> Option<EvictionScope> {
    let j = ssn.snap.task(t).job?;
    let tier = match constraint(ssn, j)? {
        Constraint::Search { hard: false, .. } => return None,
        Constraint::Search { tier, .. } => tier,
        Constraint::Blocked(_) => return Some(EvictionScope::Nowhere),
    };
    let topo = &ssn.snap.topology;
    if tier >= topo.domain(topo.root()).tier {
        return None;
    }
    let s = &ssn.snap;
    let placed = s
        .job(j)
        .tasks
        .iter()
        .map(|&t| s.task(t))
        .filter(|t| t.status.is_allocated() || t.status == TaskStatus::Pipelined)
        .filter_map(|t| t.node);
    Some(match (topo.lowest_common(placed), within) {
        (None, None) => EvictionScope::AnyDomainUpTo(tier),
        (None, Some(w)) => EvictionScope::Domain(w),
        (Some(d), _) => match (topo.widest_within(d, tier), within) {
            (Some(w), None) => EvictionScope::Domain(w),
            // The attempt's domain holds the gang's placed pods: stay in it.
            (Some(_), Some(w)) if topo.domain(d).nodes.iter().all(|&n| topo.contains(w, n)) => {
                EvictionScope::Domain(w)
            }
            _ => EvictionScope::Nowhere,
        },
    })
}

impl EvictionScope {
    /// Whether node `n` is in the scope.
    pub(super) fn allows(&self, topo: &Topology, n: NodeId) -> bool {
        match self {
            EvictionScope::Domain(d) => topo.contains(*d, n),
            EvictionScope::AnyDomainUpTo(tier) => topo
                .node_domains
                .get(n.idx())
                .and_then(|ds| ds.first())
                .is_some_and(|&d| topo.domain(d).tier <= *tier),
            EvictionScope::Nowhere => false,
        }
    }
}

/// How a candidate domain fell short.
pub(super) enum Shortfall {
    /// Its free resources are below what the gang needs at least.
    Short(Resource),
    /// A dry run placed this many of the pods the gang still needed.
    Held(usize),
    /// Placing into it failed for this reason.
    Refused(String),
}

/// The domains a gang (or sub-group) may try, and those ruled out before any dry run.
pub(super) struct Candidates {
    /// Domains by tier, lowest first; within a tier the best scored first, then the one
    /// holding more of the gang, then by name.
    pub by_tier: Vec<Vec<DomainId>>,
    /// Domains whose free room is below the gang's need.
    pub shortfalls: Vec<(DomainId, Shortfall)>,
}

/// The domains of tier at most `tier` inside `root` that job `j`'s pods could go into: with
/// `need` (what must be free, see [`need`]) when the gang has no pod placed yet, scored for
/// `request`; `placed` are the nodes its placed pods hold.
#[allow(clippy::too_many_arguments)]
pub(super) fn candidates(
    ssn: &Session,
    ledger: &DomainLedger,
    j: JobId,
    tier: i64,
    root: DomainId,
    need: Option<&(Option<Resource>, Resource)>,
    request: &Resource,
    placed: &[NodeId],
) -> Candidates {
    let topo = &ssn.snap.topology;
    let mut shortfalls: Vec<(DomainId, Shortfall)> = Vec::new();
    let mut by_tier: BTreeMap<i64, Vec<(DomainId, f64, usize)>> = BTreeMap::new();
    for (i, dom) in topo.domains.iter().enumerate() {
        let d = DomainId(i as u32);
        if dom.tier > tier || dom.nodes.is_empty() || !within(topo, root, d) {
            continue;
        }
        let totals = ledger.totals(d);
        if let Some((min_resources, least)) = need {
            let admits = min_resources
                .as_ref()
                .is_none_or(|m| m.fits_in(&totals.idle) || m.fits_in(&totals.future_idle));
            if !admits || !least.fits_in(&totals.future_idle) {
                let mut short = least.exceeded_part(&totals.future_idle);
                if let Some(m) = min_resources {
                    short.max_with(&m.exceeded_part(&totals.future_idle));
                }
                shortfalls.push((d, Shortfall::Short(short)));
                continue;
            }
        }
        let score = ssn.score_hyper_node(j, request, d, totals);
        let here = placed.iter().filter(|&&n| topo.contains(d, n)).count();
        by_tier.entry(dom.tier).or_default().push((d, score, here));
    }
    let by_tier = by_tier
        .into_values()
        .map(|mut ds| {
            ds.sort_by(|a, b| {
                b.1.total_cmp(&a.1)
                    .then(b.2.cmp(&a.2))
                    .then_with(|| topo.domain(a.0).name.cmp(&topo.domain(b.0).name))
            });
            ds.into_iter().map(|(d, _, _)| d).collect()
        })
        .collect();
    Candidates {
        by_tier,
        shortfalls,
    }
}

/// Places `j` under constraint `c` (see the module documentation); returns the statement of
/// the chosen placements, which the caller commits, keeps or discards as for any job.
#[allow(clippy::too_many_arguments)]
pub(super) fn place(
    ssn: &mut Session,
    placer: &mut Placer,
    ledger: &DomainLedger,
    q: QueueId,
    j: JobId,
    c: Constraint,
    job_tasks: &mut PriorityQueue<TaskId>,
    failed_roles: &mut BTreeSet<String>,
) -> Statement {
    let (hard, tier) = match c {
        Constraint::Search { hard, tier } => (hard, tier),
        Constraint::Blocked(why) => return blocked(ssn, j, job_tasks, why),
    };
    let topo = Arc::clone(&ssn.snap.topology);
    let running = running_nodes(ssn, j);
    let allocated = topo.lowest_common(running.iter().copied());
    let root = match allocated {
        None => topo.root(),
        Some(a) => match topo.widest_within(a, tier) {
            Some(r) => r,
            None if hard => {
                let dom = topo.domain(a);
                let why = format!(
                    "the gang's running pods already span HyperNode {} of tier {}, above the highest tier allowed ({tier})",
                    dom.name, dom.tier
                );
                return blocked(ssn, j, job_tasks, why);
            }
            None => topo.root(),
        },
    };
    // A gang with pods running is not held to the free room of a domain: it adds to one.
    let need = allocated.is_none().then(|| need(ssn, j));
    // Volcano scores a domain by the whole gang's request, its running pods included.
    let mut request = ssn.snap.dims.zero();
    for &t in &ssn.snap.job(j).tasks {
        request.add(&ssn.snap.task(t).resreq);
    }
    let Candidates {
        by_tier,
        mut shortfalls,
    } = candidates(
        ssn,
        ledger,
        j,
        tier,
        root,
        need.as_ref(),
        &request,
        &running,
    );
    // A job already at its minimum still waits for its next pod.
    let still_needed = pods_needed(ssn, j).max(1);
    for candidates in by_tier {
        for d in candidates {
            placer.forget_failures(j);
            if !ssn.snap.job(j).fit_errors.is_empty() {
                ssn.snap.job_mut(j).fit_errors.clear();
            }
            let mut tasks = job_tasks.clone();
            let mut roles = failed_roles.clone();
            let stmt = placer.place(
                ssn,
                q,
                j,
                &mut tasks,
                &mut roles,
                Some(&topo.domain(d).nodes),
                Goal::Job,
            );
            if !stmt.is_empty() && (ssn.job_ready(j) || ssn.job_pipelined(j)) {
                *job_tasks = tasks;
                *failed_roles = roles;
                return stmt;
            }
            let held = stmt.placed().count();
            ssn.discard(stmt);
            shortfalls.push((d, Shortfall::Held(held)));
        }
    }
    placer.forget_failures(j);
    if !hard {
        return placer.place(ssn, q, j, job_tasks, failed_roles, None, Goal::Job);
    }
    let pods = format!("{still_needed} pod(s) of the gang");
    let head = must_go(&topo, tier, root, &pods, " (where its pods run)");
    let why = reason(ssn, &topo, head, shortfalls);
    blocked(ssn, j, job_tasks, why)
}

/// Records why `j` gets nothing and gives up its waiting tasks for this action (a job already
/// at its minimum would otherwise come back for them, and be refused again, forever).
pub(super) fn blocked(
    ssn: &mut Session,
    j: JobId,
    job_tasks: &mut PriorityQueue<TaskId>,
    why: String,
) -> Statement {
    ssn.snap.job_mut(j).job_fit_error = Some((NETWORK_TOPOLOGY.to_string(), why));
    *job_tasks = PriorityQueue::new();
    Statement::new()
}

/// The nodes of `j`'s tasks that hold their resources.
fn running_nodes(ssn: &Session, j: JobId) -> Vec<NodeId> {
    let s = &ssn.snap;
    s.job(j)
        .tasks
        .iter()
        .map(|&t| s.task(t))
        .filter(|t| t.status.is_allocated())
        .filter_map(|t| t.node)
        .collect()
}

/// Whether domain `d` lies inside `root`.
pub(super) fn within(topo: &Topology, root: DomainId, d: DomainId) -> bool {
    if root == topo.root() || root == d {
        return true;
    }
    let (r, dom) = (topo.domain(root), topo.domain(d));
    dom.tier < r.tier && dom.nodes.first().is_some_and(|&n| topo.contains(root, n))
}

/// Pods the gang still needs to reach its minimum.
fn pods_needed(ssn: &Session, j: JobId) -> usize {
    let job = ssn.snap.job(j);
    // Pending pods that ask for nothing count towards the gang, as `gang`'s readiness does.
    (i64::from(job.min_available)
        - i64::from(job.ready_task_num())
        - i64::from(job.pending_best_effort))
    .max(0) as usize
}

/// Whether the gang plugin decides readiness (the pods-needed bound holds only then: without
/// it, one placed pod makes a job ready).
fn gang_decides(ssn: &Session) -> bool {
    ssn.conf
        .tiers
        .iter()
        .flat_map(|t| &t.plugins)
        .any(|p| p.name == PluginKind::Gang && p.flags.job_ready)
}

/// What a domain must have free for the gang: the PodGroup's `minResources` (Volcano's check,
/// against idle or future idle), and a bound no placement can beat (the pods still needed,
/// each at least the smallest request of a waiting pod, against future idle).
pub(super) fn need(ssn: &Session, j: JobId) -> (Option<Resource>, Resource) {
    let s = &ssn.snap;
    let job = s.job(j);
    let mut smallest: Option<Resource> = None;
    for &t in &job.tasks {
        let task = s.task(t);
        if task.status != TaskStatus::Pending || task.best_effort || task.scheduling_gated {
            continue;
        }
        match &mut smallest {
            Some(m) => m.min_with(&task.resreq),
            None => smallest = Some(task.resreq.clone()),
        }
    }
    let k = if gang_decides(ssn) {
        pods_needed(ssn, j) as i64
    } else {
        1
    };
    let mut least = s.dims.zero();
    if let Some(m) = smallest {
        for (d, v) in m.iter() {
            least.set(d, v.saturating_mul(k));
        }
    }
    (job.min_resources.clone(), least)
}

/// Where a hard gang's pods must go: `pods` into one domain of tier at most `tier` inside
/// `root` (`root_is` saying what `root` is to them), for the head of a reason.
pub(super) fn must_go(
    topo: &Topology,
    tier: i64,
    root: DomainId,
    pods: &str,
    root_is: &str,
) -> String {
    let inside = if root == topo.root() {
        String::new()
    } else {
        format!(" inside HyperNode {}{root_is}", topo.domain(root).name)
    };
    format!(
        "networkTopology hard, highest tier {tier}: {pods} must all go into one HyperNode of tier <= {tier}{inside}"
    )
}

/// The message of a hard gang no domain could hold: `head`, then how short each domain was.
pub(super) fn reason(
    ssn: &Session,
    topo: &Topology,
    head: String,
    mut shortfalls: Vec<(DomainId, Shortfall)>,
) -> String {
    if shortfalls.is_empty() {
        return format!("{head}, and there is none");
    }
    shortfalls.sort_by_key(|(d, _)| (topo.domain(*d).tier, *d));
    let listed: Vec<String> = shortfalls
        .iter()
        .take(LISTED_DOMAINS)
        .map(|(d, s)| {
            let dom = topo.domain(*d);
            match s {
                Shortfall::Short(r) => format!(
                    "{} (tier {}) is short of {}",
                    dom.name,
                    dom.tier,
                    ssn.snap.dims.describe(r)
                ),
                Shortfall::Refused(why) => format!("{} (tier {}): {why}", dom.name, dom.tier),
                Shortfall::Held(n) => format!(
                    "{} (tier {}) cannot hold them ({n} pod(s) placed before one found no node)",
                    dom.name, dom.tier
                ),
            }
        })
        .collect();
    let more = shortfalls.len().saturating_sub(LISTED_DOMAINS);
    let tail = if more > 0 {
        format!("; and {more} more HyperNode(s)")
    } else {
        String::new()
    };
    format!("{head}; none has room: {}{tail}", listed.join("; "))
}
