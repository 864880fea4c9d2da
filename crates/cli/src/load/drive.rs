//! One run, in order: the namespace and nodes, the API server's counters, the watch, the
//! process samplers, the arrivals, the wait for the last bindings, the counters again, and
//! the clean-up. Figures are computed by `stats` from the instants gathered here.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;
use volcano_api::batch::Job;
use volcano_api::keys;
use volcano_api::scheduling::PodGroup;

use super::apimetrics::{self, Scrape};
use super::arrivals::{self, Outcome, Plan, Workload};
use super::bindings::{Bindings, Seen};
use super::nodes::{self, NodesReport};
use super::objects::RUN_LABEL;
use super::procstat::{Sampler, Usage};
use super::report::{ApiReport, ArrivalsReport, PodsReport, Report};
use super::{LoadArgs, stats};
use crate::Failure;

fn internal(e: anyhow::Error) -> Failure {
    Failure::Internal(e)
}

/// The longest the API server's figures wait for the writes after the last binding.
const SETTLE_CAP: Duration = Duration::from_secs(10);

/// Runs the load and measures it.
pub async fn drive(args: &LoadArgs, plan: &Plan) -> Result<Report, Failure> {
    let client =
        crate::runtime::client_for(args.kubeconfig.as_deref(), None, "volcano-load").await?;
    let ns = args.namespace.as_str();
    ensure_namespace(&client, ns).await.map_err(internal)?;
    let nodes = if args.nodes > 0 {
        nodes::ensure(&client, args.nodes, &plan.shapes)
            .await
            .map_err(internal)?
    } else {
        NodesReport::default()
    };

    let before = apimetrics::scrape(&client).await;
    let origin_label = matches!(plan.workload, Workload::Jobs(_)).then_some(keys::JOB_NAME);
    let mut bindings = Bindings::start(client.clone(), ns, &plan.run, origin_label)
        .await
        .map_err(internal)?;
    let mut samplers = Vec::new();
    for (flag, name, pid) in [
        ("--scheduler-pid", "scheduler", args.scheduler_pid),
        (
            "--controller-pid",
            "controller-manager",
            args.controller_pid,
        ),
        ("--apiserver-pid", "apiserver", args.apiserver_pid),
    ] {
        if let Some(pid) = pid {
            let sampler = Sampler::start(name, pid)
                .map_err(|e| Failure::Input(format!("{flag} {pid}: {e}")))?;
            samplers.push(sampler);
        }
    }

    let started = Instant::now();
    let outcome = arrivals::run(client.clone(), ns, plan)
        .await
        .map_err(internal)?;
    let last_arrival = outcome.arrived.iter().max().copied().unwrap_or(started);
    let deadline = tokio::time::Instant::from_std(last_arrival + Duration::from_secs(args.timeout));
    let bound = bindings.wait_for(outcome.pods_created, deadline).await;
    let timed_out = bound < outcome.pods_created;
    let seen = bindings.finish();
    let mut processes = Vec::new();
    for sampler in samplers {
        processes.extend(sampler.finish().await);
    }
    let (after, settle) = apimetrics::settled(&client, SETTLE_CAP).await;

    let mut report = figures(args, plan, started, &outcome, &seen, processes, nodes);
    report.pods.timed_out = timed_out;
    report.api = api_report(before, after, report.pods.bound, settle);

    if !args.keep
        && let Err(e) = clean_up(&client, ns, &plan.run).await
    {
        eprintln!("warning: {e:#}");
    }
    if args.delete_nodes
        && let Err(e) = nodes::delete_all(&client).await
    {
        eprintln!("warning: {e:#}");
    }
    Ok(report)
}

/// The report's figures from what the arrivals and the watch recorded.
fn figures(
    args: &LoadArgs,
    plan: &Plan,
    started: Instant,
    outcome: &Outcome,
    seen: &Seen,
    processes: Vec<Usage>,
    nodes: NodesReport,
) -> Report {
    let origins: HashMap<&str, Instant> = outcome
        .origins
        .iter()
        .map(|(k, t)| (k.as_str(), *t))
        .collect();
    let offset = |t: Instant| t.saturating_duration_since(started);
    let mut latencies = Vec::new();
    let mut binds = Vec::new();
    for b in seen.bound.values() {
        if let Some(origin) = origins.get(b.origin.as_str()) {
            latencies.push(b.at.saturating_duration_since(*origin));
            binds.push(offset(b.at));
        }
    }
    let arrived: Vec<Duration> = outcome.arrived.iter().map(|t| offset(*t)).collect();
    let span = arrived.iter().max().copied().unwrap_or_default();
    let size = plan.workload.pods_per_arrival();
    Report {
        run: plan.run.clone(),
        namespace: args.namespace.clone(),
        scheduler_name: plan.shapes.scheduler_name.clone(),
        workload: plan.workload.name().to_string(),
        gang_size: u32::try_from(size).unwrap_or(u32::MAX),
        nodes,
        arrivals: ArrivalsReport {
            requested: plan.count,
            target_rate: plan.rate,
            achieved_rate: stats::rate(&arrived),
            seconds: stats::round3(span.as_secs_f64()),
            groups_created: outcome.groups_created,
            groups_failed: outcome.groups_failed,
        },
        pods: PodsReport {
            created: outcome.pods_created,
            failed: outcome.pods_failed,
            seen: seen.pods,
            bound: latencies.len(),
            unbound: outcome.pods_created.saturating_sub(latencies.len()),
            timed_out: false,
        },
        latency: stats::latency(&latencies),
        throughput_per_s: stats::rate(&binds),
        drain_seconds: stats::drain(&arrived, &binds),
        api: ApiReport::default(),
        processes,
        errors: outcome.errors.clone(),
    }
}

/// The API server's figures, or why there are none.
fn api_report(
    before: anyhow::Result<Scrape>,
    after: anyhow::Result<Scrape>,
    bound: usize,
    settle: Duration,
) -> ApiReport {
    let (before, after) = match (before, after) {
        (Ok(b), Ok(a)) => (b, a),
        (Err(e), _) | (_, Err(e)) => {
            return ApiReport {
                error: Some(format!("cannot read the API server's /metrics: {e:#}")),
                ..ApiReport::default()
            };
        }
    };
    let delta = before.delta(&after);
    // Counts of pods stay far below 2^52, where the conversion is exact.
    let per_pod = delta
        .cpu_seconds
        .filter(|_| bound > 0)
        .map(|s| stats::round3(s * 1000.0 / bound as f64));
    ApiReport {
        available: true,
        error: None,
        requests_total: delta.total,
        requests: delta.requests,
        cpu_seconds: delta.cpu_seconds.map(stats::round3),
        cpu_ms_per_bound_pod: per_pod,
        settle_seconds: Some(stats::round3(settle.as_secs_f64())),
    }
}

/// Creates the namespace and its `default` ServiceAccount when missing: the API server's
/// admission refuses pods of a namespace without it, and a cluster without the
/// ServiceAccount controller never makes one.
async fn ensure_namespace(client: &Client, ns: &str) -> anyhow::Result<()> {
    let post = PostParams::default();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(ns).await?.is_none() {
        let object: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
        match namespaces.create(&post, &object).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(anyhow::anyhow!("create namespace {ns}: {e}")),
        }
    }
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    if accounts.get_opt("default").await?.is_none() {
        let object: ServiceAccount =
            serde_json::from_value(json!({"metadata": {"name": "default"}}))?;
        match accounts.create(&post, &object).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(anyhow::anyhow!("create ServiceAccount {ns}/default: {e}")),
        }
    }
    Ok(())
}

/// Tries of each clean-up request: a collection of thousands takes the server long enough
/// to time out, or to close the connection, part way; a new request deletes what is left.
const DELETE_TRIES: u32 = 5;

/// Deletes everything `api` holds with `selector`, trying again on failure; a resource the
/// server does not serve (no Volcano CRDs, for kube-scheduler's runs) holds nothing.
async fn delete_all<K>(
    api: &Api<K>,
    params: &DeleteParams,
    selector: &ListParams,
) -> Result<(), String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut last = String::new();
    for attempt in 1..=DELETE_TRIES {
        match api.delete_collection(params, selector).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            Err(e) => last = e.to_string(),
        }
        if attempt < DELETE_TRIES {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    Err(last)
}

/// Deletes the run's Jobs (first, so their controller makes no pods again), PodGroups and
/// pods, without grace: no kubelet would confirm a graceful deletion.
async fn clean_up(client: &Client, ns: &str, run: &str) -> anyhow::Result<()> {
    let selector = ListParams::default().labels(&format!("{RUN_LABEL}={run}"));
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::background()
    };
    let mut failed = Vec::new();
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    if let Err(e) = delete_all(&jobs, &now, &selector).await {
        failed.push(format!("Jobs: {e}"));
    }
    let groups: Api<PodGroup> = Api::namespaced(client.clone(), ns);
    if let Err(e) = delete_all(&groups, &now, &selector).await {
        failed.push(format!("PodGroups: {e}"));
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    if let Err(e) = delete_all(&pods, &now, &selector).await {
        failed.push(format!("pods: {e}"));
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(anyhow::anyhow!(
            "could not delete the run's objects ({}); they carry the label {RUN_LABEL}={run}",
            failed.join("; ")
        ))
    }
}
