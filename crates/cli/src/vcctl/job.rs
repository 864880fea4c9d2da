//! `volcano job run|list|view|suspend|resume|delete`, as vcctl's `job` commands. The Job a
//! command builds and the text it prints are made by pure functions (here, in `job_file` and
//! in `describe`); the functions at the end only talk to the server.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::{
    Container, Event, PodSpec, PodTemplateSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use volcano_api::batch::{Job, JobSpec, TaskSpec};
use volcano_api::bus::BusAction;
use volcano_controllers::admission;

use super::client::{Cluster, ConnectionArgs, Subject, connect};
use super::resources::parse_resource_list;
use super::table::{Table, date};
use super::{DEFAULT_NAMESPACE, bus, describe, job_file};
use crate::Failure;
use crate::output::print;

/// The label vcctl puts on the pod template of a job it builds.
const RUN_LABEL: &str = "job.volcano.sh";
/// The label giving a job's type in `job list` (`Batch` when absent).
const JOB_TYPE_LABEL: &str = "volcano.sh/job-type";
/// The name Volcano's mutating webhook gives the first task of a job that names none.
const TASK_NAME: &str = "default0";
const JOBS: &str = "jobs.batch.volcano.sh";

/// Flags of `volcano job run`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:\n  \
    volcano job run -N train -r 4 -m 4 -i busybox -R cpu=1,memory=1Gi\n  \
    volcano job run -f job.yaml -n team")]
pub struct RunArgs {
    /// Name of the job (required unless the file names it).
    #[arg(short = 'N', long, required_unless_present = "filename")]
    pub name: Option<String>,
    /// Namespace of the job [default: default, or the file's].
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Container image of the task.
    #[arg(
        short = 'i',
        long,
        default_value = "busybox",
        conflicts_with = "filename"
    )]
    pub image: String,
    /// Gang size: pods that must be scheduled together (spec.minAvailable).
    #[arg(short = 'm', long = "min", default_value_t = 1, conflicts_with = "filename",
          value_parser = clap::value_parser!(i32).range(0..))]
    pub min: i32,
    /// Pods of the task.
    #[arg(short = 'r', long, default_value_t = 1, conflicts_with = "filename",
          value_parser = clap::value_parser!(i32).range(0..))]
    pub replicas: i32,
    /// Resource requests of each pod, `name=quantity` pairs ("" for none).
    #[arg(
        short = 'R',
        long,
        default_value = "cpu=1000m,memory=100Mi",
        conflicts_with = "filename"
    )]
    pub requests: String,
    /// Resource limits of each pod, `name=quantity` pairs ("" for none).
    #[arg(
        short = 'L',
        long,
        default_value = "cpu=1000m,memory=100Mi",
        conflicts_with = "filename"
    )]
    pub limits: String,
    /// Scheduler of the pods.
    #[arg(
        short = 'S',
        long,
        default_value = "volcano",
        conflicts_with = "filename"
    )]
    pub scheduler: String,
    /// Queue of the job.
    #[arg(
        short = 'q',
        long,
        default_value = "default",
        conflicts_with = "filename"
    )]
    pub queue: String,
    /// A YAML file holding one batch.volcano.sh/v1alpha1 Job, created as it is.
    #[arg(short = 'f', long, value_name = "FILE")]
    pub filename: Option<PathBuf>,
    /// How to reach the API server.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Flags of `volcano job list`.
#[derive(clap::Args, Debug, Clone)]
pub struct ListArgs {
    /// Namespace of the jobs.
    #[arg(short = 'n', long, default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// List the jobs of every namespace (adds a Namespace column).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Only the jobs of this scheduler.
    #[arg(short = 'S', long)]
    pub scheduler: Option<String>,
    /// Only the jobs of this queue.
    #[arg(short = 'q', long)]
    pub queue: Option<String>,
    /// Only the jobs whose name contains this text.
    #[arg(long)]
    pub selector: Option<String>,
    /// How to reach the API server.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Flags of the commands about one job: view, suspend, resume, delete.
#[derive(clap::Args, Debug, Clone)]
pub struct JobRef {
    /// Name of the job.
    #[arg(short = 'N', long)]
    pub name: String,
    /// Namespace of the job.
    #[arg(short = 'n', long, default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// How to reach the API server.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

impl JobRef {
    fn what(&self) -> String {
        format!("job \"{}/{}\"", self.namespace, self.name)
    }
}

/// The job `job run` builds from its flags: one task named as Volcano's webhook would name
/// it, one container named after the job, pods that never restart (as vcctl).
pub fn job_from_flags(args: &RunArgs, name: &str, namespace: &str) -> Result<Job, String> {
    let requests = parse_resource_list("--requests", &args.requests)?;
    let limits = parse_resource_list("--limits", &args.limits)?;
    let container = Container {
        name: name.to_string(),
        image: Some(args.image.clone()),
        image_pull_policy: Some("IfNotPresent".to_string()),
        resources: Some(ResourceRequirements {
            requests: (!requests.is_empty()).then_some(requests),
            limits: (!limits.is_empty()).then_some(limits),
            ..ResourceRequirements::default()
        }),
        ..Container::default()
    };
    let task = TaskSpec {
        name: TASK_NAME.to_string(),
        replicas: args.replicas,
        template: PodTemplateSpec {
            metadata: Some(ObjectMeta {
                name: Some(name.to_string()),
                labels: Some(BTreeMap::from([(RUN_LABEL.to_string(), name.to_string())])),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                restart_policy: Some("Never".to_string()),
                containers: vec![container],
                ..PodSpec::default()
            }),
        },
        ..TaskSpec::default()
    };
    let mut job = Job::new(
        name,
        JobSpec {
            scheduler_name: args.scheduler.clone(),
            min_available: Some(args.min),
            tasks: vec![task],
            queue: args.queue.clone(),
            ..JobSpec::default()
        },
    );
    job.metadata.namespace = Some(namespace.to_string());
    check_flags_job(&job)?;
    Ok(job)
}

/// Volcano's admission rules, checked before sending so a bad flag is reported with the flag
/// it came from rather than as a webhook's rejection of a field the user never wrote.
fn check_flags_job(job: &Job) -> Result<(), String> {
    let mut defaulted = job.clone();
    admission::default_job(&mut defaulted);
    let Err(err) = admission::validate_job(&defaulted) else {
        return Ok(());
    };
    let reasons: Vec<String> = err
        .violations()
        .map(|(field, message)| match flag_of(field) {
            Some(flag) => format!("{flag}: {message}"),
            None => format!("field {field}: {message}"),
        })
        .collect();
    Err(format!("invalid job: {}", reasons.join("; ")))
}

/// The `job run` flag a field of the job it builds comes from.
fn flag_of(field: &str) -> Option<&'static str> {
    let flag = if field == "metadata.name" || field.ends_with("containers[0].name") {
        "--name"
    } else if field == "spec.minAvailable" {
        "--min"
    } else if field.ends_with(".replicas") || field.ends_with(".minAvailable") {
        "--replicas"
    } else if field.ends_with(".image") {
        "--image"
    } else if field.contains(".requests") {
        "--requests"
    } else if field.contains(".limits") {
        "--limits"
    } else {
        return None;
    };
    Some(flag)
}

/// The jobs `job list` shows: those matching the queue, scheduler and name filters, sorted
/// by namespace and name.
pub fn filter_jobs(jobs: Vec<Job>, args: &ListArgs) -> Vec<Job> {
    let mut jobs: Vec<Job> = jobs
        .into_iter()
        .filter(|job| {
            args.queue.as_ref().is_none_or(|q| *q == job.spec.queue)
                && args
                    .scheduler
                    .as_ref()
                    .is_none_or(|s| *s == job.spec.scheduler_name)
                && args.selector.as_ref().is_none_or(|s| {
                    job.metadata
                        .name
                        .as_deref()
                        .unwrap_or_default()
                        .contains(s.as_str())
                })
        })
        .collect();
    jobs.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    jobs
}

/// vcctl's job table: Name, Creation, Phase, JobType, Replicas, Min, Pending, Running,
/// Succeeded, Failed, Unknown, RetryCount, with Namespace first for all namespaces.
pub fn render_jobs(jobs: &[Job], all_namespaces: bool) -> String {
    // vcctl sizes the name and namespace columns to the longest value plus three.
    let longest = |f: fn(&Job) -> &str, header: &str| {
        jobs.iter()
            .map(|j| f(j).chars().count())
            .chain(std::iter::once(header.len()))
            .max()
            .unwrap_or(0)
            + 3
    };
    let name_width = longest(|j| j.metadata.name.as_deref().unwrap_or_default(), "Name");
    let ns_width = longest(
        |j| j.metadata.namespace.as_deref().unwrap_or_default(),
        "Namespace",
    );
    let mut columns = vec![
        ("Name", name_width),
        ("Creation", 15),
        ("Phase", 12),
        ("JobType", 12),
        ("Replicas", 12),
        ("Min", 6),
        ("Pending", 10),
        ("Running", 10),
        ("Succeeded", 12),
        ("Failed", 10),
        ("Unknown", 12),
        ("RetryCount", 10),
    ];
    if all_namespaces {
        columns.insert(0, ("Namespace", ns_width));
    }
    let mut table = Table::new(&columns);
    for job in jobs {
        let status = job.status.clone().unwrap_or_default();
        let replicas: i64 = job.spec.tasks.iter().map(|t| i64::from(t.replicas)).sum();
        let job_type = job
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(JOB_TYPE_LABEL))
            .filter(|t| !t.is_empty())
            .map_or("Batch", String::as_str);
        let mut row = vec![
            job.metadata.name.clone().unwrap_or_default(),
            date(job.metadata.creation_timestamp.as_ref()),
            status.state.phase.clone(),
            job_type.to_string(),
            replicas.to_string(),
            status.min_available.to_string(),
            status.pending.to_string(),
            status.running.to_string(),
            status.succeeded.to_string(),
            status.failed.to_string(),
            status.unknown.to_string(),
            status.retry_count.to_string(),
        ];
        if all_namespaces {
            row.insert(0, job.metadata.namespace.clone().unwrap_or_default());
        }
        table.row(row);
    }
    table.render()
}

/// `volcano job run`.
pub async fn run(args: &RunArgs) -> Result<(), Failure> {
    let job = match &args.filename {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::Input(format!("{}: cannot read: {e}", path.display())))?;
            let mut job = job_file::job_from_yaml(path, &text).map_err(Failure::Input)?;
            job_file::place(
                &mut job,
                path,
                args.name.as_deref(),
                args.namespace.as_deref(),
            )
            .map_err(Failure::Input)?;
            job
        }
        None => {
            // clap requires --name when there is no file.
            let name = args.name.as_deref().unwrap_or_default();
            let namespace = args.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
            job_from_flags(args, name, namespace).map_err(Failure::Input)?
        }
    };
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    let shown = job
        .metadata
        .name
        .clone()
        .or_else(|| job.metadata.generate_name.clone())
        .unwrap_or_default();
    let cluster = connect(&args.connection).await?;
    let what = format!("job \"{namespace}/{shown}\"");
    let created = Api::<Job>::namespaced(cluster.client.clone(), &namespace)
        .create(&PostParams::default(), &job)
        .await
        .map_err(|e| cluster.failure(subject(&what), e))?;
    print(&format!(
        "run job {} successfully",
        created.metadata.name.unwrap_or(shown)
    ))
}

/// `volcano job list`.
pub async fn list(args: &ListArgs) -> Result<(), Failure> {
    let cluster = connect(&args.connection).await?;
    let api: Api<Job> = if args.all_namespaces {
        Api::all(cluster.client.clone())
    } else {
        Api::namespaced(cluster.client.clone(), &args.namespace)
    };
    let jobs = api
        .list(&ListParams::default())
        .await
        .map_err(|e| cluster.failure(subject("jobs"), e))?;
    let jobs = filter_jobs(jobs.items, args);
    if jobs.is_empty() {
        return print("No resources found");
    }
    print(render_jobs(&jobs, args.all_namespaces).trim_end())
}

/// `volcano job view`.
pub async fn view(args: &JobRef) -> Result<(), Failure> {
    let cluster = connect(&args.connection).await?;
    let job = get(&cluster, args).await?;
    // Events are a help, not the point: a server that will not list them still gets the job
    // described, with a note.
    let events = match job_events(&cluster, args).await {
        Ok(list) => describe::events_of(&job, list),
        Err(e) => {
            eprintln!(
                "warning: cannot list the events of {}: {}",
                args.what(),
                super::client::chain(&e)
            );
            Vec::new()
        }
    };
    let now = super::table::now_seconds();
    print(describe::describe_job(&job, &events, now).trim_end())
}

/// The namespace's events, narrowed by the server to the job's where it can; a server that
/// refuses the field selector gets the plain list (filtered here all the same).
async fn job_events(cluster: &Cluster, args: &JobRef) -> Result<Vec<Event>, kube::Error> {
    let api = Api::<Event>::namespaced(cluster.client.clone(), &args.namespace);
    let selector = format!("involvedObject.kind=Job,involvedObject.name={}", args.name);
    match api.list(&ListParams::default().fields(&selector)).await {
        Ok(list) => Ok(list.items),
        Err(_) => Ok(api.list(&ListParams::default()).await?.items),
    }
}

/// `volcano job suspend` (`AbortJob`) and `volcano job resume` (`ResumeJob`).
pub async fn command(args: &JobRef, action: BusAction) -> Result<(), Failure> {
    let cluster = connect(&args.connection).await?;
    let job = get(&cluster, args).await?;
    let target = bus::controller_ref(&job).ok_or_else(|| {
        Failure::Internal(anyhow::anyhow!(
            "the API server at {} returned {} without a uid",
            cluster.server,
            args.what()
        ))
    })?;
    let created = send_command(&cluster, bus::command(target, &args.namespace, action)).await?;
    print(&format!(
        "{} job {}: {action} requested (Command {}/{created})",
        if action == BusAction::ResumeJob {
            "resume"
        } else {
            "suspend"
        },
        args.name,
        args.namespace,
    ))
}

/// `volcano job delete`.
pub async fn delete(args: &JobRef) -> Result<(), Failure> {
    let cluster = connect(&args.connection).await?;
    let what = args.what();
    Api::<Job>::namespaced(cluster.client.clone(), &args.namespace)
        .delete(&args.name, &DeleteParams::default())
        .await
        .map_err(|e| cluster.failure(subject(&what), e))?;
    print(&format!("delete job {} successfully", args.name))
}

fn subject(what: &str) -> Subject<'_> {
    Subject {
        what,
        resource: JOBS,
    }
}

async fn get(cluster: &Cluster, args: &JobRef) -> Result<Job, Failure> {
    let what = args.what();
    Api::<Job>::namespaced(cluster.client.clone(), &args.namespace)
        .get(&args.name)
        .await
        .map_err(|e| cluster.failure(subject(&what), e))
}

/// Creates a Command; returns the name the server gave it.
pub async fn send_command(
    cluster: &Cluster,
    cmd: volcano_api::bus::Command,
) -> Result<String, Failure> {
    let namespace = cmd.metadata.namespace.clone().unwrap_or_default();
    let object = bus::as_dynamic(&cmd).map_err(|e| Failure::Internal(e.into()))?;
    let what = format!("{} Command for {}", cmd.action, describe_target(&cmd));
    let created = Api::<kube::api::DynamicObject>::namespaced_with(
        cluster.client.clone(),
        &namespace,
        &bus::api_resource(),
    )
    .create(&PostParams::default(), &object)
    .await
    .map_err(|e| {
        cluster.failure(
            Subject {
                what: &what,
                resource: "commands.bus.volcano.sh",
            },
            e,
        )
    })?;
    Ok(created.metadata.name.unwrap_or_default())
}

fn describe_target(cmd: &volcano_api::bus::Command) -> String {
    cmd.target
        .as_ref()
        .map_or_else(String::new, |t| format!("{} {}", t.kind, t.name))
}

#[cfg(test)]
#[path = "job_tests.rs"]
mod tests;
