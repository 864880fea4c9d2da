//! `volcano queue create|list|get|operate|delete`, as vcctl's `queue` commands. As in vcctl,
//! `-n` is the queue's NAME here (queues have no namespace).

use std::collections::BTreeMap;

use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use volcano_api::bus::BusAction;
use volcano_api::scheduling::{
    PodGroup, Queue, QueueSpec, QueueStatus, phase as pg_phase, queue_state,
};

use super::bus;
use super::client::{Cluster, ConnectionArgs, Subject, connect};
use super::job::send_command;
use super::resources::parse_resource_list;
use super::table::Table;
use crate::Failure;
use crate::output::print;

const QUEUES: &str = "queues.scheduling.volcano.sh";
/// The namespace vcctl puts queue Commands in (a Queue has none of its own).
const COMMAND_NAMESPACE: &str = "default";

/// A queue state a user may ask for at creation.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Accepts and schedules work.
    #[value(name = "Open")]
    Open,
    /// Accepts no new work.
    #[value(name = "Closed")]
    Closed,
}

/// Flags of `volcano queue create`.
#[derive(clap::Args, Debug, Clone)]
#[command(
    after_help = "Example:\n  volcano queue create -n research -w 4 --capability cpu=64,memory=256Gi"
)]
pub struct CreateArgs {
    /// Name of the queue.
    #[arg(short = 'n', long)]
    pub name: String,
    /// Share weight, 1 to 65535.
    #[arg(short = 'w', long, default_value_t = 1,
          value_parser = clap::value_parser!(i32).range(1..=65535))]
    pub weight: i32,
    /// State of the new queue.
    #[arg(
        short = 'S',
        long,
        value_enum,
        default_value = "Open",
        ignore_case = true
    )]
    pub state: State,
    /// Whether other queues may reclaim resources this queue uses beyond its share.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub reclaimable: bool,
    /// Most the queue may use, `name=quantity` pairs (e.g. cpu=64,memory=256Gi).
    #[arg(long, value_name = "RESOURCES")]
    pub capability: Option<String>,
    /// Parent queue in the hierarchy [default: root].
    #[arg(long)]
    pub parent: Option<String>,
    /// How to reach the API server.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Flags of `volcano queue list`.
#[derive(clap::Args, Debug, Clone)]
pub struct ListArgs {
    /// How to reach the API server.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Flags of the commands about one queue: get, delete.
#[derive(clap::Args, Debug, Clone)]
pub struct QueueRef {
    /// Name of the queue.
    #[arg(short = 'n', long)]
    pub name: String,
    /// How to reach the API server.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// What `queue operate` does.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Open the queue (an OpenQueue Command to the queue controller).
    Open,
    /// Close the queue (a CloseQueue Command); it is Closing until its PodGroups are gone.
    Close,
    /// Set the queue's weight (needs --weight).
    Update,
}

/// Flags of `volcano queue operate`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:\n  \
    volcano queue operate -n research -a close\n  \
    volcano queue operate -n research -a update -w 8")]
pub struct OperateArgs {
    /// Name of the queue.
    #[arg(short = 'n', long)]
    pub name: String,
    /// What to do.
    #[arg(short = 'a', long, value_enum)]
    pub action: Action,
    /// New weight, 1 to 65535 (with -a update).
    #[arg(short = 'w', long, value_parser = clap::value_parser!(i32).range(1..=65535))]
    pub weight: Option<i32>,
    /// How to reach the API server.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// The Queue `queue create` builds. The state goes in `status` as vcctl puts it; a server
/// that keeps status apart drops it, which `create` makes up for with a Command.
pub fn queue_from_flags(args: &CreateArgs) -> Result<Queue, String> {
    let capability = args
        .capability
        .as_deref()
        .map(|text| parse_resource_list("--capability", text))
        .transpose()?;
    let mut queue = Queue::new(
        &args.name,
        QueueSpec {
            weight: args.weight,
            reclaimable: Some(args.reclaimable),
            capability,
            parent: args.parent.clone().unwrap_or_default(),
            ..QueueSpec::default()
        },
    );
    queue.status = Some(QueueStatus {
        state: state_name(args.state).to_string(),
        ..QueueStatus::default()
    });
    Ok(queue)
}

fn state_name(state: State) -> &'static str {
    match state {
        State::Open => queue_state::OPEN,
        State::Closed => queue_state::CLOSED,
    }
}

/// PodGroups of one queue by phase, vcctl's columns.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PodGroupCounts {
    /// Admitted, waiting for pods.
    pub inqueue: u32,
    /// Not admitted yet.
    pub pending: u32,
    /// Running.
    pub running: u32,
    /// Partly running.
    pub unknown: u32,
    /// Finished.
    pub completed: u32,
}

/// PodGroup counts per queue name. Unlike vcctl, a PodGroup with no queue counts for
/// `default` and one with no phase counts as Pending: that is what they mean to the
/// scheduler.
pub fn count_pod_groups(pod_groups: &[PodGroup]) -> BTreeMap<String, PodGroupCounts> {
    let mut counts: BTreeMap<String, PodGroupCounts> = BTreeMap::new();
    for pg in pod_groups {
        let queue = if pg.spec.queue.is_empty() {
            volcano_api::keys::DEFAULT_QUEUE
        } else {
            pg.spec.queue.as_str()
        };
        let c = counts.entry(queue.to_string()).or_default();
        let phase = pg.status.as_ref().map_or("", |s| s.phase.as_str());
        match phase {
            pg_phase::INQUEUE => c.inqueue += 1,
            "" | pg_phase::PENDING => c.pending += 1,
            pg_phase::RUNNING => c.running += 1,
            pg_phase::UNKNOWN => c.unknown += 1,
            pg_phase::COMPLETED => c.completed += 1,
            _ => {}
        }
    }
    counts
}

/// vcctl's queue table: Name, Weight, State, Parent, Inqueue, Pending, Running, Unknown,
/// Completed, one row per queue in name order.
pub fn render_queues(queues: &[Queue], counts: &BTreeMap<String, PodGroupCounts>) -> String {
    let mut table = Table::new(&[
        ("Name", 25),
        ("Weight", 8),
        ("State", 8),
        ("Parent", 8),
        ("Inqueue", 8),
        ("Pending", 8),
        ("Running", 8),
        ("Unknown", 8),
        ("Completed", 8),
    ]);
    let mut sorted: Vec<&Queue> = queues.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for q in sorted {
        let name = q.metadata.name.clone().unwrap_or_default();
        let c = counts.get(&name).copied().unwrap_or_default();
        // An empty state means Open to the scheduler, and an empty parent means root (the
        // root queue itself has none): printing the meaning keeps every column filled.
        let state = q
            .status
            .as_ref()
            .map(|s| s.state.as_str())
            .filter(|s| !s.is_empty())
            .unwrap_or(queue_state::OPEN);
        let parent = match (q.spec.parent.as_str(), name.as_str()) {
            ("", volcano_api::keys::ROOT_QUEUE) => "-",
            ("", _) => volcano_api::keys::ROOT_QUEUE,
            (p, _) => p,
        };
        table.row(vec![
            name.clone(),
            q.spec.weight.to_string(),
            state.to_string(),
            parent.to_string(),
            c.inqueue.to_string(),
            c.pending.to_string(),
            c.running.to_string(),
            c.unknown.to_string(),
            c.completed.to_string(),
        ]);
    }
    table.render()
}

/// The merge patch `queue operate -a update` sends.
pub fn weight_patch(weight: i32) -> serde_json::Value {
    serde_json::json!({ "spec": { "weight": weight } })
}

fn what(name: &str) -> String {
    format!("queue \"{name}\"")
}

fn subject(what: &str) -> Subject<'_> {
    Subject {
        what,
        resource: QUEUES,
    }
}

/// `volcano queue create`.
pub async fn create(args: &CreateArgs) -> Result<(), Failure> {
    let queue = queue_from_flags(args).map_err(Failure::Input)?;
    let cluster = connect(&args.connection).await?;
    let what = what(&args.name);
    let created = Api::<Queue>::all(cluster.client.clone())
        .create(&PostParams::default(), &queue)
        .await
        .map_err(|e| cluster.failure(subject(&what), e))?;
    let state = created.status.as_ref().map_or("", |s| s.state.as_str());
    if args.state == State::Closed && state != queue_state::CLOSED {
        // The server kept status apart and dropped the state: ask the controller instead.
        let name = queue_command(&cluster, &created, BusAction::CloseQueue).await?;
        return print(&format!(
            "create queue {} successfully; CloseQueue requested (Command {COMMAND_NAMESPACE}/{name})",
            args.name
        ));
    }
    print(&format!("create queue {} successfully", args.name))
}

/// `volcano queue list`.
pub async fn list(args: &ListArgs) -> Result<(), Failure> {
    let cluster = connect(&args.connection).await?;
    let queues = Api::<Queue>::all(cluster.client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|e| cluster.failure(subject("queues"), e))?;
    if queues.items.is_empty() {
        return print("No resources found");
    }
    let counts = pod_group_counts(&cluster).await?;
    print(render_queues(&queues.items, &counts).trim_end())
}

/// `volcano queue get`.
pub async fn get(args: &QueueRef) -> Result<(), Failure> {
    let cluster = connect(&args.connection).await?;
    let queue = fetch(&cluster, &args.name).await?;
    let counts = pod_group_counts(&cluster).await?;
    print(render_queues(&[queue], &counts).trim_end())
}

/// `volcano queue operate`.
pub async fn operate(args: &OperateArgs) -> Result<(), Failure> {
    let action = match (args.action, args.weight) {
        (Action::Update, None) => {
            return Err(Failure::Input(format!(
                "-a update needs --weight (1 to 65535) for queue {}",
                args.name
            )));
        }
        (Action::Open | Action::Close, Some(_)) => {
            return Err(Failure::Input(
                "--weight goes with -a update only; open and close keep the weight".to_string(),
            ));
        }
        (Action::Open, None) => BusAction::OpenQueue,
        (Action::Close, None) => BusAction::CloseQueue,
        (Action::Update, Some(weight)) => {
            let cluster = connect(&args.connection).await?;
            let what = what(&args.name);
            Api::<Queue>::all(cluster.client.clone())
                .patch(
                    &args.name,
                    &PatchParams::default(),
                    &Patch::Merge(weight_patch(weight)),
                )
                .await
                .map_err(|e| cluster.failure(subject(&what), e))?;
            return print(&format!(
                "update queue {} weight to {weight} successfully",
                args.name
            ));
        }
    };
    let cluster = connect(&args.connection).await?;
    let queue = fetch(&cluster, &args.name).await?;
    let name = queue_command(&cluster, &queue, action).await?;
    print(&format!(
        "{} queue {}: {action} requested (Command {COMMAND_NAMESPACE}/{name})",
        if action == BusAction::OpenQueue {
            "open"
        } else {
            "close"
        },
        args.name
    ))
}

/// `volcano queue delete`.
pub async fn delete(args: &QueueRef) -> Result<(), Failure> {
    let cluster = connect(&args.connection).await?;
    let what = what(&args.name);
    Api::<Queue>::all(cluster.client.clone())
        .delete(&args.name, &DeleteParams::default())
        .await
        .map_err(|e| cluster.failure(subject(&what), e))?;
    print(&format!("delete queue {} successfully", args.name))
}

async fn fetch(cluster: &Cluster, name: &str) -> Result<Queue, Failure> {
    let what = what(name);
    Api::<Queue>::all(cluster.client.clone())
        .get(name)
        .await
        .map_err(|e| cluster.failure(subject(&what), e))
}

async fn pod_group_counts(cluster: &Cluster) -> Result<BTreeMap<String, PodGroupCounts>, Failure> {
    let pod_groups = Api::<PodGroup>::all(cluster.client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|e| {
            cluster.failure(
                Subject {
                    what: "podgroups",
                    resource: "podgroups.scheduling.volcano.sh",
                },
                e,
            )
        })?;
    Ok(count_pod_groups(&pod_groups.items))
}

async fn queue_command(
    cluster: &Cluster,
    queue: &Queue,
    action: BusAction,
) -> Result<String, Failure> {
    let target = bus::controller_ref(queue).ok_or_else(|| {
        Failure::Internal(anyhow::anyhow!(
            "the API server at {} returned queue {:?} without a uid",
            cluster.server,
            queue.metadata.name.as_deref().unwrap_or_default()
        ))
    })?;
    send_command(cluster, bus::command(target, COMMAND_NAMESPACE, action)).await
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
