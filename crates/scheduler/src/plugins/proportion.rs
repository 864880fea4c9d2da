//! `proportion`: queues share the cluster by weight, within their capability and above their
//! guarantee, by Volcano's water-filling; a queue over its deserved share takes nothing more.
//!
//! The water-filling runs in floating point as Volcano's does; deserved amounts are then rounded
//! to integers with Volcano's 0.1 tolerance folded in (`floor(x + 0.1)`), so every later
//! integer comparison answers exactly as Volcano's tolerant float comparison would.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::queue_accounting::{QueueSums, queue_sums, queues_with_jobs};
use crate::framework::QueueShare;
use crate::framework::{Plugin, Verdict};
use crate::model::{JobId, QueueId, QueueState, Snapshot, TaskId};
use crate::resource::{PODS_DIM, Resource, UNBOUNDED, share};

const EPS: f64 = 0.1;

struct Attr {
    real_capability: Resource,
    deserved: Resource,
    allocated: Resource,
    inqueue: Resource,
    elastic: Resource,
    /// Kept for metrics only.
    request: Resource,
    share: f64,
}

/// The proportion plugin.
pub struct Proportion {
    attrs: Vec<Option<Attr>>,
}

fn to_f(r: &Resource, n: usize) -> Vec<f64> {
    (0..n)
        .map(|d| {
            if r.get(d) == UNBOUNDED {
                f64::INFINITY
            } else {
                r.get(d) as f64
            }
        })
        .collect()
}

fn less_equal(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x <= y || (x - y).abs() < EPS)
}

fn is_empty(v: &[f64]) -> bool {
    v.iter().enumerate().all(|(d, x)| d == PODS_DIM || *x < EPS)
}

impl Proportion {
    /// Computes every queue's deserved share at session open.
    pub fn new(s: &Snapshot) -> Self {
        let n = s.dims.len();
        let sums = queue_sums(s);
        let mut total_guarantee = s.dims.zero();
        for q in &s.queues {
            total_guarantee.add(&q.guarantee);
        }
        let unguaranteed = s.total_resource.exceeded_part(&total_guarantee);
        let ids: Vec<QueueId> = queues_with_jobs(&sums).collect();

        let mut real_cap: Vec<Vec<f64>> = Vec::new();
        let mut request: Vec<Vec<f64>> = Vec::new();
        let mut guarantee: Vec<Vec<f64>> = Vec::new();
        let mut deserved: Vec<Vec<f64>> = vec![vec![0.0; n]; ids.len()];
        for &q in &ids {
            let info = s.queue(q);
            let mut rc = unguaranteed.clone();
            rc.add(&info.guarantee);
            rc.min_with(&info.capability);
            real_cap.push(to_f(&rc, n));
            let sum = sums[q.idx()].as_ref();
            request.push(
                sum.map(|x| to_f(&x.request, n))
                    .unwrap_or_else(|| vec![0.0; n]),
            );
            guarantee.push(to_f(&info.guarantee, n));
        }

        let mut remaining = to_f(&s.total_resource, n);
        let mut meet = vec![false; ids.len()];
        loop {
            let total_weight: f64 = ids
                .iter()
                .zip(&meet)
                .filter(|(_, m)| !**m)
                .map(|(q, _)| f64::from(s.queue(*q).weight.max(1)))
                .sum();
            if total_weight == 0.0 {
                break;
            }
            let old_remaining = remaining.clone();
            let mut increased = vec![0.0; n];
            let mut decreased = vec![0.0; n];
            for (i, &q) in ids.iter().enumerate() {
                if meet[i] {
                    continue;
                }
                let old = deserved[i].clone();
                let w = f64::from(s.queue(q).weight.max(1)) / total_weight;
                for d in 0..n {
                    let mut v = old[d] + remaining[d] * w;
                    v = v.min(real_cap[i][d]);
                    v = v.min(request[i][d]);
                    v = v.max(guarantee[i][d]);
                    deserved[i][d] = v;
                }
                let unchanged = deserved[i]
                    .iter()
                    .zip(&old)
                    .all(|(a, b)| (a - b).abs() < EPS);
                if less_equal(&request[i], &deserved[i]) || unchanged {
                    meet[i] = true;
                }
                for d in 0..n {
                    let diff = deserved[i][d] - old[d];
                    if diff > 0.0 {
                        increased[d] += diff;
                    } else {
                        decreased[d] -= diff;
                    }
                }
            }
            for d in 0..n {
                // Clamped at zero: guarantees larger than the cluster must not panic (Volcano #4261).
                remaining[d] = (remaining[d] + decreased[d] - increased[d]).max(0.0);
            }
            if is_empty(&remaining) || remaining == old_remaining {
                break;
            }
        }

        let mut attrs: Vec<Option<Attr>> = (0..s.queues.len()).map(|_| None).collect();
        for (i, &q) in ids.iter().enumerate() {
            let Some(QueueSums {
                allocated,
                inqueue,
                elastic,
                request,
            }) = sums[q.idx()].clone()
            else {
                continue;
            };
            let mut des = s.dims.zero();
            for (d, v) in deserved[i].iter().enumerate() {
                des.set(d, (v + EPS).floor() as i64);
            }
            let mut rc = unguaranteed.clone();
            rc.add(&s.queue(q).guarantee);
            rc.min_with(&s.queue(q).capability);
            let mut attr = Attr {
                real_capability: rc,
                deserved: des,
                allocated,
                inqueue,
                elastic,
                request,
                share: 0.0,
            };
            attr.share = Self::share_of(&attr);
            attrs[q.idx()] = Some(attr);
        }
        Proportion { attrs }
    }

    /// Every queue's deserved resources as computed at session open; `None` for queues
    /// without jobs, which take no part in the sharing.
    pub fn deserved(&self) -> Vec<Option<Resource>> {
        self.attrs
            .iter()
            .map(|a| a.as_ref().map(|a| a.deserved.clone()))
            .collect()
    }

    fn share_of(a: &Attr) -> f64 {
        a.deserved
            .nonzero_dims()
            .map(|d| share(a.allocated.get(d), a.deserved.get(d)))
            .fold(0.0, f64::max)
    }

    fn attr(&self, q: QueueId) -> Option<&Attr> {
        self.attrs.get(q.idx()).and_then(Option::as_ref)
    }

    fn update(&mut self, s: &Snapshot, t: TaskId, add: bool) {
        let Some(j) = s.task(t).job else { return };
        let q = s.job(j).queue;
        if let Some(Some(a)) = self.attrs.get_mut(q.idx()) {
            if add {
                a.allocated.add(&s.task(t).resreq);
            } else {
                a.allocated.sub_saturating(&s.task(t).resreq);
            }
            a.share = Self::share_of(a);
        }
    }
}

impl Plugin for Proportion {
    fn name(&self) -> &'static str {
        "proportion"
    }

    fn queue_order(&self, s: &Snapshot, l: QueueId, r: QueueId) -> Option<Ordering> {
        let (pl, pr) = (s.queue(l).priority, s.queue(r).priority);
        if pl != pr {
            return Some(pr.cmp(&pl));
        }
        let sl = self.attr(l).map_or(0.0, |a| a.share);
        let sr = self.attr(r).map_or(0.0, |a| a.share);
        Some(sl.partial_cmp(&sr).unwrap_or(Ordering::Equal))
    }

    fn queue_share(&self, _s: &Snapshot, q: QueueId) -> Option<QueueShare> {
        let a = self.attr(q)?;
        Some(QueueShare {
            deserved: a.deserved.clone(),
            real_capability: a.real_capability.clone(),
            request: a.request.clone(),
            inqueue: a.inqueue.clone(),
            share: a.share,
        })
    }

    fn overused(&self, _s: &Snapshot, q: QueueId) -> Option<bool> {
        let a = self.attr(q)?;
        Some(a.deserved.fits_in(&a.allocated))
    }

    fn allocatable(&self, s: &Snapshot, q: QueueId, t: TaskId) -> Option<Result<(), String>> {
        let queue = s.queue(q);
        if queue.state != QueueState::Open {
            return Some(Err(format!(
                "queue {} is {}",
                queue.name,
                queue.state.as_str()
            )));
        }
        let a = self.attr(q)?;
        let req = &s.task(t).resreq;
        let mut future = a.allocated.clone();
        future.add(req);
        if future.fits_in_on_requested(&a.deserved, req) {
            return Some(Ok(()));
        }
        let over: Vec<String> = (0..s.dims.len())
            .filter(|&d| d != PODS_DIM && req.get(d) > 0 && future.get(d) > a.deserved.get(d))
            .map(|d| {
                format!(
                    "{} allocated {} + task {} > deserved {}",
                    s.dims.name(d),
                    s.dims.format(d, a.allocated.get(d)),
                    s.dims.format(d, req.get(d)),
                    s.dims.format(d, a.deserved.get(d))
                )
            })
            .collect();
        Some(Err(format!(
            "queue {} would exceed its deserved share: {}",
            queue.name,
            over.join(", ")
        )))
    }

    fn keeps_queue_shares(&self) -> bool {
        true
    }

    fn preemptive(&self, s: &Snapshot, q: QueueId, t: TaskId) -> Option<bool> {
        Some(self.allocatable(s, q, t)?.is_ok())
    }

    fn reclaimable(
        &self,
        s: &Snapshot,
        _reclaimer: TaskId,
        candidates: &[TaskId],
    ) -> Option<Vec<TaskId>> {
        // A running copy of each victim queue's allocation: victims are taken while the queue
        // is still over its deserved share on some dimension.
        let mut allocations: HashMap<QueueId, Resource> = HashMap::new();
        let mut victims = Vec::new();
        for &v in candidates {
            let Some(j) = s.task(v).job else { continue };
            let q = s.job(j).queue;
            let Some(a) = self.attr(q) else { continue };
            let allocated = allocations.entry(q).or_insert_with(|| a.allocated.clone());
            if !allocated.fits_in(&a.deserved) {
                allocated.sub_saturating(&s.task(v).resreq);
                victims.push(v);
            }
        }
        Some(victims)
    }

    fn job_enqueueable(&self, s: &Snapshot, j: JobId) -> Option<Verdict> {
        let job = s.job(j);
        let queue = s.queue(job.queue);
        if queue.state != QueueState::Open {
            return Some(Verdict::reject(format!(
                "queue {} is {}",
                queue.name,
                queue.state.as_str()
            )));
        }
        let Some(min) = &job.min_resources else {
            return Some(Verdict::permit());
        };
        let a = self.attr(job.queue)?;
        let mut need = min.clone();
        need.add(&a.allocated);
        need.add(&a.inqueue);
        need.sub_saturating(&a.elastic);
        if need.fits_in_on_requested(&a.real_capability, min) {
            return Some(Verdict::permit());
        }
        Some(Verdict::reject(format!(
            "queue {} resource quota insufficient: minResources {} + allocated {} + admitted {} exceeds what the queue may use ({})",
            queue.name,
            s.dims.describe(min),
            s.dims.describe(&a.allocated),
            s.dims.describe(&a.inqueue),
            s.dims.describe(&a.real_capability)
        )))
    }

    fn job_enqueued(&mut self, s: &Snapshot, j: JobId) {
        let job = s.job(j);
        if let (Some(min), Some(Some(a))) =
            (&job.min_resources, self.attrs.get_mut(job.queue.idx()))
        {
            a.inqueue.add(min);
        }
    }

    fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        self.update(s, t, true);
    }

    fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        self.update(s, t, false);
    }
}
