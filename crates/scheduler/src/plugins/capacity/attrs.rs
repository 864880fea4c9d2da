//! Queue attributes of the capacity plugin: what each queue deserves, may use at most, holds
//! and has admitted, built either flat (every queue on its own) or as a tree under `root`, with
//! the problems found in the tree.
//!
//! Everything here works on integer vectors whose unset dimensions are [`UNBOUNDED`]; nothing
//! subtracts below zero except allocated amounts kept in step with event handlers, and shares
//! are clamped at zero, so bad input (cycles, missing parents, guarantees larger than the
//! cluster) yields problems and conservative limits, never a panic or a negative share.

use volcano_api::keys;

use super::super::queue_accounting::queue_sums;
use crate::model::{QueueId, Snapshot};
use crate::resource::{PODS_DIM, Resource, UNBOUNDED, share};

/// One queue as the capacity plugin sees it during a session.
#[derive(Debug, Clone)]
pub struct QueueAttr {
    /// What the queue should get when the cluster is contended (`spec.deserved`, at least the
    /// guarantee; flat mode also caps it at `real_capability`; `root` gets Σ of its children).
    pub deserved: Resource,
    /// `spec.guarantee` (`root` in hierarchy mode: Σ of its children's guarantees).
    pub guarantee: Resource,
    /// `spec.capability`; in hierarchy mode unset dimensions are inherited from the parent.
    pub capability: Resource,
    /// The most the queue may hold: its capability within what the cluster (flat) or the
    /// parent (hierarchy) has left after the other queues' guarantees.
    pub real_capability: Resource,
    /// Σ request of its tasks in an allocated status (with descendants in hierarchy mode).
    pub allocated: Resource,
    /// `allocated` + Σ request of pending tasks.
    pub request: Resource,
    /// Reserved by admitted jobs and not yet used.
    pub inqueue: Resource,
    /// Σ of what jobs hold beyond their `minResources`.
    pub elastic: Resource,
    /// max over deserved dimensions of allocated/deserved; 1 for a queue without deserved.
    pub share: f64,
    /// Hierarchy mode: the queue's ancestors, `root` first, parent last.
    pub ancestors: Vec<QueueId>,
    /// Hierarchy mode: the queue's children, in snapshot order.
    pub children: Vec<QueueId>,
}

impl QueueAttr {
    fn from_spec(s: &Snapshot, q: QueueId) -> Self {
        let info = s.queue(q);
        QueueAttr {
            deserved: info.deserved.clone(),
            guarantee: info.guarantee.clone(),
            capability: info.capability.clone(),
            real_capability: s.dims.zero(),
            allocated: s.dims.zero(),
            request: s.dims.zero(),
            inqueue: s.dims.zero(),
            elastic: s.dims.zero(),
            share: 0.0,
            ancestors: Vec::new(),
            children: Vec::new(),
        }
    }

    /// Recomputes the share. A queue without deserved is best effort: share 1 whatever it
    /// holds, so it comes after every queue still below its deserved share, and at equal shares
    /// after queues that deserve something (Volcano's rule against reclaim going back and forth).
    pub fn update_share(&mut self) {
        if self.deserved.is_empty() {
            self.share = 1.0;
            return;
        }
        self.share = self
            .deserved
            .iter()
            .filter(|&(d, v)| d != PODS_DIM && v > 0)
            .map(|(d, v)| share(self.allocated.get(d), v))
            .fold(0.0, f64::max)
            .max(0.0);
    }
}

/// Something wrong with the queue tree, found when the plugin was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HierarchyProblem {
    /// The queue the problem is about.
    pub queue: String,
    /// What is wrong, with the numbers, starting with `queue <name>:`.
    pub message: String,
    /// Whether the plugin refuses all scheduling because of it, as Volcano does when it cannot
    /// build the tree (its `readyToSchedule = false`); otherwise a warning Volcano only logs.
    pub blocks_scheduling: bool,
}

/// Attributes of every queue (indexed by queue id) and the tree's problems.
pub struct Built {
    /// One entry per snapshot queue.
    pub attrs: Vec<QueueAttr>,
    /// Problems of the tree (always empty in flat mode).
    pub problems: Vec<HierarchyProblem>,
}

/// Flat mode: every queue is limited by its capability and by what the cluster has left once
/// every other queue's guarantee is set aside.
pub fn build_flat(s: &Snapshot) -> Built {
    let sums = queue_sums(s);
    let mut total_guarantee = s.dims.zero();
    for q in &s.queues {
        total_guarantee.add(&q.guarantee);
    }
    // Clamped at zero: guarantees above the cluster total leave each queue its own guarantee.
    let unguaranteed = s.total_resource.exceeded_part(&total_guarantee);
    let attrs = s
        .queue_ids()
        .map(|q| {
            let mut a = QueueAttr::from_spec(s, q);
            if let Some(sum) = &sums[q.idx()] {
                a.allocated = sum.allocated.clone();
                a.request = sum.request.clone();
                a.inqueue = sum.inqueue.clone();
                a.elastic = sum.elastic.clone();
            }
            let mut real = unguaranteed.clone();
            real.add(&a.guarantee);
            real.min_with(&a.capability);
            a.deserved.min_with(&real);
            a.deserved.max_with(&a.guarantee);
            a.real_capability = real;
            a.update_share();
            a
        })
        .collect();
    Built {
        attrs,
        problems: Vec::new(),
    }
}

fn problem(s: &Snapshot, q: QueueId, blocks: bool, message: String) -> HierarchyProblem {
    HierarchyProblem {
        queue: s.queue(q).name.clone(),
        message,
        blocks_scheduling: blocks,
    }
}

/// Each queue's parent: `Ok(None)` for root, `Err(name)` for a parent that does not exist.
fn parents(s: &Snapshot, root: QueueId) -> Vec<Result<Option<QueueId>, String>> {
    s.queue_ids()
        .map(|q| {
            if q == root {
                return Ok(None);
            }
            let name = match s.queue(q).parent.as_str() {
                "" => keys::ROOT_QUEUE,
                p => p,
            };
            s.queue_index
                .get(name)
                .map(|&p| Some(p))
                .ok_or_else(|| name.to_string())
        })
        .collect()
}

/// Hierarchy mode: the tree under `root`, limits passed down from parents, usage summed up to
/// ancestors, and Volcano's checks of children against their parent.
pub fn build_hierarchy(s: &Snapshot) -> Built {
    let mut attrs: Vec<QueueAttr> = s.queue_ids().map(|q| QueueAttr::from_spec(s, q)).collect();
    let mut problems = Vec::new();
    let Some(&root) = s.queue_index.get(keys::ROOT_QUEUE) else {
        problems.push(HierarchyProblem {
            queue: keys::ROOT_QUEUE.to_string(),
            message: "queue root does not exist".to_string(),
            blocks_scheduling: true,
        });
        return Built { attrs, problems };
    };

    let parent_of = parents(s, root);
    for q in s.queue_ids() {
        if let Err(missing) = &parent_of[q.idx()] {
            let msg = format!(
                "queue {}: parent queue {missing} does not exist",
                s.queue(q).name
            );
            problems.push(problem(s, q, true, msg));
        }
    }
    resolve_ancestors(s, root, &parent_of, &mut attrs, &mut problems);
    for q in s.queue_ids() {
        if let (Some(&p), true) = (attrs[q.idx()].ancestors.last(), q != root) {
            attrs[p.idx()].children.push(q);
        }
    }

    // Jobs only run in leaf queues; Volcano stops scheduling altogether otherwise.
    let sums = queue_sums(s);
    for q in s.queue_ids() {
        let children = &attrs[q.idx()].children;
        if sums[q.idx()].is_some() && !children.is_empty() {
            let names: Vec<&str> = children.iter().map(|&c| s.queue(c).name.as_str()).collect();
            let msg = format!(
                "queue {} has jobs but is not a leaf queue (child queues: {}); jobs must be submitted to leaf queues",
                s.queue(q).name,
                names.join(", ")
            );
            problems.push(problem(s, q, true, msg));
        }
    }

    // What a queue holds counts for all its ancestors too.
    for q in s.queue_ids() {
        let Some(sum) = &sums[q.idx()] else { continue };
        let a = &mut attrs[q.idx()];
        a.allocated = sum.allocated.clone();
        a.request = sum.request.clone();
        a.inqueue = sum.inqueue.clone();
        a.elastic = sum.elastic.clone();
        for anc in a.ancestors.clone() {
            let p = &mut attrs[anc.idx()];
            p.allocated.add(&sum.allocated);
            p.request.add(&sum.request);
            p.inqueue.add(&sum.inqueue);
            p.elastic.add(&sum.elastic);
        }
    }

    init_root(s, &mut attrs[root.idx()]);
    // Parents before children, so each child's limit derives from its parent's final one.
    let mut order = vec![root];
    let mut i = 0;
    while let Some(&p) = order.get(i) {
        check_children(s, &mut attrs, p, root, &mut problems);
        order.extend(attrs[p.idx()].children.iter().copied());
        i += 1;
    }
    for a in &mut attrs {
        a.update_share();
    }
    Built { attrs, problems }
}

/// Fills every queue's `ancestors` (root first) when its parents lead to root. Each queue is
/// walked once: a walk stops at root, at a queue already resolved, at a missing parent, or at a
/// queue already on the walk (a cycle, reported once, when its first queue is met).
fn resolve_ancestors(
    s: &Snapshot,
    root: QueueId,
    parent_of: &[Result<Option<QueueId>, String>],
    attrs: &mut [QueueAttr],
    problems: &mut Vec<HierarchyProblem>,
) {
    // `None`: not walked yet; `Some(reaches_root)` once walked.
    let mut resolved: Vec<Option<bool>> = vec![None; attrs.len()];
    let mut on_walk: Vec<Option<usize>> = vec![None; attrs.len()];
    resolved[root.idx()] = Some(true);
    for q in s.queue_ids() {
        let mut walk: Vec<QueueId> = Vec::new();
        let mut cur = q;
        let reaches_root = loop {
            if let Some(r) = resolved[cur.idx()] {
                break r;
            }
            if let Some(pos) = on_walk[cur.idx()] {
                let mut names: Vec<&str> = walk[pos..]
                    .iter()
                    .map(|&c| s.queue(c).name.as_str())
                    .collect();
                names.push(&s.queue(cur).name);
                let msg = format!(
                    "queue {}: its parents form a cycle ({}) that never reaches root",
                    s.queue(cur).name,
                    names.join(" -> ")
                );
                problems.push(problem(s, cur, true, msg));
                break false;
            }
            on_walk[cur.idx()] = Some(walk.len());
            walk.push(cur);
            match parent_of[cur.idx()] {
                Ok(Some(p)) => cur = p,
                _ => break false,
            }
        };
        // Top down, so that each queue's parent is settled before the queue itself.
        for &w in walk.iter().rev() {
            on_walk[w.idx()] = None;
            resolved[w.idx()] = Some(reaches_root);
            if let (true, Ok(Some(p))) = (reaches_root, &parent_of[w.idx()]) {
                let mut ancestors = attrs[p.idx()].ancestors.clone();
                ancestors.push(*p);
                attrs[w.idx()].ancestors = ancestors;
            }
        }
    }
}

/// Root is not limited by the cluster's current size (users may submit more than the cluster
/// has and limit themselves through their own queues): its unset dimensions are unbounded,
/// except that its limit on extended resources no node offers is zero, as in Volcano, whose
/// infinite root only covers the cluster's resource names. Only the limit changes, so children
/// still inherit "unset" rather than a zero capability from root.
fn init_root(s: &Snapshot, root: &mut QueueAttr) {
    root.real_capability = root.capability.clone();
    for d in (PODS_DIM + 1)..s.dims.len() {
        if root.capability.get(d) == UNBOUNDED && s.total_resource.get(d) <= 0 {
            root.real_capability.set(d, 0);
        }
    }
}

fn offending(s: &Snapshot, over: &Resource, limit: &Resource) -> Vec<usize> {
    (0..s.dims.len())
        .filter(|&d| d != PODS_DIM && over.get(d) > limit.get(d))
        .collect()
}

fn describe_on(s: &Snapshot, r: &Resource, dims: &[usize]) -> String {
    dims.iter()
        .map(|&d| format!("{} {}", s.dims.name(d), s.dims.format(d, r.get(d))))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Volcano's `checkHierarchicalQueue` for one parent: children's deserved is at least their
/// guarantee, unset capability dimensions come from the parent, each child's limit is the
/// parent's limit less its siblings' guarantees; children that ask for more than the parent has
/// are reported (as warnings: Volcano only logs them).
fn check_children(
    s: &Snapshot,
    attrs: &mut [QueueAttr],
    p: QueueId,
    root: QueueId,
    problems: &mut Vec<HierarchyProblem>,
) {
    let children = attrs[p.idx()].children.clone();
    if children.is_empty() {
        return;
    }
    let parent_cap = attrs[p.idx()].capability.clone();
    let pname = &s.queue(p).name;
    let mut total_guarantee = s.dims.zero();
    let mut total_deserved = s.dims.zero();
    for &c in &children {
        let a = &mut attrs[c.idx()];
        let g = a.guarantee.clone();
        a.deserved.max_with(&g);
        total_deserved.add(&a.deserved);
        total_guarantee.add(&g);
        for d in 0..s.dims.len() {
            if a.capability.get(d) == UNBOUNDED {
                a.capability.set(d, parent_cap.get(d));
            }
        }
        let over = offending(s, &a.capability, &parent_cap);
        if !over.is_empty() {
            let msg = format!(
                "queue {}: capability {} exceeds parent {pname}'s capability {}; the parent's limit applies",
                s.queue(c).name,
                describe_on(s, &a.capability, &over),
                describe_on(s, &parent_cap, &over)
            );
            problems.push(problem(s, c, false, msg));
        }
    }
    if p == root {
        attrs[p.idx()].guarantee = total_guarantee.clone();
        attrs[p.idx()].deserved = total_deserved.clone();
    }
    let left = attrs[p.idx()]
        .real_capability
        .exceeded_part(&total_guarantee);
    for &c in &children {
        let a = &mut attrs[c.idx()];
        let mut real = left.clone();
        real.add(&a.guarantee);
        real.min_with(&a.capability);
        a.real_capability = real;
    }
    let sums: [(&str, &Resource, Pick); 2] = [
        ("guarantee", &total_guarantee, guarantee_of),
        ("deserved", &total_deserved, deserved_of),
    ];
    for (what, total, pick) in sums {
        let own = pick(&attrs[p.idx()]);
        let over = offending(s, total, own);
        if over.is_empty() {
            continue;
        }
        // Name the child that is too big on its own when there is one, else the sum.
        let alone = children.iter().find_map(|&c| {
            let d = offending(s, pick(&attrs[c.idx()]), own);
            (!d.is_empty()).then_some((c, d))
        });
        let (queue, msg) = match alone {
            Some((c, d)) => (
                c,
                format!(
                    "queue {}: {what} {} exceeds parent {pname}'s {what} {}",
                    s.queue(c).name,
                    describe_on(s, pick(&attrs[c.idx()]), &d),
                    describe_on(s, own, &d)
                ),
            ),
            None => {
                let names: Vec<&str> = children.iter().map(|&c| s.queue(c).name.as_str()).collect();
                (
                    p,
                    format!(
                        "queue {pname}: its child queues' {what} adds up to {} ({}), more than its own {what} {}",
                        describe_on(s, total, &over),
                        names.join(", "),
                        describe_on(s, own, &over)
                    ),
                )
            }
        };
        problems.push(problem(s, queue, false, msg));
    }
}

type Pick = fn(&QueueAttr) -> &Resource;

fn guarantee_of(a: &QueueAttr) -> &Resource {
    &a.guarantee
}

fn deserved_of(a: &QueueAttr) -> &Resource {
    &a.deserved
}

/// Depth of the deepest ancestor two queues share (0 = they only share root), Volcano's
/// `getQueueLevel`.
pub fn common_level(l: &[QueueId], r: &[QueueId]) -> usize {
    l.iter()
        .zip(r)
        .take_while(|(a, b)| a == b)
        .count()
        .saturating_sub(1)
}

/// The ancestor `depth` levels above a queue (1 = parent).
pub fn ancestor_at_depth(a: &QueueAttr, depth: usize) -> Option<QueueId> {
    if depth == 0 {
        return None;
    }
    a.ancestors
        .len()
        .checked_sub(depth)
        .and_then(|i| a.ancestors.get(i).copied())
}

/// Whether `a` and `b` have a common nonzero dimension (the pod count aside).
pub fn shares_dimension(a: &Resource, b: &Resource) -> bool {
    (0..a.len().max(b.len())).any(|d| d != PODS_DIM && a.get(d) > 0 && b.get(d) > 0)
}

/// Whether `allocated` exceeds `deserved` on a dimension the `req` uses and the deserved names
/// (Volcano's `GreaterPartlyWithRelevantDimensions`).
pub fn exceeds_on_relevant(allocated: &Resource, deserved: &Resource, req: &Resource) -> bool {
    (0..req.len())
        .filter(|&d| d != PODS_DIM && req.get(d) > 0 && deserved.get(d) > 0)
        .any(|d| allocated.get(d) > deserved.get(d))
}

/// Whether `future` stays within `deserved` on at least one dimension `req` uses, ignoring
/// dimensions both leave at zero (Volcano's `LessEqualPartlyWithDimensionZeroFiltered`).
pub fn within_on_some(future: &Resource, deserved: &Resource, req: &Resource) -> bool {
    (0..req.len())
        .filter(|&d| d != PODS_DIM && req.get(d) > 0)
        .filter(|&d| future.get(d) > 0 || deserved.get(d) > 0)
        .any(|d| future.get(d) <= deserved.get(d))
}

/// Whether `a ≤ b` on every dimension but the pod count.
pub fn all_within(a: &Resource, b: &Resource) -> bool {
    (0..a.len().max(b.len())).all(|d| d == PODS_DIM || a.get(d) <= b.get(d))
}
