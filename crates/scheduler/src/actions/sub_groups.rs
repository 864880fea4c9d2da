//! Placing a gang split into sub-groups (Volcano's `allocateForJob` over sub-jobs): the job's
//! own domain is chosen as for any gang with a hard network topology (the whole cluster
//! otherwise), and inside it each sub-group in turn is placed as a gang of its own, in one
//! domain of its own tier when it has a hard network topology. Sub-groups that the policies'
//! `minSubGroups` still need go first. The job's domain is the first, in the search order,
//! where the job becomes ready; a sub-group's is the first, in the same order, where it does.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::placer::{Goal, Placer};
use super::topology::{self, Candidates, Constraint, Shortfall};
use crate::framework::{PriorityQueue, Session, Statement};
use crate::model::{
    DomainId, DomainLedger, JobId, NodeId, QueueId, SubGroup, SubGroups, TaskId, TaskInfo,
    TaskStatus,
};

/// How many sub-group failures a job's reason names.
const LISTED_FAILURES: usize = 3;

/// Whether job `j` is placed by its sub-groups.
pub(super) fn applies(ssn: &Session, j: JobId) -> bool {
    ssn.snap.job(j).sub_groups.is_some()
}

/// Whether some sub-group of job `j` has a network topology of its own: `preempt` and
/// `reclaim` evict for no such job, since they place pods one by one and could not keep each
/// sub-group to its domain (Volcano's preempt skips them too), so nothing is evicted in vain.
pub(super) fn evicts_for_none(ssn: &Session, j: JobId) -> bool {
    ssn.snap.job(j).sub_groups.as_ref().is_some_and(|g| {
        g.groups
            .iter()
            .any(|g| g.policy.is_some() && g.network_topology.is_some())
    })
}

/// Places `j` sub-group by sub-group (see the module documentation), under the job's own
/// constraint `job_c`; returns the statement the caller commits, keeps or discards.
pub(super) fn place(
    ssn: &mut Session,
    placer: &mut Placer,
    ledger: &mut Option<DomainLedger>,
    q: QueueId,
    j: JobId,
    job_c: Option<Constraint>,
    job_tasks: &mut PriorityQueue<TaskId>,
) -> Statement {
    let Some(groups) = ssn.snap.job(j).sub_groups.clone() else {
        *job_tasks = PriorityQueue::new();
        return Statement::new();
    };
    let topo = Arc::clone(&ssn.snap.topology);
    let top = topo.domain(topo.root()).tier;
    // A soft job is searched as a hard one up to the whole cluster, lowest tier first (Volcano's
    // convertSoftToHardTopology); its reason then lists the sub-groups, not the domains.
    let (job_tier, soft) = match job_c {
        Some(Constraint::Blocked(why)) => return topology::blocked(ssn, j, job_tasks, why),
        Some(Constraint::Search { hard: true, tier }) => (Some(tier), false),
        Some(Constraint::Search { hard: false, .. }) => (Some(top), true),
        None => (None, false),
    };
    let needs_ledger =
        job_tier.is_some() || groups.groups.iter().any(|g| g.network_topology.is_some());
    if needs_ledger && ledger.is_none() {
        *ledger = Some(DomainLedger::new(&ssn.snap));
    }
    let pending = split(ssn, &groups, job_tasks);
    let (job_domains, mut shortfalls, root) = match job_tier {
        None => (vec![vec![topo.root()]], Vec::new(), topo.root()),
        Some(tier) => {
            let placed = placed_nodes(ssn, &ssn.snap.job(j).tasks);
            let root = match topo.lowest_common(placed.iter().copied()) {
                None => topo.root(),
                Some(a) => match topo.widest_within(a, tier) {
                    Some(r) => r,
                    None => {
                        let dom = topo.domain(a);
                        let why = format!(
                            "the gang's running pods already span HyperNode {} of tier {}, above the highest tier allowed ({tier})",
                            dom.name, dom.tier
                        );
                        return topology::blocked(ssn, j, job_tasks, why);
                    }
                },
            };
            let request = request_of(ssn, &ssn.snap.job(j).tasks);
            let Some(l) = ledger.as_ref() else {
                *job_tasks = PriorityQueue::new();
                return Statement::new();
            };
            // A gang with pods placed adds to a domain: only a new one is held to free room.
            let need = placed.is_empty().then(|| topology::need(ssn, j));
            let c = topology::candidates(ssn, l, j, tier, root, need.as_ref(), &request, &placed);
            (c.by_tier, c.shortfalls, root)
        }
    };
    let mut failures: Vec<(DomainId, Vec<GroupFailure>)> = Vec::new();
    for h in job_domains.into_iter().flatten() {
        let mut queues = pending.clone();
        let mut attempt = Attempt {
            ssn: &mut *ssn,
            placer: &mut *placer,
            ledger: ledger.as_ref(),
            q,
            j,
            h,
        };
        match attempt.run(&groups, &mut queues) {
            Ok(stmt) => {
                *job_tasks = merge(ssn, queues);
                return stmt;
            }
            Err(why) => failures.push((h, why)),
        }
    }
    let why = match job_tier.filter(|_| !soft) {
        Some(tier) => {
            for (d, why) in failures {
                let first = why.into_iter().next().map(|f| f.short);
                let what = first.unwrap_or_else(|| "the sub-groups do not make a gang".to_string());
                shortfalls.push((d, Shortfall::Refused(what)));
            }
            let topo = Arc::clone(&ssn.snap.topology);
            let head = topology::must_go(
                &topo,
                tier,
                root,
                "the gang's sub-groups",
                " (where its pods run)",
            );
            topology::reason(ssn, &topo, head, shortfalls)
        }
        None => {
            let mut why: Vec<String> = failures
                .into_iter()
                .flat_map(|(_, w)| w)
                .map(|f| f.long)
                .collect();
            if why.is_empty() {
                // Every domain was ruled out by its free room before any dry run.
                let topo = Arc::clone(&ssn.snap.topology);
                let head = "the gang's sub-groups fit in no HyperNode, nor in the whole cluster";
                why.push(topology::reason(ssn, &topo, head.to_string(), shortfalls));
            }
            if !needs_ledger {
                // No domain was searched: the tasks' own fit errors say why.
                *job_tasks = PriorityQueue::new();
                return Statement::new();
            }
            let more = why.len().saturating_sub(LISTED_FAILURES);
            let mut s = why
                .into_iter()
                .take(LISTED_FAILURES)
                .collect::<Vec<_>>()
                .join("; ");
            if more > 0 {
                s.push_str(&format!("; and {more} more sub-group(s)"));
            }
            s
        }
    };
    topology::blocked(ssn, j, job_tasks, why)
}

/// Why a sub-group could not be placed: in a few words (within a job's domain's line of a
/// reason) and in full.
struct GroupFailure {
    short: String,
    long: String,
}

impl GroupFailure {
    fn same(why: String) -> Self {
        GroupFailure {
            short: why.clone(),
            long: why,
        }
    }
}

/// One try at placing the job's sub-groups inside domain `h`.
struct Attempt<'s, 'p, 'l> {
    ssn: &'s mut Session,
    placer: &'p mut Placer,
    ledger: Option<&'l DomainLedger>,
    q: QueueId,
    j: JobId,
    h: DomainId,
}

impl Attempt<'_, '_, '_> {
    /// Places sub-groups until the job is ready: first each not yet ready (those required
    /// by `minSubGroups` first), then one more pod at a time from those with pods left.
    /// Returns the placements when the job is ready or pipelined, else why each sub-group
    /// that could not be placed failed (the placements undone).
    fn run(
        &mut self,
        groups: &SubGroups,
        queues: &mut [PriorityQueue<TaskId>],
    ) -> Result<Statement, Vec<GroupFailure>> {
        let j = self.j;
        let mut stmt = Statement::new();
        let mut failures = Vec::new();
        let mut refused: BTreeSet<usize> = BTreeSet::new();
        let order = first_order(&self.ssn.snap.tasks, groups);
        loop {
            let mut progress = false;
            for &g in &order {
                if queues[g].is_empty() || refused.contains(&g) {
                    continue;
                }
                let was_ready = groups.groups[g].is_ready(&self.ssn.snap.tasks);
                match self.place_group(&groups.groups[g], &mut queues[g]) {
                    Ok(s) => {
                        progress |= !s.is_empty();
                        stmt.merge(s);
                    }
                    Err(why) => {
                        // Out for the rest of the action, as Volcano drops a sub-job that
                        // found no place from the job's worksheet; a ready one just stops
                        // growing, which is no failure of the job.
                        refused.insert(g);
                        queues[g] = PriorityQueue::new();
                        if !was_ready {
                            failures.push(why);
                        }
                    }
                }
                if !stmt.is_empty() && self.ssn.job_ready(j) {
                    return Ok(stmt);
                }
            }
            if !progress {
                break;
            }
            // Later rounds go over every sub-group with pods left, in the same order.
        }
        let ssn = &mut *self.ssn;
        // An empty statement is no progress, even for a job already ready: the caller would
        // come back for the same pods.
        if !stmt.is_empty() && (ssn.job_ready(j) || ssn.job_pipelined(j)) {
            return Ok(stmt);
        }
        ssn.discard(stmt);
        if failures.is_empty() {
            let short = groups
                .short_policy(&ssn.snap.tasks, |st, be| {
                    crate::model::occupied(st, be) || st == TaskStatus::Pipelined
                })
                .map(|(p, have, min)| {
                    let why = format!(
                        "subGroupPolicy {p:?} has {have} sub-group(s) placed, minSubGroups {min}"
                    );
                    GroupFailure {
                        short: why.clone(),
                        long: why,
                    }
                });
            failures.extend(short);
        }
        if failures.is_empty() {
            failures.push(GroupFailure::same(format!(
                "no sub-group could place another pod{}",
                self.inside()
            )));
        }
        Err(failures)
    }

    /// Places sub-group `g` inside the attempt's domain: in one domain of its own tier when it
    /// has a hard network topology (lowest tier first, preferring a low tier when soft).
    fn place_group(
        &mut self,
        g: &SubGroup,
        tasks: &mut PriorityQueue<TaskId>,
    ) -> Result<Statement, GroupFailure> {
        let ssn = &mut *self.ssn;
        let topo = Arc::clone(&ssn.snap.topology);
        let c = g
            .network_topology
            .as_deref()
            .and_then(|nt| topology::limit(ssn, nt));
        let (hard, tier) = match c {
            None => {
                return self
                    .dry_run(g, tasks, self.h)
                    .map_err(|held| self.short(g, held));
            }
            Some(Constraint::Blocked(why)) => {
                return Err(GroupFailure::same(format!("sub-group {}: {why}", g.name)));
            }
            Some(Constraint::Search { hard: true, tier }) => (true, tier),
            // Soft: any domain inside the job's, lowest tier first (Volcano bounds a soft
            // sub-group by the job's tier).
            Some(Constraint::Search { hard: false, .. }) => (false, topo.domain(self.h).tier),
        };
        let placed = placed_nodes(ssn, &g.tasks);
        let root = match topo.lowest_common(placed.iter().copied()) {
            None => self.h,
            Some(a) => match topo.widest_within(a, tier) {
                // The search root is where the sub-group's tier and the job's domain overlap.
                Some(r) if topology::within(&topo, self.h, r) => r,
                Some(r) if topology::within(&topo, r, self.h) => self.h,
                _ if hard => {
                    return Err(GroupFailure::same(format!(
                        "sub-group {}: its running pods are not inside one HyperNode of tier <= {tier}{}",
                        g.name,
                        self.inside()
                    )));
                }
                _ => self.h,
            },
        };
        let need = placed
            .is_empty()
            .then(|| (None, least(ssn, g)))
            .filter(|(_, l)| !l.is_empty());
        let request = request_of(ssn, &g.tasks);
        let Some(ledger) = self.ledger else {
            return Err(GroupFailure::same(format!(
                "sub-group {}: no domain totals",
                g.name
            )));
        };
        let Candidates {
            by_tier,
            mut shortfalls,
        } = topology::candidates(
            ssn,
            ledger,
            self.j,
            tier,
            root,
            need.as_ref(),
            &request,
            &placed,
        );
        for d in by_tier.into_iter().flatten() {
            match self.dry_run(g, tasks, d) {
                Ok(stmt) => return Ok(stmt),
                Err(held) => shortfalls.push((d, Shortfall::Held(held))),
            }
        }
        if !hard {
            return self
                .dry_run(g, tasks, self.h)
                .map_err(|held| self.short(g, held));
        }
        let ssn = &*self.ssn;
        let root_is = if root == self.h {
            ""
        } else {
            " (where its pods run)"
        };
        let pods = format!("{} pod(s)", g.min_available);
        let head = format!(
            "sub-group {}: {}",
            g.name,
            topology::must_go(&topo, tier, root, &pods, root_is)
        );
        Err(GroupFailure {
            short: format!(
                "sub-group {} finds no HyperNode of tier <= {tier} with room for its {pods}",
                g.name
            ),
            long: topology::reason(ssn, &topo, head, shortfalls),
        })
    }
}

impl Attempt<'_, '_, '_> {
    /// A dry run of sub-group `g` on domain `d`'s nodes: its placements when it placed some
    /// and is ready or pipelined after them, else how many it placed before they were undone.
    fn dry_run(
        &mut self,
        g: &SubGroup,
        tasks: &mut PriorityQueue<TaskId>,
        d: DomainId,
    ) -> Result<Statement, usize> {
        let ssn = &mut *self.ssn;
        self.placer.forget_failures(self.j);
        let topo = Arc::clone(&ssn.snap.topology);
        let domain = (d != topo.root()).then(|| topo.domain(d).nodes.as_slice());
        let mut left = tasks.clone();
        // Roles failed in one sub-group or domain say nothing of another.
        let mut roles = BTreeSet::new();
        let stmt = self.placer.place(
            ssn,
            self.q,
            self.j,
            &mut left,
            &mut roles,
            domain,
            Goal::SubGroup(g),
        );
        // Nothing placed is no answer, even for a sub-group already ready: the next domain is
        // tried, as Volcano skips an empty statement.
        let kept =
            !stmt.is_empty() && (g.is_ready(&ssn.snap.tasks) || g.is_pipelined(&ssn.snap.tasks));
        if kept {
            *tasks = left;
            return Ok(stmt);
        }
        let held = stmt.placed().count();
        ssn.discard(stmt);
        Err(held)
    }

    /// Why sub-group `g` found too few nodes, with `held` pods placed before it stopped.
    fn short(&self, g: &SubGroup, held: usize) -> GroupFailure {
        GroupFailure::same(format!(
            "sub-group {}: {held} of the {} pod(s) it needs found a node{}",
            g.name,
            g.min_available,
            self.inside()
        ))
    }

    /// ` inside HyperNode <name>` when the attempt is confined to one.
    fn inside(&self) -> String {
        let topo = &self.ssn.snap.topology;
        if self.h == topo.root() {
            String::new()
        } else {
            format!(" inside HyperNode {}", topo.domain(self.h).name)
        }
    }
}

/// The order sub-groups are first tried in: first the ones each policy still needs to reach
/// its `minSubGroups` (Volcano's required sub-jobs), then the others not ready yet, then the
/// ready ones (which may take more pods, as an elastic job's do).
fn first_order(s: &[Arc<TaskInfo>], groups: &SubGroups) -> Vec<usize> {
    let mut count: HashMap<usize, i32> = HashMap::new();
    for g in groups.groups.iter().filter(|g| g.is_ready(s)) {
        if let Some(p) = g.policy {
            *count.entry(p).or_default() += 1;
        }
    }
    let mut required = Vec::new();
    let mut rest = Vec::new();
    let mut ready = Vec::new();
    for (i, g) in groups.groups.iter().enumerate() {
        if g.is_ready(s) {
            ready.push(i);
            continue;
        }
        let needed = g.policy.is_some_and(|p| {
            let have = count.entry(p).or_default();
            let needed = *have < groups.policies[p].1;
            if needed {
                *have += 1;
            }
            needed
        });
        if needed {
            required.push(i);
        } else {
            rest.push(i);
        }
    }
    required.extend(rest);
    required.extend(ready);
    required
}

/// The job's waiting tasks, one queue per sub-group.
fn split(
    ssn: &Session,
    groups: &SubGroups,
    job_tasks: &PriorityQueue<TaskId>,
) -> Vec<PriorityQueue<TaskId>> {
    let of: HashMap<TaskId, usize> = groups
        .groups
        .iter()
        .enumerate()
        .flat_map(|(i, g)| g.tasks.iter().map(move |&t| (t, i)))
        .collect();
    let mut queues = vec![PriorityQueue::new(); groups.groups.len()];
    let mut all = job_tasks.clone();
    let mut less = |a: TaskId, b: TaskId| ssn.task_order_less(a, b);
    while let Some(t) = all.pop(&mut less) {
        if let Some(&g) = of.get(&t) {
            queues[g].push(t, &mut less);
        }
    }
    queues
}

/// The sub-groups' tasks left, as one queue again.
fn merge(ssn: &Session, queues: Vec<PriorityQueue<TaskId>>) -> PriorityQueue<TaskId> {
    let mut less = |a: TaskId, b: TaskId| ssn.task_order_less(a, b);
    let mut all = PriorityQueue::new();
    for mut q in queues {
        while let Some(t) = q.pop(&mut less) {
            all.push(t, &mut less);
        }
    }
    all
}

/// The nodes `tasks` hold (placed or pipelined).
fn placed_nodes(ssn: &Session, tasks: &[TaskId]) -> Vec<NodeId> {
    tasks
        .iter()
        .map(|&t| ssn.snap.task(t))
        .filter(|t| t.status.is_allocated() || t.status == TaskStatus::Pipelined)
        .filter_map(|t| t.node)
        .collect()
}

/// Σ request of `tasks`, by which Volcano scores a domain for them.
fn request_of(ssn: &Session, tasks: &[TaskId]) -> crate::resource::Resource {
    let mut r = ssn.snap.dims.zero();
    for &t in tasks {
        r.add(&ssn.snap.task(t).resreq);
    }
    r
}

/// What a domain must have free for sub-group `g` with no pod placed: its pods still needed,
/// each at least the smallest request of its waiting pods.
fn least(ssn: &Session, g: &SubGroup) -> crate::resource::Resource {
    let s = &ssn.snap;
    let mut smallest: Option<crate::resource::Resource> = None;
    let mut ready = 0i64;
    for &t in &g.tasks {
        let task = s.task(t);
        if crate::model::occupied(task.status, task.best_effort) {
            ready += 1;
        }
        if task.status != TaskStatus::Pending || task.best_effort || task.scheduling_gated {
            continue;
        }
        match &mut smallest {
            Some(m) => m.min_with(&task.resreq),
            None => smallest = Some(task.resreq.clone()),
        }
    }
    let k = (i64::from(g.min_available) - ready).max(0);
    let mut least = s.dims.zero();
    if let Some(m) = smallest {
        for (d, v) in m.iter() {
            least.set(d, v.saturating_mul(k));
        }
    }
    least
}
