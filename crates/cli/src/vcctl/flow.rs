//! `volcano jobflow` and `volcano jobtemplate` create|list|get|describe|delete, as vcctl's
//! commands of those names: the same flags, the same one-line answers. Files are read as
//! scenario files are, so a bad flow is refused with its file, document and field before
//! anything is sent.

use std::fmt::Debug;
use std::path::{Path, PathBuf};

use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::core::NamespaceResourceScope;
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use volcano_api::flow::{JobFlow, JobTemplate};
use volcano_api::scenario::{Objects, load_str};

use super::DEFAULT_NAMESPACE;
use super::client::{Cluster, ConnectionArgs, Subject, connect};
use super::table::{Table, age, epoch_seconds, now_seconds};
use crate::Failure;
use crate::output::print;

/// What the commands need of a flow kind.
pub trait FlowKind:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
{
    /// The kind's name, as users write it.
    const KIND: &'static str;
    /// The API resource, for errors when the CRD is missing.
    const RESOURCE: &'static str;
    /// The objects of this kind in a loaded file.
    fn of(objects: Objects) -> Vec<Self>;
    /// The PHASE column, for kinds that have one.
    fn phase(&self) -> Option<String>;
}

impl FlowKind for JobFlow {
    const KIND: &'static str = "JobFlow";
    const RESOURCE: &'static str = "jobflows.flow.volcano.sh";
    fn of(objects: Objects) -> Vec<Self> {
        objects.job_flows
    }
    fn phase(&self) -> Option<String> {
        Some(
            self.status
                .as_ref()
                .map(|s| s.state.phase.clone())
                .unwrap_or_default(),
        )
    }
}

impl FlowKind for JobTemplate {
    const KIND: &'static str = "JobTemplate";
    const RESOURCE: &'static str = "jobtemplates.flow.volcano.sh";
    fn of(objects: Objects) -> Vec<Self> {
        objects.job_templates
    }
    fn phase(&self) -> Option<String> {
        None
    }
}

/// Flags of `create`.
#[derive(clap::Args, Debug, Clone)]
pub struct CreateArgs {
    /// YAML file of one or more objects, separated by `---`.
    #[arg(short = 'f', long, value_name = "PATH")]
    pub file: PathBuf,
    /// How to reach the API server.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Flags of `list`.
#[derive(clap::Args, Debug, Clone)]
pub struct ListArgs {
    /// Namespace to list.
    #[arg(short = 'n', long, default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// List every namespace.
    #[arg(long)]
    pub all_namespaces: bool,
    /// How to reach the API server.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Flags of `get`.
#[derive(clap::Args, Debug, Clone)]
pub struct GetArgs {
    /// Name of the object.
    #[arg(short = 'N', long)]
    pub name: String,
    /// Its namespace.
    #[arg(short = 'n', long, default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// How to reach the API server.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// The formats `describe` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// YAML.
    Yaml,
    /// JSON.
    Json,
}

/// Flags of `describe`.
#[derive(clap::Args, Debug, Clone)]
pub struct DescribeArgs {
    /// Name of the object [default: every one of the namespace].
    #[arg(short = 'N', long)]
    pub name: Option<String>,
    /// Its namespace.
    #[arg(short = 'n', long, default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// Output format.
    #[arg(short = 'o', long = "format", value_enum, default_value = "yaml")]
    pub format: Format,
    /// How to reach the API server.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Flags of `delete`: one object by name, or every one in a file.
#[derive(clap::Args, Debug, Clone)]
pub struct DeleteArgs {
    /// Name of the object.
    #[arg(
        short = 'N',
        long,
        required_unless_present = "file",
        conflicts_with = "file"
    )]
    pub name: Option<String>,
    /// Its namespace.
    #[arg(short = 'n', long, default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// YAML file naming the objects to delete.
    #[arg(short = 'f', long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// How to reach the API server.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// The objects of kind `K` in `path`; any other kind in the file is an error, since these
/// commands create or delete only `K`.
pub fn read_file<K: FlowKind>(path: &Path) -> Result<Vec<K>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("{}: cannot read: {e}", path.display())))?;
    let scenario = load_str(path, &text).map_err(|e| Failure::Input(e.to_string()))?;
    let total = scenario.sources.len();
    let found = K::of(scenario.objects);
    if found.is_empty() {
        return Err(Failure::Input(format!(
            "{}: holds no {}",
            path.display(),
            K::KIND
        )));
    }
    if found.len() != total {
        return Err(Failure::Input(format!(
            "{}: holds {} objects of other kinds; `volcano {}` reads only {}s",
            path.display(),
            total - found.len(),
            K::KIND.to_lowercase(),
            K::KIND
        )));
    }
    Ok(found)
}

fn api<K: FlowKind>(client: &Client, namespace: &str) -> Api<K> {
    Api::namespaced(client.clone(), namespace)
}

fn key_of<K: FlowKind>(o: &K) -> (String, String) {
    let m = o.meta();
    (
        m.namespace
            .clone()
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string()),
        m.name.clone().unwrap_or_default(),
    )
}

fn what<K: FlowKind>(namespace: &str, name: &str) -> String {
    format!("{} \"{namespace}/{name}\"", K::KIND.to_lowercase())
}

/// Creates every object of the file, reporting each; fails at the end if any failed.
pub async fn create<K: FlowKind>(args: &CreateArgs) -> Result<(), Failure> {
    let objects = read_file::<K>(&args.file)?;
    let cluster = connect(&args.connection).await?;
    let mut failed = Vec::new();
    for o in objects {
        let (namespace, name) = key_of(&o);
        let w = what::<K>(&namespace, &name);
        match api::<K>(&cluster.client, &namespace)
            .create(&PostParams::default(), &o)
            .await
        {
            Ok(_) => print(&format!("Created {}: {namespace}/{name}", K::KIND))?,
            Err(e) => failed.push(failure::<K>(&cluster, &w, e)),
        }
    }
    first_failure(failed)
}

/// Deletes one object by name, or every object the file names.
pub async fn delete<K: FlowKind>(args: &DeleteArgs) -> Result<(), Failure> {
    let keys = match (&args.file, &args.name) {
        (Some(file), _) => read_file::<K>(file)?.iter().map(key_of).collect(),
        (None, Some(name)) => vec![(args.namespace.clone(), name.clone())],
        (None, None) => return Err(Failure::Input("give -N NAME or -f FILE".into())),
    };
    let cluster = connect(&args.connection).await?;
    let mut failed = Vec::new();
    for (namespace, name) in keys {
        let w = what::<K>(&namespace, &name);
        match api::<K>(&cluster.client, &namespace)
            .delete(&name, &DeleteParams::default())
            .await
        {
            Ok(_) => print(&format!("Deleted {}: {namespace}/{name}", K::KIND))?,
            Err(e) => failed.push(failure::<K>(&cluster, &w, e)),
        }
    }
    first_failure(failed)
}

/// Prints one object as a row of the list table.
pub async fn get<K: FlowKind>(args: &GetArgs) -> Result<(), Failure> {
    let cluster = connect(&args.connection).await?;
    let w = what::<K>(&args.namespace, &args.name);
    let o = api::<K>(&cluster.client, &args.namespace)
        .get(&args.name)
        .await
        .map_err(|e| failure::<K>(&cluster, &w, e))?;
    print(&table(&[o]))
}

/// Lists the objects of a namespace, or of all.
pub async fn list<K: FlowKind>(args: &ListArgs) -> Result<(), Failure> {
    let cluster = connect(&args.connection).await?;
    let api: Api<K> = if args.all_namespaces {
        Api::all(cluster.client.clone())
    } else {
        api::<K>(&cluster.client, &args.namespace)
    };
    let w = format!("{}s", K::KIND.to_lowercase());
    let items = api
        .list(&ListParams::default())
        .await
        .map_err(|e| failure::<K>(&cluster, &w, e))?
        .items;
    if items.is_empty() {
        return print("No resources found");
    }
    print(&table(&items))
}

/// Prints objects whole, as YAML or JSON, without their managed fields.
pub async fn describe<K: FlowKind>(args: &DescribeArgs) -> Result<(), Failure> {
    let cluster = connect(&args.connection).await?;
    let api = api::<K>(&cluster.client, &args.namespace);
    let items = match &args.name {
        Some(name) => {
            let w = what::<K>(&args.namespace, name);
            vec![
                api.get(name)
                    .await
                    .map_err(|e| failure::<K>(&cluster, &w, e))?,
            ]
        }
        None => {
            let w = format!("{}s", K::KIND.to_lowercase());
            api.list(&ListParams::default())
                .await
                .map_err(|e| failure::<K>(&cluster, &w, e))?
                .items
        }
    };
    let mut docs = Vec::new();
    for mut o in items {
        o.meta_mut().managed_fields = None;
        let mut value = serde_json::to_value(&o)
            .map_err(|e| Failure::Internal(anyhow::anyhow!("cannot encode: {e}")))?;
        if let Some(map) = value.as_object_mut() {
            map.insert("apiVersion".into(), "flow.volcano.sh/v1alpha1".into());
            map.insert("kind".into(), K::KIND.into());
        }
        let text = match args.format {
            Format::Json => serde_json::to_string_pretty(&value)
                .map_err(|e| Failure::Internal(anyhow::anyhow!("cannot encode: {e}")))?,
            Format::Yaml => serde_yaml_ng::to_string(&value)
                .map_err(|e| Failure::Internal(anyhow::anyhow!("cannot encode: {e}")))?,
        };
        docs.push(text.trim_end().to_string());
    }
    let separator = match args.format {
        Format::Json => "\n",
        Format::Yaml => "\n---\n",
    };
    print(&docs.join(separator))
}

/// vcctl's columns: NAME, NAMESPACE, PHASE (flows only), AGE.
fn table<K: FlowKind>(items: &[K]) -> String {
    let with_phase = items.first().and_then(FlowKind::phase).is_some();
    let mut columns = vec![("Name", 4), ("Namespace", 9)];
    if with_phase {
        columns.push(("Phase", 5));
    }
    columns.push(("Age", 3));
    let mut t = Table::new(&columns).gap(4);
    let now = now_seconds();
    for o in items {
        let (namespace, name) = key_of(o);
        let mut row = vec![name, namespace];
        if let Some(phase) = o.phase() {
            row.push(phase);
        }
        row.push(
            o.meta()
                .creation_timestamp
                .as_ref()
                .map_or("<unknown>".to_string(), |t| age(now, epoch_seconds(t))),
        );
        t.row(row);
    }
    t.render().trim_end().to_string()
}

fn failure<K: FlowKind>(cluster: &Cluster, what: &str, e: kube::Error) -> Failure {
    cluster.failure(
        Subject {
            what,
            resource: K::RESOURCE,
        },
        e,
    )
}

/// Every failure but the first was already printed; the first decides the exit status.
fn first_failure(failed: Vec<Failure>) -> Result<(), Failure> {
    let mut failed = failed.into_iter();
    let Some(first) = failed.next() else {
        return Ok(());
    };
    for other in failed {
        match other {
            Failure::Input(m) => eprintln!("error: {m}"),
            Failure::Internal(e) => eprintln!("error: {e:#}"),
        }
    }
    Err(first)
}
