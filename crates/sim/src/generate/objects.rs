//! Building the generated objects. Every job draws from its own random stream (derived from
//! the seed and its index), so changing one key, say `fail-rate`, leaves the other jobs'
//! sizes and durations as they were: two what-if runs differ only in what was changed.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand::rngs::StdRng;
use volcano_api::Objects;
use volcano_api::batch::{Job, JobSpec, TaskSpec};
use volcano_api::k8s_openapi::api::core::v1::{
    Container, Node, NodeSpec, NodeStatus, PodSpec, PodTemplateSpec, ResourceRequirements, Taint,
    Toleration,
};
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::quantity::format_bytes;
use volcano_api::scheduling::{NetworkTopologySpec, Queue, QueueSpec};

use super::GenerateSpec;
use super::sample;

/// Simulation annotations (see SCENARIO.md).
pub(super) const SUBMIT_AT: &str = "sim.volcano-rs.io/submit-at";
pub(super) const DURATION: &str = "sim.volcano-rs.io/duration";
pub(super) const FAIL_AFTER: &str = "sim.volcano-rs.io/fail-after";

/// Resource names and keys of the NVIDIA device plugin and Volcano's vGPU device plugin.
pub(super) const GPU: &str = "nvidia.com/gpu";
pub(super) const GPU_PRODUCT: &str = "nvidia.com/gpu.product";
pub(super) const VGPU_NUMBER: &str = "volcano.sh/vgpu-number";
pub(super) const VGPU_CORES: &str = "volcano.sh/vgpu-cores";
pub(super) const VGPU_MEMORY: &str = "volcano.sh/vgpu-memory";
pub(super) const VGPU_REGISTER: &str = "volcano.sh/node-vgpu-register";
/// Slices each device is split into (the vGPU device plugin's `deviceSplitCount`).
const VGPU_SPLIT: u32 = 10;

const GI: u64 = 1 << 30;

/// Everything the spec asks for.
pub(super) fn build(spec: &GenerateSpec, seed: u64) -> Objects {
    let taint = spec.gpu_taint && spec.gpu_nodes > 0 && spec.gpu_nodes < spec.nodes;
    let mut objects = Objects {
        nodes: nodes(spec, taint),
        queues: spec
            .queues
            .iter()
            .map(|q| queue(&q.name, q.weight))
            .collect(),
        ..Objects::default()
    };
    if !spec.topology.is_empty() {
        let names: Vec<String> = objects
            .nodes
            .iter()
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        objects.hyper_nodes = super::hyper_nodes_over(&names, &spec.topology);
    }
    let mut arrivals_rng = StdRng::seed_from_u64(seed);
    let times = sample::arrivals(&mut arrivals_rng, spec.arrival, spec.jobs, spec.over_s);
    let width = spec.jobs.max(1).to_string().len().max(4);
    for (index, submit_s) in times.into_iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(job_seed(seed, index as u64));
        objects
            .jobs
            .push(job(spec, &mut rng, index, width, submit_s, taint));
    }
    objects
}

/// SplitMix64 of the seed and the index: independent streams for neighbouring indexes.
pub(crate) fn job_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn quantity(text: impl Into<String>) -> Quantity {
    Quantity(text.into())
}

fn bytes(n: u64) -> Quantity {
    // Sizes here are far below i64::MAX; saturating keeps the function total.
    quantity(format_bytes(i64::try_from(n).unwrap_or(i64::MAX)))
}

/// Virtual time as Go writes durations, which the simulator reads back: `1h2m3s`, `45m`.
pub(super) fn go_duration(total_s: u64) -> String {
    let (h, m, s) = (total_s / 3600, total_s / 60 % 60, total_s % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}

fn nodes(spec: &GenerateSpec, taint: bool) -> Vec<Node> {
    let cpu_nodes = spec.nodes.saturating_sub(spec.gpu_nodes);
    let gpu_width = spec.gpu_nodes.max(1).saturating_sub(1).to_string().len();
    let cpu_width = cpu_nodes.max(1).saturating_sub(1).to_string().len();
    let gpu = (0..spec.gpu_nodes).map(|i| gpu_node(spec, &format!("gpu-{i:0gpu_width$}"), taint));
    let cpu = (0..cpu_nodes).map(|i| cpu_node(spec, &format!("cpu-{i:0cpu_width$}")));
    gpu.chain(cpu).collect()
}

fn cpu_node(spec: &GenerateSpec, name: &str) -> Node {
    let allocatable: BTreeMap<String, Quantity> = [
        ("cpu".to_string(), quantity(spec.node_cpu.to_string())),
        ("memory".to_string(), bytes(spec.node_memory_bytes)),
        ("pods".to_string(), quantity("110")),
    ]
    .into();
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some([("kubernetes.io/hostname".to_string(), name.to_string())].into()),
            ..ObjectMeta::default()
        },
        spec: None,
        status: Some(NodeStatus {
            capacity: Some(allocatable.clone()),
            allocatable: Some(allocatable),
            ..NodeStatus::default()
        }),
    }
}

fn gpu_node(spec: &GenerateSpec, name: &str, taint: bool) -> Node {
    let mut node = cpu_node(spec, name);
    let gpus = spec.gpus_per_node;
    let extra = [
        (GPU.to_string(), quantity(gpus.to_string())),
        (
            VGPU_NUMBER.to_string(),
            quantity((gpus.saturating_mul(VGPU_SPLIT)).to_string()),
        ),
    ];
    if let Some(status) = node.status.as_mut() {
        for list in [status.allocatable.as_mut(), status.capacity.as_mut()]
            .into_iter()
            .flatten()
        {
            list.extend(extra.clone());
        }
    }
    node.metadata
        .labels
        .get_or_insert_default()
        .insert(GPU_PRODUCT.to_string(), spec.gpu_model.clone());
    node.metadata.annotations = Some(
        [(
            VGPU_REGISTER.to_string(),
            vgpu_register(name, gpus, spec.gpu_memory_mib, &spec.gpu_model),
        )]
        .into(),
    );
    if taint {
        node.spec = Some(NodeSpec {
            taints: Some(vec![Taint {
                key: GPU.to_string(),
                value: Some("present".to_string()),
                effect: "NoSchedule".to_string(),
                time_added: None,
            }]),
            ..NodeSpec::default()
        });
    }
    node
}

/// Volcano's device register annotation: `uuid,count,memoryMiB,type,health,mode:` per device.
pub(super) fn vgpu_register(node: &str, gpus: u32, memory_mib: u64, model: &str) -> String {
    (0..gpus)
        .map(|i| format!("{node}-{i},{VGPU_SPLIT},{memory_mib},{model},true,hami-core:"))
        .collect()
}

fn queue(name: &str, weight: u32) -> Queue {
    Queue::new(
        name,
        QueueSpec {
            weight: i32::try_from(weight).unwrap_or(i32::MAX),
            reclaimable: Some(true),
            ..QueueSpec::default()
        },
    )
}

/// The three kinds of job, and what each pod asks for.
enum Kind {
    /// CPU only.
    Batch,
    /// A gang of pods with whole GPUs.
    Train,
    /// One pod on a share of one GPU.
    Notebook,
}

impl Kind {
    fn prefix(&self) -> &'static str {
        match self {
            Kind::Batch => "batch",
            Kind::Train => "train",
            Kind::Notebook => "notebook",
        }
    }
}

fn job(
    spec: &GenerateSpec,
    rng: &mut StdRng,
    index: usize,
    width: usize,
    submit_s: u64,
    taint: bool,
) -> Job {
    let weights: Vec<u32> = spec.queues.iter().map(|q| q.weight).collect();
    let queue = spec
        .queues
        .get(sample::weighted(rng, &weights))
        .map_or("default", |q| q.name.as_str());
    // Draws happen in the same order for every job whatever the outcome, so that one key's
    // change moves no other draw.
    let (u_gpu, u_share, u_fail, fail_fraction) = (
        sample::unit(rng),
        sample::unit(rng),
        sample::unit(rng),
        0.1 + 0.9 * sample::unit(rng),
    );
    let size = sample::int(rng, spec.job_size);
    let duration_s = sample::duration(rng, &spec.duration);
    let kind = if spec.gpu_nodes == 0 || u_gpu >= spec.gpu_jobs {
        Kind::Batch
    } else if u_share < spec.gpu_share {
        Kind::Notebook
    } else {
        Kind::Train
    };
    let (replicas, requests, limits) = match kind {
        Kind::Batch => (size, batch_requests(spec, rng), BTreeMap::new()),
        Kind::Train => {
            let (requests, limits) = train_requests(spec, rng);
            (size, requests, limits)
        }
        Kind::Notebook => {
            let (requests, limits) = notebook_requests(spec, rng);
            (1, requests, limits)
        }
    };
    let (key, run_s) = if u_fail < spec.fail_rate {
        let s = (duration_s as f64 * fail_fraction).round().max(1.0) as u64;
        (FAIL_AFTER, s)
    } else {
        (DURATION, duration_s)
    };
    let gpu = !matches!(kind, Kind::Batch);
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            annotations: Some([(key.to_string(), go_duration(run_s))].into()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".to_string(),
                image: Some("busybox".to_string()),
                resources: Some(ResourceRequirements {
                    requests: Some(requests),
                    limits: (!limits.is_empty()).then_some(limits),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }],
            restart_policy: Some("Never".to_string()),
            tolerations: (gpu && taint).then(|| {
                vec![Toleration {
                    key: Some(GPU.to_string()),
                    operator: Some("Exists".to_string()),
                    effect: Some("NoSchedule".to_string()),
                    ..Toleration::default()
                }]
            }),
            ..PodSpec::default()
        }),
    };
    let replicas = i32::try_from(replicas).unwrap_or(i32::MAX);
    let mut job = Job::new(
        &format!("{}-{:0width$}", kind.prefix(), index + 1),
        JobSpec {
            scheduler_name: "volcano".to_string(),
            min_available: Some(replicas),
            queue: queue.to_string(),
            tasks: vec![TaskSpec {
                name: "worker".to_string(),
                replicas,
                template,
                ..TaskSpec::default()
            }],
            network_topology: spec.topology_mode.filter(|_| replicas > 1).map(|mode| {
                NetworkTopologySpec {
                    mode: mode.as_str().to_string(),
                    highest_tier_allowed: Some(i64::from(spec.topology_tier)),
                    ..NetworkTopologySpec::default()
                }
            }),
            ..JobSpec::default()
        },
    );
    job.metadata.namespace = Some(queue.to_string());
    job.metadata.annotations = Some([(SUBMIT_AT.to_string(), go_duration(submit_s))].into());
    job
}

type Resources = BTreeMap<String, Quantity>;

fn batch_requests(spec: &GenerateSpec, rng: &mut StdRng) -> Resources {
    let cpu = sample::int(rng, spec.pod_cpu).clamp(1, spec.node_cpu.max(1));
    let memory = u64::from(cpu)
        .saturating_mul(spec.memory_per_cpu_bytes)
        .min(spec.node_memory_bytes);
    [
        ("cpu".to_string(), quantity(cpu.to_string())),
        ("memory".to_string(), bytes(memory)),
    ]
    .into()
}

/// Whole GPUs, a power of two up to the node's count (or the node's count itself), with
/// three quarters of a GPU's slice of the node's cpu and memory per GPU: the rest of the
/// node stays for the system and for small pods.
fn train_requests(spec: &GenerateSpec, rng: &mut StdRng) -> (Resources, Resources) {
    let per_node = spec.gpus_per_node.max(1);
    let mut choices: Vec<u32> = (0..7)
        .map(|p| 1u32 << p)
        .filter(|g| *g <= per_node)
        .collect();
    if !choices.contains(&per_node) {
        choices.push(per_node);
    }
    let gpus = u64::from(sample::pick(rng, &choices).unwrap_or(1));
    // u64 arithmetic, dividing before multiplying: no product here can overflow.
    let (node_cpu, per_node) = (u64::from(spec.node_cpu), u64::from(per_node));
    let cpu_per_gpu = (node_cpu / per_node * 3 / 4).max(1);
    let memory_per_gpu = (spec.node_memory_bytes / per_node / GI * 3 / 4).max(1) * GI;
    let cpu = (gpus * cpu_per_gpu).min(node_cpu);
    let memory = (gpus * memory_per_gpu).min(spec.node_memory_bytes);
    let gpu: Resources = [(GPU.to_string(), quantity(gpus.to_string()))].into();
    let mut requests: Resources = [
        ("cpu".to_string(), quantity(cpu.to_string())),
        ("memory".to_string(), bytes(memory)),
    ]
    .into();
    // Extended resources cannot be overcommitted: Kubernetes wants limits equal to requests.
    requests.extend(gpu.clone());
    (requests, gpu)
}

/// One vGPU with 10-90% of a device's cores and, drawn apart, of its memory.
fn notebook_requests(spec: &GenerateSpec, rng: &mut StdRng) -> (Resources, Resources) {
    let tenths: Vec<u64> = (1..10).collect();
    let cores = sample::pick(rng, &tenths).unwrap_or(1) * 10;
    let memory_mib = spec.gpu_memory_mib * sample::pick(rng, &tenths).unwrap_or(1) / 10;
    let vgpu: Resources = [
        (VGPU_NUMBER.to_string(), quantity("1")),
        (VGPU_CORES.to_string(), quantity(cores.to_string())),
        (VGPU_MEMORY.to_string(), quantity(memory_mib.to_string())),
    ]
    .into();
    let mut requests: Resources = [
        (
            "cpu".to_string(),
            quantity(spec.node_cpu.min(2).to_string()),
        ),
        (
            "memory".to_string(),
            bytes((8 * GI).min(spec.node_memory_bytes / 2)),
        ),
    ]
    .into();
    requests.extend(vgpu.clone());
    (requests, vgpu)
}
