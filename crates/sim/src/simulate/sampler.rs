//! Samples of the cluster every `--sample-every` of virtual time: utilisation, queue shares,
//! pending and running jobs. Between two events nothing changes, so one computed sample serves
//! every sampling instant until the next change.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{Node, Pod};
use volcano_api::keys;
use volcano_api::resources::{CPU, MEMORY, PODS, canonical_amount};
use volcano_api::scheduling::ResourceList;
use volcano_controllers::time::Instant;
use volcano_scheduler::model::Snapshot;
use volcano_scheduler::plugins::proportion_deserved;
use volcano_scheduler::resource::{PODS_DIM, Resource, UNBOUNDED};

use super::kubelet::{Kubelets, is_terminal, node_of, phase};
use super::plan::{Plan, Submission};
use super::records::Records;
use crate::metrics::{QueueShare, Sample};

/// What a sample needs to know of a pod, computed once per pod incarnation.
#[derive(Debug, Clone)]
struct PodInfo {
    record: Option<usize>,
    request: Vec<i64>,
}

/// The sampler and the timeline it has written.
#[derive(Debug, Clone)]
pub struct Sampler {
    every: Duration,
    next: Instant,
    resources: Vec<String>,
    queues: Vec<String>,
    /// Each record's queue, as an index into `queues`.
    record_queue: Vec<Option<usize>>,
    pods: HashMap<String, PodInfo>,
    deserved: Vec<f64>,
    totals: Option<(Vec<i64>, Vec<i64>)>,
    cached: Option<(Sample, Vec<u32>)>,
    /// The samples taken, in time order.
    pub timeline: Vec<Sample>,
}

impl Sampler {
    /// A sampler every `every` (zero counts as 60s) of the resources the plan's nodes have and
    /// of the queues it declares (`default` when a job uses it; never `root`).
    pub fn new(plan: &Plan, records: &Records, every: Duration) -> Self {
        let mut names: BTreeSet<String> = BTreeSet::new();
        let lists = plan
            .initial
            .nodes
            .iter()
            .flat_map(|n| allocatable(n).into_iter().flat_map(|l| l.keys()));
        names.extend(lists.cloned());
        for (_, _, change) in &plan.node_events {
            if let super::plan::NodeChange::Shrink(list) = change {
                names.extend(list.keys().cloned());
            }
        }
        names.remove(PODS);
        let mut resources: Vec<String> = [CPU, MEMORY]
            .into_iter()
            .filter(|r| names.remove(*r))
            .map(str::to_string)
            .collect();
        resources.extend(names);

        let mut queues: BTreeSet<String> = plan
            .initial
            .queues
            .iter()
            .map(|q| q.metadata.name.clone().unwrap_or_default())
            .chain(plan.submissions.iter().filter_map(|(_, s)| match s {
                Submission::Queue(q) => q.metadata.name.clone(),
                _ => None,
            }))
            .collect();
        queues.extend((0..records.count()).map(|i| records.queue(i).to_string()));
        queues.remove(keys::ROOT_QUEUE);
        let queues: Vec<String> = queues.into_iter().collect();
        let record_queue = (0..records.count())
            .map(|i| queues.iter().position(|q| q == records.queue(i)))
            .collect();
        Sampler {
            record_queue,
            every: if every.is_zero() {
                Duration::from_secs(60)
            } else {
                every
            },
            next: Instant::default(),
            deserved: vec![0.0; queues.len()],
            resources,
            queues,
            pods: HashMap::new(),
            totals: None,
            cached: None,
            timeline: Vec::new(),
        }
    }

    /// Resource names sampled.
    pub fn resources(&self) -> &[String] {
        &self.resources
    }

    /// Queue names sampled.
    pub fn queues(&self) -> &[String] {
        &self.queues
    }

    /// Something changed: the next sample is computed afresh.
    pub fn changed(&mut self) {
        self.cached = None;
    }

    /// A node changed: totals are summed afresh too.
    pub fn nodes_changed(&mut self) {
        self.totals = None;
        self.cached = None;
    }

    /// Reads each queue's deserved share from the snapshot a session opens on: `capacity`'s
    /// declared `deserved` when that plugin decides, else `proportion`'s water-filling.
    pub fn read_deserved(&mut self, snap: &Snapshot, capacity: bool) {
        let computed = if capacity {
            Vec::new()
        } else {
            proportion_deserved(snap)
        };
        let dominant = |r: &Resource| {
            (0..snap.dims.len())
                .filter(|&d| d != PODS_DIM && snap.total_resource.get(d) > 0)
                .filter(|&d| r.get(d) != UNBOUNDED)
                .map(|d| r.get(d) as f64 / snap.total_resource.get(d) as f64)
                .fold(0.0, f64::max)
        };
        let shares: Vec<f64> = self
            .queues
            .iter()
            .map(|q| {
                let Some(id) = snap.queue_index.get(q) else {
                    return 0.0;
                };
                if capacity {
                    dominant(&snap.queue(*id).deserved)
                } else {
                    computed
                        .get(id.idx())
                        .and_then(Option::as_ref)
                        .map_or(0.0, dominant)
                }
            })
            .collect();
        if shares != self.deserved {
            self.deserved = shares;
            self.cached = None;
        }
    }

    /// Takes the samples due before `until` (and at it, with `inclusive`), the cluster being
    /// as `objects` hold it for all of them.
    pub fn sample_until(
        &mut self,
        until: Instant,
        inclusive: bool,
        objects: &Objects,
        records: &Records,
        kubelets: &Kubelets,
    ) {
        while self.next < until || (inclusive && self.next == until) {
            let t = self.next;
            self.push(t, objects, records, kubelets);
            self.next = self.next.after(self.every);
        }
    }

    /// The last sample, at the end of the run (unless one was just taken then), and each
    /// job's running pods at the end.
    pub fn finish(
        &mut self,
        end: Instant,
        objects: &Objects,
        records: &Records,
        kubelets: &Kubelets,
    ) -> Vec<u32> {
        self.sample_until(end, true, objects, records, kubelets);
        if self
            .timeline
            .last()
            .is_none_or(|s| s.t_s < end.0.as_secs_f64())
        {
            self.push(end, objects, records, kubelets);
        }
        self.current(objects, records, kubelets).1.clone()
    }

    fn push(&mut self, t: Instant, objects: &Objects, records: &Records, kubelets: &Kubelets) {
        let (mut sample, pending) = {
            let (sample, running) = self.current(objects, records, kubelets);
            // Whether a job is submitted yet depends on the instant, not on the objects.
            let pending = records.open_at(t).filter(|&i| running[i] == 0).count();
            (sample.clone(), pending)
        };
        sample.t_s = t.0.as_secs_f64();
        sample.pending_jobs = u32::try_from(pending).unwrap_or(u32::MAX);
        self.timeline.push(sample);
    }

    fn current(
        &mut self,
        objects: &Objects,
        records: &Records,
        kubelets: &Kubelets,
    ) -> &(Sample, Vec<u32>) {
        if self.cached.is_none() {
            let computed = self.compute(objects, records, kubelets);
            self.cached = Some(computed);
        }
        self.cached.get_or_insert_with(Default::default)
    }

    fn compute(
        &mut self,
        objects: &Objects,
        records: &Records,
        kubelets: &Kubelets,
    ) -> (Sample, Vec<u32>) {
        let n = self.resources.len();
        if self.totals.is_none() {
            self.totals = Some(self.sum_nodes(objects, kubelets));
        }
        let (ready, all) = self.totals.clone().unwrap_or_default();
        // Records added during the run (a CronJob's Jobs) find their queue when first seen.
        while self.record_queue.len() < records.count() {
            let queue = records.queue(self.record_queue.len());
            let at = self.queues.iter().position(|q| q == queue);
            self.record_queue.push(at);
        }
        let mut used = vec![0i64; n];
        let mut by_queue = vec![vec![0i64; n]; self.queues.len()];
        let mut running = vec![0u32; records.count()];
        let mut running_pods = 0;
        for pod in &objects.pods {
            let Some(node) = node_of(pod) else { continue };
            if is_terminal(pod) {
                continue;
            }
            let info = pod_info(&mut self.pods, &self.resources, pod, records);
            if phase(pod) == "Running" {
                running_pods += 1;
                if let Some(r) = info.record {
                    running[r] += 1;
                }
            }
            if !kubelets.is_down(node) {
                add(&mut used, &info.request);
            }
            if let Some(q) = info.record.and_then(|r| self.record_queue[r]) {
                add(&mut by_queue[q], &info.request);
            }
        }
        let ratio = |num: i64, den: i64| {
            if den > 0 {
                num as f64 / den as f64
            } else {
                0.0
            }
        };
        let utilisation = self
            .resources
            .iter()
            .enumerate()
            .map(|(d, r)| (r.clone(), ratio(used[d], ready[d])))
            .collect();
        let queues: BTreeMap<String, QueueShare> = self
            .queues
            .iter()
            .enumerate()
            .map(|(q, name)| {
                let allocated = (0..n)
                    .map(|d| ratio(by_queue[q][d], all[d]))
                    .fold(0.0, f64::max);
                let share = QueueShare {
                    allocated,
                    deserved: self.deserved[q],
                };
                (name.clone(), share)
            })
            .collect();
        let sample = Sample {
            t_s: 0.0,
            pending_jobs: 0,
            running_jobs: running.iter().filter(|&&c| c > 0).count() as u32,
            running_pods,
            utilisation,
            queues,
        };
        (sample, running)
    }

    /// Allocatable summed over ready nodes, and over all nodes (what the scheduler's
    /// proportion counts as the cluster).
    fn sum_nodes(&self, objects: &Objects, kubelets: &Kubelets) -> (Vec<i64>, Vec<i64>) {
        let n = self.resources.len();
        let (mut ready, mut all) = (vec![0i64; n], vec![0i64; n]);
        for node in &objects.nodes {
            let amounts = self.amounts(allocatable(node));
            add(&mut all, &amounts);
            let name = node.metadata.name.as_deref().unwrap_or_default();
            if !kubelets.is_down(name) {
                add(&mut ready, &amounts);
            }
        }
        (ready, all)
    }

    fn amounts(&self, list: Option<&ResourceList>) -> Vec<i64> {
        self.resources
            .iter()
            .map(|r| {
                list.and_then(|l| l.get(r))
                    .and_then(|q| canonical_amount(r, &q.0).ok())
                    .unwrap_or(0)
            })
            .collect()
    }
}

/// What a sample needs of `pod`, from the cache (keyed by uid, or by name for pods written
/// without one, which are never recreated).
fn pod_info<'c>(
    cache: &'c mut HashMap<String, PodInfo>,
    resources: &[String],
    pod: &Pod,
    records: &Records,
) -> &'c PodInfo {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    // Looked up before building a key: most pods are known already, and samples are many.
    if !uid.is_empty() && cache.contains_key(uid) {
        return &cache[uid];
    }
    let key = if uid.is_empty() {
        format!(
            "/{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        )
    } else {
        uid.to_string()
    };
    cache.entry(key).or_insert_with(|| PodInfo {
        record: records.record_of(pod),
        request: pod_request(pod, resources),
    })
}

fn add(to: &mut [i64], v: &[i64]) {
    for (a, b) in to.iter_mut().zip(v) {
        *a = a.saturating_add(*b);
    }
}

/// A node's allocatable, falling back to its capacity, as the scheduler reads it.
fn allocatable(node: &Node) -> Option<&ResourceList> {
    let st = node.status.as_ref()?;
    st.allocatable.as_ref().or(st.capacity.as_ref())
}

/// A pod's request as the scheduler counts it, for the sampled resources: the sum of its
/// containers, at least each init container, plus overhead; a limit without a request
/// counts as the request.
pub fn pod_request(pod: &Pod, resources: &[String]) -> Vec<i64> {
    let Some(spec) = &pod.spec else {
        return vec![0; resources.len()];
    };
    let container = |c: &volcano_api::k8s_openapi::api::core::v1::Container| {
        let res = c.resources.as_ref();
        let requests = res.and_then(|r| r.requests.as_ref());
        let limits = res.and_then(|r| r.limits.as_ref());
        resources
            .iter()
            .map(|r| {
                let q = requests
                    .and_then(|l| l.get(r))
                    .or_else(|| limits.and_then(|l| l.get(r)));
                q.and_then(|q| canonical_amount(r, &q.0).ok()).unwrap_or(0)
            })
            .collect::<Vec<i64>>()
    };
    let mut total = vec![0i64; resources.len()];
    for c in &spec.containers {
        add(&mut total, &container(c));
    }
    for c in spec.init_containers.iter().flatten() {
        for (t, v) in total.iter_mut().zip(container(c)) {
            *t = (*t).max(v);
        }
    }
    if let Some(overhead) = &spec.overhead {
        let extra: Vec<i64> = resources
            .iter()
            .map(|r| {
                overhead
                    .get(r)
                    .and_then(|q| canonical_amount(r, &q.0).ok())
                    .unwrap_or(0)
            })
            .collect();
        add(&mut total, &extra);
    }
    total
}
