//! The synthetic cluster of `volcano bench`: uniform nodes (a share with GPUs), weighted-equal
//! queues, PodGroups with their pods pending, and pods already running on the nodes; with
//! `topology`, HyperNodes over the nodes in order and a `networkTopology` on every pending
//! PodGroup.
//!
//! Sizes are chosen so the default workloads fit: a pending pod asks for 1 or 2 CPUs and 2 or
//! 4 GiB (one GPU on a GPU job), a running pod for 1 CPU and 2 GiB, and a node has 32 CPUs,
//! 128 GiB and room for 110 pods. Every job draws its size from its own stream of the seed.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{
    Container, Node, NodeStatus, Pod, PodSpec, PodStatus, ResourceRequirements,
};
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::keys;
use volcano_api::scheduling::{
    NetworkTopologySpec, PodGroup, PodGroupSpec, PodGroupStatus, Queue, QueueSpec,
};

use super::BenchSpec;
use super::constraint::{self, HOSTNAME_LABEL, ZONE_LABEL};

/// Namespace of every generated object.
pub const NAMESPACE: &str = "bench";
/// CPUs of a node.
pub const NODE_CPU: u32 = 32;
/// Memory of a node, in GiB.
pub const NODE_MEMORY_GI: u32 = 128;
/// GPUs of a GPU node.
pub const NODE_GPUS: u32 = 8;
/// Pods in one PodGroup of already-running pods.
pub const RUNNING_GROUP: usize = 10;
const NVIDIA_GPU: &str = "nvidia.com/gpu";

/// Every object of the workload.
pub fn build(spec: &BenchSpec) -> Objects {
    let mut objects = Objects {
        nodes: (0..spec.nodes)
            .map(|i| {
                node(
                    i,
                    is_gpu(i, spec),
                    spec.constraint.is_some_and(|c| c.needs_zones()),
                )
            })
            .collect(),
        queues: (0..spec.queues.max(1)).map(queue).collect(),
        ..Objects::default()
    };
    if !spec.topology.is_empty() {
        let names: Vec<String> = (0..spec.nodes).map(node_name).collect();
        objects.hyper_nodes = crate::generate::hyper_nodes_over(&names, &spec.topology);
    }
    running(spec, &mut objects);
    for j in 0..spec.jobs {
        pending_job(spec, j, &mut objects);
    }
    objects
}

/// Whether node or job `i` of a run takes GPUs: an even spread of `--gpu` of them.
fn is_gpu(i: usize, spec: &BenchSpec) -> bool {
    let share = spec.gpu.clamp(0.0, 1.0);
    // Index i is a GPU one when the running count of GPU items steps up at i.
    ((i + 1) as f64 * share).floor() > (i as f64 * share).floor()
}

/// The name of node `i`.
pub fn node_name(i: usize) -> String {
    format!("node-{i:05}")
}

fn quantity(s: impl Into<String>) -> Quantity {
    Quantity(s.into())
}

/// Node `i`; `zoned` gives it a zone label (only runs with a zone rule have them, so other
/// runs keep the nodes they always had).
fn node(i: usize, gpu: bool, zoned: bool) -> Node {
    let name = node_name(i);
    let mut allocatable: BTreeMap<String, Quantity> = [
        ("cpu".to_string(), quantity(NODE_CPU.to_string())),
        (
            "memory".to_string(),
            quantity(format!("{NODE_MEMORY_GI}Gi")),
        ),
        ("pods".to_string(), quantity("110")),
    ]
    .into();
    if gpu {
        allocatable.insert(NVIDIA_GPU.to_string(), quantity(NODE_GPUS.to_string()));
    }
    let mut labels = BTreeMap::from([(HOSTNAME_LABEL.to_string(), name.clone())]);
    if zoned {
        labels.insert(ZONE_LABEL.to_string(), constraint::zone_of(i));
    }
    Node {
        metadata: ObjectMeta {
            labels: Some(labels),
            name: Some(name),
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

/// The name of queue `i`.
pub fn queue_name(i: usize) -> String {
    format!("queue-{i}")
}

fn queue(i: usize) -> Queue {
    let mut q = Queue::new(
        &queue_name(i),
        QueueSpec {
            weight: 1,
            ..QueueSpec::default()
        },
    );
    q.spec.reclaimable = Some(true);
    q
}

fn pod_group(name: &str, queue: String, min: usize, phase: &str) -> PodGroup {
    let mut pg = PodGroup::new(
        name,
        PodGroupSpec {
            min_member: i32::try_from(min).unwrap_or(i32::MAX),
            queue,
            ..PodGroupSpec::default()
        },
    );
    pg.metadata.namespace = Some(NAMESPACE.to_string());
    pg.metadata.uid = Some(format!("pg-{name}"));
    if !phase.is_empty() {
        pg.status = Some(PodGroupStatus {
            phase: phase.to_string(),
            ..PodGroupStatus::default()
        });
    }
    pg
}

/// A pod of `group` asking for `cpu` cores, `mem_gi` GiB and `gpus` GPUs.
fn pod(group: &str, index: usize, cpu: u32, mem_gi: u32, gpus: u32) -> Pod {
    let name = format!("{group}-task-{index}");
    let mut requests: BTreeMap<String, Quantity> = [
        ("cpu".to_string(), quantity(cpu.to_string())),
        ("memory".to_string(), quantity(format!("{mem_gi}Gi"))),
    ]
    .into();
    if gpus > 0 {
        requests.insert(NVIDIA_GPU.to_string(), quantity(gpus.to_string()));
    }
    Pod {
        metadata: ObjectMeta {
            uid: Some(format!("pod-{name}")),
            name: Some(name),
            namespace: Some(NAMESPACE.to_string()),
            annotations: Some([(keys::GROUP_NAME.to_string(), group.to_string())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            scheduler_name: Some(keys::DEFAULT_SCHEDULER_NAME.to_string()),
            containers: vec![Container {
                name: "main".to_string(),
                image: Some("busybox".to_string()),
                resources: Some(ResourceRequirements {
                    requests: Some(requests),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some("Pending".to_string()),
            ..PodStatus::default()
        }),
    }
}

/// `--running` pods in PodGroups of [`RUNNING_GROUP`], spread over the nodes round-robin.
fn running(spec: &BenchSpec, objects: &mut Objects) {
    if spec.nodes == 0 {
        return;
    }
    let groups = spec.running.div_ceil(RUNNING_GROUP);
    let queues = spec.queues.max(1);
    let mut placed = 0;
    for g in 0..groups {
        let name = format!("running-{g:05}");
        let size = RUNNING_GROUP.min(spec.running - placed);
        objects
            .pod_groups
            .push(pod_group(&name, queue_name(g % queues), size, "Running"));
        for k in 0..size {
            let mut p = pod(&name, k, 1, 2, 0);
            if let Some(s) = p.spec.as_mut() {
                s.node_name = Some(node_name(placed % spec.nodes));
            }
            if let Some(s) = p.status.as_mut() {
                s.phase = Some("Running".to_string());
            }
            objects.pods.push(p.into());
            placed += 1;
        }
    }
}

fn pending_job(spec: &BenchSpec, j: usize, objects: &mut Objects) {
    let mut rng = StdRng::seed_from_u64(crate::generate::job_seed(spec.seed, j as u64));
    let cpu = rng.random_range(1..=2);
    let mem_gi = 2 * rng.random_range(1..=2);
    let gpus = u32::from(is_gpu(j, spec));
    let name = format!("job-{j:05}");
    let gang = spec.gang.max(1);
    let mut pg = pod_group(&name, queue_name(j % spec.queues.max(1)), gang, "");
    pg.spec.network_topology = spec.network_topology.map(|t| NetworkTopologySpec {
        mode: t.mode.as_str().to_string(),
        highest_tier_allowed: Some(i64::from(t.highest_tier_allowed)),
        ..NetworkTopologySpec::default()
    });
    objects.pod_groups.push(pg);
    objects.pods.extend((0..gang).map(|k| {
        let mut p = pod(&name, k, cpu, mem_gi, gpus);
        if let Some(c) = spec.constraint {
            c.apply(&mut p, &name);
        }
        p.into()
    }));
}
