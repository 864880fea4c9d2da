//! Finding the nodes a task fits on, and choosing the best of them (Volcano's
//! `PredicateNodes`, `PrioritizeNodes` and `SelectBestNode`), deterministically.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::fit::FitErrors;
use crate::framework::Session;
use crate::model::{JobId, NodeId, NodeSet, TaskId};
use crate::resource::PODS_DIM;

/// Volcano's `--minimum-feasible-nodes`.
const MIN_FEASIBLE_NODES: usize = 100;
/// Volcano's `--minimum-percentage-nodes-to-find`.
const MIN_PERCENTAGE_NODES: usize = 5;

/// How many feasible nodes to look for before stopping (all of them in clusters up to 100
/// nodes; `percentage` of larger ones, or an adaptive share as Volcano does).
pub fn num_feasible_nodes_to_find(n: usize, percentage: Option<u8>) -> usize {
    if n <= MIN_FEASIBLE_NODES || percentage.is_some_and(|p| p >= 100) {
        return n;
    }
    let pct = match percentage {
        Some(p) if p > 0 => usize::from(p),
        _ => 50usize.saturating_sub(n / 125).max(MIN_PERCENTAGE_NODES),
    };
    (n * pct / 100).max(MIN_FEASIBLE_NODES)
}

/// Per-action memory of nodes that failed a task role's predicates, so later tasks of the same
/// role skip them (Volcano's predicate error cache).
#[derive(Default)]
pub struct PredicateCache {
    enabled: bool,
    failed: HashMap<(JobId, String), HashMap<NodeId, Cow<'static, str>>>,
}

impl PredicateCache {
    /// A cache that is on or off (`predicateErrorCacheEnable`).
    pub fn new(enabled: bool) -> Self {
        PredicateCache {
            enabled,
            failed: HashMap::new(),
        }
    }
}

impl PredicateCache {
    /// Drops what job `j`'s roles failed on.
    pub fn forget_job(&mut self, j: JobId) {
        if self.enabled {
            self.failed.retain(|(job, _), _| *job != j);
        }
    }
}

/// What to check besides the plugins' predicates.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ResourceCheck {
    /// The request must fit the node's future idle (allocate).
    FutureIdle,
    /// Only a free pod slot, counting pods still being evicted (backfill of BestEffort tasks,
    /// which are bound at once: a slot freed by an eviction in this session is not free yet).
    PodSlot,
}

/// Walks the nodes from a rotating start and returns the feasible ones.
pub struct NodeFinder {
    next: usize,
    /// The last search's answer, kept to reuse its allocation.
    found: Vec<NodeId>,
    /// The nodes the plugins left open for the last task, kept to reuse its allocation.
    open: NodeSet,
}

impl NodeFinder {
    /// A finder starting at the first node.
    pub fn new() -> Self {
        NodeFinder {
            next: 0,
            found: Vec::new(),
            open: NodeSet::default(),
        }
    }

    /// The nodes `t` may go to. When none is, `fe` holds every node's reason; when some are,
    /// it may lack the reasons of nodes the plugins closed as a whole (nobody reads it then).
    ///
    /// The answer is the first feasible nodes from the rotating start, whether or not the
    /// plugins narrowed the scan: narrowing only skips nodes that would fail.
    pub fn feasible(
        &mut self,
        ssn: &Session,
        t: TaskId,
        check: ResourceCheck,
        cache: &mut PredicateCache,
        fe: &mut FitErrors,
    ) -> &[NodeId] {
        self.feasible_in(ssn, t, check, cache, fe, None)
    }

    /// [`NodeFinder::feasible`] among `domain`'s nodes only (a network domain a gang must stay
    /// in), or among all nodes when `None`.
    pub fn feasible_in(
        &mut self,
        ssn: &Session,
        t: TaskId,
        check: ResourceCheck,
        cache: &mut PredicateCache,
        fe: &mut FitErrors,
        domain: Option<&[NodeId]>,
    ) -> &[NodeId] {
        let n = domain.map_or(ssn.snap.nodes.len(), <[NodeId]>::len);
        let narrowed = ssn.narrow_nodes(t, &mut self.open);
        let scan = Scan {
            ssn,
            t,
            check,
            start: self.next,
            domain,
        };
        let mut processed = scan.run(narrowed.then_some(&self.open), cache, fe, &mut self.found);
        if narrowed && self.found.is_empty() {
            // The task fits nowhere: walk every node for the reasons it failed each.
            *fe = FitErrors::new(fe.total_nodes);
            processed = scan.run(None, cache, fe, &mut self.found);
        }
        if n > 0 {
            self.next = (self.next + processed) % n;
        }
        &self.found
    }
}

/// One walk over the nodes for one task.
struct Scan<'a> {
    ssn: &'a Session,
    t: TaskId,
    check: ResourceCheck,
    start: usize,
    /// The nodes to walk (all of them when `None`).
    domain: Option<&'a [NodeId]>,
}

impl Scan<'_> {
    /// Collects feasible nodes into `found` until it has enough, skipping those not `open`;
    /// returns how many nodes it walked past.
    fn run(
        &self,
        open: Option<&NodeSet>,
        cache: &mut PredicateCache,
        fe: &mut FitErrors,
        found: &mut Vec<NodeId>,
    ) -> usize {
        let (ssn, t, check) = (self.ssn, self.t, self.check);
        let s = &ssn.snap;
        let n = self.domain.map_or(s.nodes.len(), <[NodeId]>::len);
        let want = num_feasible_nodes_to_find(n, ssn.percentage_nodes_to_find);
        let task = s.task(t);
        let req = s.node_request(&task.resreq);
        // Looked up once: hashing the role name for every node would cost more than most
        // checks.
        let mut failed = match (&task.job, &task.role) {
            (Some(j), Some(r)) if cache.enabled => {
                Some(cache.failed.entry((*j, r.clone())).or_default())
            }
            _ => None,
        };
        found.clear();
        let mut processed = 0;
        while processed < n && found.len() < want {
            let at = (self.start + processed) % n;
            let nid = self.domain.map_or(NodeId(at as u32), |d| d[at]);
            processed += 1;
            if open.is_some_and(|o| !o.contains(nid)) {
                debug_assert!(
                    ssn.predicate(t, nid).is_err(),
                    "a plugin closed node {nid:?} for task {t:?}, whose predicates pass there"
                );
                continue;
            }
            if let Some(reason) = failed.as_ref().and_then(|m| m.get(&nid)) {
                fe.add(reason);
                continue;
            }
            let reason = if s.node_out_of_sync(nid) {
                Some(Cow::Borrowed(
                    "node(s) out of sync: their pods need more than they have",
                ))
            } else if check == ResourceCheck::FutureIdle && !s.fits_future_idle(&req, nid) {
                let node = s.node(nid);
                // Volcano names only the first short resource per node.
                let short = task
                    .resreq
                    .insufficient(&node.future_idle)
                    .next()
                    .unwrap_or(0);
                fe.add_insufficient(
                    &s.dims,
                    &task.resreq,
                    &node.future_idle,
                    std::iter::once(short),
                );
                if let Some(m) = failed.as_mut() {
                    let r = format!("Insufficient {}", s.dims.name(short));
                    m.insert(nid, r.into());
                }
                continue;
            } else if check == ResourceCheck::PodSlot
                && s.node(nid).idle.get(PODS_DIM) < task.resreq.get(PODS_DIM)
            {
                Some(Cow::Borrowed("node(s) pod number exceeded"))
            } else {
                match ssn.predicate(t, nid) {
                    Ok(()) => None,
                    // A reason that depends on where other pods are may not hold for the
                    // role's next task, so it is not cached.
                    Err(e) if e.depends_on_pods => {
                        fe.add(&e.reason);
                        continue;
                    }
                    Err(e) => Some(e.reason),
                }
            };
            match reason {
                None => found.push(nid),
                Some(r) => {
                    fe.add(&r);
                    if let Some(m) = failed.as_mut() {
                        m.insert(nid, r);
                    }
                }
            }
        }
        processed
    }
}

/// Buffers [`select_best_node`] reuses from task to task.
#[derive(Default)]
pub struct Scratch {
    idle: Vec<NodeId>,
    scores: Vec<f64>,
}

/// The best of `candidates` for `t`: nodes where it fits idle now before nodes where it fits
/// only once releasing resources are freed; then the highest score; ties go to the first node
/// by name, so the same input always gives the same answer.
pub fn select_best_node(
    ssn: &Session,
    t: TaskId,
    candidates: &[NodeId],
    scratch: &mut Scratch,
) -> Option<NodeId> {
    let s = &ssn.snap;
    let req = s.node_request(&s.task(t).resreq);
    let Scratch { idle, scores } = scratch;
    idle.clear();
    idle.extend(candidates.iter().copied().filter(|&n| s.fits_idle(&req, n)));
    let gradient: &[NodeId] = if idle.is_empty() { candidates } else { idle };
    if gradient.len() <= 1 || !ssn.has_node_order() {
        return gradient
            .iter()
            .copied()
            .min_by(|a, b| s.node_name_cmp(*a, *b));
    }
    ssn.score_nodes(t, gradient, scores);
    let mut best: Option<(f64, NodeId)> = None;
    for (i, &n) in gradient.iter().enumerate() {
        let score = scores.get(i).copied().unwrap_or(0.0);
        best = match best {
            Some((bs, bn)) if bs > score || (bs == score && s.node_name_cmp(bn, n).is_le()) => {
                Some((bs, bn))
            }
            _ => Some((score, n)),
        };
    }
    best.map(|(_, n)| n)
}
