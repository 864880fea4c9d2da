//! The Alibaba openb GPU trace (`cluster-trace-gpu-v2023`): its node and pod CSV files, read
//! with errors that name the file, line and column, and turned into Kubernetes objects whose
//! GPUs are separate devices.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use volcano_api::k8s_openapi::api::core::v1::{
    Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, ResourceRequirements,
};
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_scheduler::model::gpu;

/// Pod slots of a trace node: far more than any node holds, so they never bind.
const TRACE_NODE_PODS: u32 = 1001;
/// Pods that may share one trace GPU: as many as fit by share.
const TRACE_SHARES_PER_GPU: u32 = 1000;
/// Node label carrying the GPU model.
pub const MODEL_LABEL: &str = gpu::GPU_PRODUCT_LABEL;

/// A node of the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceNode {
    /// `sn`.
    pub name: String,
    /// `cpu_milli`.
    pub cpu_milli: i64,
    /// `memory_mib`.
    pub memory_mib: i64,
    /// `gpu`: number of GPUs.
    pub gpus: u32,
    /// `model`: GPU model, empty for CPU-only nodes.
    pub model: String,
}

/// A pod of the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracePod {
    /// `name`.
    pub name: String,
    /// `cpu_milli`.
    pub cpu_milli: i64,
    /// `memory_mib`.
    pub memory_mib: i64,
    /// `num_gpu`.
    pub num_gpu: u32,
    /// `gpu_milli`: the share of each GPU in thousandths (clamped to 1..1000 when GPUs are
    /// asked, as the published simulator does).
    pub gpu_milli: u32,
    /// `gpu_spec`: allowed models, `|`-separated in the file.
    pub gpu_spec: Vec<String>,
}

impl TracePod {
    /// GPU thousandths the pod asks for in all.
    pub fn gpu_total_milli(&self) -> u64 {
        u64::from(self.num_gpu) * u64::from(self.gpu_milli)
    }
}

/// A trace file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A row is missing a field or has one that does not parse.
    #[error("{path}:{line}: column {column}: {message}")]
    Field {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// Column name.
        column: String,
        /// What is wrong.
        message: String,
    },
    /// A pod asks for GPU models that no node of the cluster has.
    #[error("{path}:{line}: pod {pod}: column gpu_spec: no node has a GPU of model {spec}")]
    UnknownModel {
        /// The pod file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// The pod.
        pod: String,
        /// The models it allows.
        spec: String,
    },
}

/// A CSV row: its 1-based line and column → value.
type CsvRow = (u64, BTreeMap<String, String>);

/// The rows of a CSV file with a header.
fn rows(path: &Path) -> Result<Vec<CsvRow>, TraceError> {
    let io = |source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .map_err(|e| io(std::io::Error::other(e.to_string())))?;
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| io(std::io::Error::other(e.to_string())))?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| io(std::io::Error::other(e.to_string())))?;
        let line = record.position().map_or(0, |p| p.line());
        let row = headers
            .iter()
            .cloned()
            .zip(record.iter().map(|v| v.trim().to_string()))
            .collect();
        out.push((line, row));
    }
    Ok(out)
}

struct Row<'a> {
    path: &'a Path,
    line: u64,
    row: &'a BTreeMap<String, String>,
}

impl Row<'_> {
    fn err(&self, column: &str, message: impl Into<String>) -> TraceError {
        TraceError::Field {
            path: self.path.to_path_buf(),
            line: self.line,
            column: column.to_string(),
            message: message.into(),
        }
    }

    fn text(&self, column: &str) -> Result<&str, TraceError> {
        self.row
            .get(column)
            .map(String::as_str)
            .ok_or_else(|| self.err(column, "missing"))
    }

    fn number<T: std::str::FromStr>(&self, column: &str) -> Result<T, TraceError> {
        let v = self.text(column)?;
        if v.is_empty() {
            return Err(self.err(column, "missing"));
        }
        v.parse()
            .map_err(|_| self.err(column, format!("{v:?} is not a non-negative whole number")))
    }
}

/// Reads a node list (`sn,cpu_milli,memory_mib,gpu,model`).
pub fn read_nodes(path: &Path) -> Result<Vec<TraceNode>, TraceError> {
    rows(path)?
        .iter()
        .map(|(line, row)| {
            let r = Row {
                path,
                line: *line,
                row,
            };
            let name = r.text("sn")?;
            if name.is_empty() {
                return Err(r.err("sn", "missing"));
            }
            Ok(TraceNode {
                name: name.to_string(),
                cpu_milli: r.number::<u32>("cpu_milli")?.into(),
                memory_mib: r.number::<u32>("memory_mib")?.into(),
                gpus: r.number("gpu")?,
                model: r.row.get("model").cloned().unwrap_or_default(),
            })
        })
        .collect()
}

/// Reads a pod list (`name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]`) and checks
/// that every GPU model a pod allows exists on some node of `nodes`.
pub fn read_pods(path: &Path, nodes: &[TraceNode]) -> Result<Vec<TracePod>, TraceError> {
    let models: BTreeSet<&str> = nodes
        .iter()
        .filter(|n| n.gpus > 0)
        .map(|n| n.model.as_str())
        .collect();
    rows(path)?
        .iter()
        .map(|(line, row)| {
            let r = Row {
                path,
                line: *line,
                row,
            };
            let name = r.text("name")?;
            if name.is_empty() {
                return Err(r.err("name", "missing"));
            }
            let num_gpu: u32 = r.number("num_gpu")?;
            let gpu_milli: u32 = r.number("gpu_milli")?;
            let gpu_spec: Vec<String> = match r.row.get("gpu_spec") {
                Some(s) if num_gpu > 0 => s
                    .split('|')
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
                    .collect(),
                _ => Vec::new(),
            };
            if !gpu_spec.is_empty() && !gpu_spec.iter().any(|m| models.contains(m.as_str())) {
                return Err(TraceError::UnknownModel {
                    path: path.to_path_buf(),
                    line: *line,
                    pod: name.to_string(),
                    spec: gpu_spec.join("|"),
                });
            }
            Ok(TracePod {
                name: name.to_string(),
                cpu_milli: r.number::<u32>("cpu_milli")?.into(),
                memory_mib: r.number::<u32>("memory_mib")?.into(),
                num_gpu,
                gpu_milli: if num_gpu > 0 {
                    gpu_milli.clamp(1, 1000)
                } else {
                    0
                },
                gpu_spec,
            })
        })
        .collect()
}

fn quantities(items: &[(&str, String)]) -> BTreeMap<String, Quantity> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.clone())))
        .collect()
}

/// The node as a Kubernetes Node named `name`: CPU, memory and pod slots as allocatable, its
/// GPUs registered one by one as Volcano's vGPU device plugin does, its model as a label.
pub fn node_object(n: &TraceNode, name: &str) -> Node {
    let mut alloc = vec![
        ("cpu", format!("{}m", n.cpu_milli)),
        ("memory", format!("{}Mi", n.memory_mib)),
        ("pods", TRACE_NODE_PODS.to_string()),
    ];
    let mut annotations = BTreeMap::new();
    let mut labels = BTreeMap::from([("kubernetes.io/hostname".to_string(), name.to_string())]);
    if n.gpus > 0 {
        alloc.push((
            gpu::VGPU_NUMBER,
            (n.gpus * TRACE_SHARES_PER_GPU).to_string(),
        ));
        let register: String = (0..n.gpus)
            .map(|i| {
                format!(
                    "{}-gpu{i},{TRACE_SHARES_PER_GPU},0,{},true,hami-core:",
                    n.name, n.model
                )
            })
            .collect();
        annotations.insert(gpu::NODE_VGPU_REGISTER.to_string(), register);
        labels.insert(MODEL_LABEL.to_string(), n.model.clone());
    }
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            allocatable: Some(quantities(&alloc)),
            ..Default::default()
        }),
    }
}

/// The pod as a Kubernetes Pod named `name` in `namespace`: CPU and memory requests, and its
/// GPUs as vGPU devices (`volcano.sh/vgpu-number`, `vgpu-cores` = the share in percent)
/// limited to its models (`nvidia.com/use-gputype`).
pub fn pod_object(p: &TracePod, namespace: &str, name: &str) -> Pod {
    let mut req = vec![
        ("cpu", format!("{}m", p.cpu_milli)),
        ("memory", format!("{}Mi", p.memory_mib)),
    ];
    let mut annotations = BTreeMap::new();
    if p.num_gpu > 0 {
        req.push((gpu::VGPU_NUMBER, p.num_gpu.to_string()));
        // Shares of the trace are multiples of 10 thousandths; a finer one rounds up so the
        // pod never gets less than it asked.
        req.push((gpu::VGPU_CORES, p.gpu_milli.div_ceil(10).to_string()));
        if !p.gpu_spec.is_empty() {
            annotations.insert(gpu::USE_GPU_TYPE.to_string(), p.gpu_spec.join(","));
        }
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(PodSpec {
            scheduler_name: Some(volcano_api::keys::DEFAULT_SCHEDULER_NAME.to_string()),
            containers: vec![Container {
                name: "main".to_string(),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities(&req)),
                    limits: Some(quantities(&req)),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
}
