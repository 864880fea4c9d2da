//! The arrivals of a run: bare pods, gangs (a PodGroup, then its pods) or Volcano Jobs,
//! started at a steady rate by a timer. Each arrival's requests run in a task of their own,
//! so a slow answer never delays the next arrival; each records the instant its first create
//! request was sent, which is what latency is measured from.

use std::time::Instant;

use futures::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use volcano_api::batch::Job;
use volcano_api::keys;
use volcano_api::scheduling::PodGroup;

use super::objects::{self, Shapes};

/// What arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// One pod per arrival.
    Pods,
    /// A PodGroup of `minMember` n and its n pods per arrival.
    Gangs(u32),
    /// A Volcano Job of one task of n replicas per arrival; the controllers make the pods.
    Jobs(u32),
}

impl Workload {
    /// Pods each arrival brings.
    pub fn pods_per_arrival(self) -> usize {
        match self {
            Workload::Pods => 1,
            Workload::Gangs(n) | Workload::Jobs(n) => n as usize,
        }
    }

    /// The word for an arrival in the report.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Pods => "pods",
            Workload::Gangs(_) => "gangs",
            Workload::Jobs(_) => "jobs",
        }
    }
}

/// The objects every arrival is a copy of, decoded once so a bad shape fails before any
/// request is sent.
#[derive(Clone)]
struct Templates {
    pod: Pod,
    group: PodGroup,
    job: Job,
}

/// What a run asks to arrive.
pub struct Plan {
    /// The run's id (labels, names).
    pub run: String,
    /// What arrives.
    pub workload: Workload,
    /// Arrivals.
    pub count: usize,
    /// Arrivals per second.
    pub rate: f64,
    /// Node and pod shapes, and the scheduler's name.
    pub shapes: Shapes,
}

/// What the arrivals did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// When each arrival's first request was sent (its origin), by the name latency is
    /// measured against: a pod's, or a Job's.
    pub origins: Vec<(String, Instant)>,
    /// When each arrival started.
    pub arrived: Vec<Instant>,
    /// Pods the server accepted (for Jobs: the Jobs accepted times their size).
    pub pods_created: usize,
    /// Pods refused, or never sent because their PodGroup was refused.
    pub pods_failed: usize,
    /// PodGroups or Jobs accepted.
    pub groups_created: usize,
    /// PodGroups or Jobs refused.
    pub groups_failed: usize,
    /// The first distinct errors.
    pub errors: Vec<String>,
}

/// Distinct error messages kept for the report.
const ERRORS_KEPT: usize = 5;

impl Outcome {
    fn error(&mut self, e: String) {
        if self.errors.len() < ERRORS_KEPT && !self.errors.contains(&e) {
            self.errors.push(e);
        }
    }

    fn merge(&mut self, other: Outcome) {
        self.origins.extend(other.origins);
        self.arrived.extend(other.arrived);
        self.pods_created += other.pods_created;
        self.pods_failed += other.pods_failed;
        self.groups_created += other.groups_created;
        self.groups_failed += other.groups_failed;
        for e in other.errors {
            self.error(e);
        }
    }
}

/// The name of the `i`-th arrival of `run` (a pod, a PodGroup, a Job).
pub fn arrival_name(run: &str, i: usize) -> String {
    format!("load-{run}-{i}")
}

fn decode<T: serde::de::DeserializeOwned>(what: &str, v: serde_json::Value) -> anyhow::Result<T> {
    serde_json::from_value(v).map_err(|e| anyhow::anyhow!("the load {what} does not decode: {e}"))
}

/// Runs the arrivals of `plan` into `namespace` and waits for every request to be answered.
pub async fn run(client: Client, namespace: &str, plan: &Plan) -> anyhow::Result<Outcome> {
    let size = match plan.workload {
        Workload::Pods => 1,
        Workload::Gangs(n) | Workload::Jobs(n) => n,
    };
    let templates = Templates {
        pod: decode("pod", objects::pod("", &plan.run, None, &plan.shapes))?,
        group: decode("PodGroup", objects::pod_group("", &plan.run, size))?,
        job: decode("Job", objects::job("", &plan.run, size, &plan.shapes))?,
    };
    let apis = Apis {
        pods: Api::namespaced(client.clone(), namespace),
        groups: Api::namespaced(client.clone(), namespace),
        jobs: Api::namespaced(client, namespace),
    };
    let mut tick = tokio::time::interval(std::time::Duration::from_secs_f64(1.0 / plan.rate));
    // A late tick is made up at once: the rate asked for is kept on average.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut tasks = Vec::with_capacity(plan.count);
    for i in 0..plan.count {
        tick.tick().await;
        let name = arrival_name(&plan.run, i);
        let (apis, templates, workload) = (apis.clone(), templates.clone(), plan.workload);
        tasks.push(tokio::spawn(async move {
            arrive(&apis, &templates, workload, name).await
        }));
    }
    let mut outcome = Outcome::default();
    for done in join_all(tasks).await {
        match done {
            Ok(o) => outcome.merge(o),
            Err(e) => outcome.error(format!("an arrival's task failed: {e}")),
        }
    }
    Ok(outcome)
}

#[derive(Clone)]
struct Apis {
    pods: Api<Pod>,
    groups: Api<PodGroup>,
    jobs: Api<Job>,
}

/// Sends one arrival's requests.
async fn arrive(apis: &Apis, t: &Templates, workload: Workload, name: String) -> Outcome {
    let mut out = Outcome::default();
    let start = Instant::now();
    out.arrived.push(start);
    let post = PostParams::default();
    match workload {
        Workload::Pods => {
            let mut pod = t.pod.clone();
            pod.metadata.name = Some(name.clone());
            out.origins.push((name, start));
            match apis.pods.create(&post, &pod).await {
                Ok(_) => out.pods_created += 1,
                Err(e) => {
                    out.pods_failed += 1;
                    out.error(format!("create pod: {e}"));
                }
            }
        }
        Workload::Gangs(size) => {
            let mut group = t.group.clone();
            group.metadata.name = Some(name.clone());
            if let Err(e) = apis.groups.create(&post, &group).await {
                out.groups_failed += 1;
                out.pods_failed += size as usize;
                out.error(format!("create PodGroup: {e}"));
                return out;
            }
            out.groups_created += 1;
            let post = &post;
            let creates = (0..size).map(|j| {
                let mut pod = t.pod.clone();
                pod.metadata.name = Some(format!("{name}-{j}"));
                pod.annotations_mut()
                    .insert(keys::GROUP_NAME.to_string(), name.clone());
                async move { (apis.pods.create(post, &pod).await, pod.name_any()) }
            });
            for (result, pod) in join_all(creates).await {
                // Every member is measured from its gang's arrival.
                out.origins.push((pod, start));
                match result {
                    Ok(_) => out.pods_created += 1,
                    Err(e) => {
                        out.pods_failed += 1;
                        out.error(format!("create pod: {e}"));
                    }
                }
            }
        }
        Workload::Jobs(size) => {
            let mut job = t.job.clone();
            job.metadata.name = Some(name.clone());
            out.origins.push((name, start));
            match apis.jobs.create(&post, &job).await {
                Ok(_) => {
                    out.groups_created += 1;
                    out.pods_created += size as usize;
                }
                Err(e) => {
                    out.groups_failed += 1;
                    out.pods_failed += size as usize;
                    out.error(format!("create Job: {e}"));
                }
            }
        }
    }
    out
}
