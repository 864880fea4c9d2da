//! The random clusters the properties run on: nodes (some already carrying pods, some out of
//! sync), queues (weights, guarantees, capabilities), gangs (random minMember, requests,
//! BestEffort pods, node selectors, tolerations, members already running), and wild inputs
//! no valid cluster would hold.

use proptest::prelude::*;
use std::sync::Arc;
use volcano_api::Objects;
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::scheduling::ResourceList;
use volcano_testkit::build::*;

const ZONES: [&str; 4] = ["a", "b", "c", "nowhere"];
const TAINT: (&str, &str, &str) = ("dedicated", "batch", "NoSchedule");

#[derive(Debug, Clone)]
pub struct GenPod {
    cpu_milli: i64,
    mem_mi: i64,
    gpu: i64,
    /// Index into [`ZONES`] of a `zone` nodeSelector.
    zone: Option<usize>,
    tolerates: bool,
    /// Index (modulo the node count) of the node it already runs on.
    running_on: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct GenExisting {
    cpu_milli: i64,
    mem_mi: i64,
    gpu: i64,
    running: bool,
    other_scheduler: bool,
}

#[derive(Debug, Clone)]
pub struct GenNode {
    cpu_milli: i64,
    mem_gi: i64,
    gpu: i64,
    max_pods: Option<i64>,
    zone: Option<usize>,
    tainted: bool,
    existing: Vec<GenExisting>,
}

#[derive(Debug, Clone)]
pub struct GenQueue {
    weight: i32,
    /// CPU (milli-cores) and memory (GiB) guaranteed.
    guarantee: Option<(i64, i64)>,
    cap_cpu_milli: Option<i64>,
    cap_mem_gi: Option<i64>,
    cap_gpu: Option<i64>,
}

#[derive(Debug, Clone)]
pub struct GenGang {
    queue: usize,
    min: i32,
    min_resources: bool,
    pods: Vec<GenPod>,
}

#[derive(Debug, Clone)]
pub struct GenCluster {
    nodes: Vec<GenNode>,
    queues: Vec<GenQueue>,
    gangs: Vec<GenGang>,
}

fn arb_pod() -> impl Strategy<Value = GenPod> {
    let requests = prop_oneof![
        1 => Just((0i64, 0i64, 0i64)),
        5 => (1i64..=40, 0i64..=64, prop_oneof![6 => Just(0i64), 1 => 1i64..=2])
            .prop_map(|(c, m, g)| (c * 100, m * 128, g)),
    ];
    (
        requests,
        prop::option::weighted(0.2, 0usize..ZONES.len()),
        prop::bool::weighted(0.5),
        prop::option::weighted(0.1, 0usize..12),
    )
        .prop_map(
            |((cpu_milli, mem_mi, gpu), zone, tolerates, running_on)| GenPod {
                cpu_milli,
                mem_mi,
                gpu,
                zone,
                tolerates,
                running_on,
            },
        )
}

fn arb_existing() -> impl Strategy<Value = GenExisting> {
    (
        0i64..=8,
        0i64..=16,
        prop_oneof![8 => Just(0i64), 1 => 1i64..=2],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(c, m, gpu, running, other_scheduler)| GenExisting {
            cpu_milli: c * 500,
            mem_mi: m * 512,
            gpu,
            running,
            other_scheduler,
        })
}

fn arb_node() -> impl Strategy<Value = GenNode> {
    (
        2i64..=32,
        1i64..=64,
        prop_oneof![3 => Just(0i64), 1 => 1i64..=4],
        prop::option::weighted(0.15, 1i64..=8),
        prop::option::weighted(0.6, 0usize..3),
        prop::bool::weighted(0.2),
        prop::collection::vec(arb_existing(), 0..=2),
    )
        .prop_map(
            |(c, mem_gi, gpu, max_pods, zone, tainted, existing)| GenNode {
                cpu_milli: c * 500,
                mem_gi,
                gpu,
                max_pods,
                zone,
                tainted,
                existing,
            },
        )
}

fn arb_queue() -> impl Strategy<Value = GenQueue> {
    let cap = prop::option::weighted(
        0.4,
        (
            prop::option::of((1i64..=40).prop_map(|c| c * 500)),
            prop::option::of(1i64..=64),
            prop::option::weighted(0.3, 0i64..=4),
        ),
    );
    let guarantee = prop::option::weighted(0.3, ((1i64..=16).prop_map(|c| c * 500), 1i64..=32));
    (1i32..=5, cap, guarantee).prop_map(|(weight, cap, guarantee)| {
        let (cap_cpu_milli, cap_mem_gi, cap_gpu) = cap.unwrap_or((None, None, None));
        GenQueue {
            weight,
            guarantee,
            cap_cpu_milli,
            cap_mem_gi,
            cap_gpu,
        }
    })
}

fn arb_gang() -> impl Strategy<Value = GenGang> {
    (
        prop::collection::vec(arb_pod(), 1..=6),
        0usize..4,
        prop::bool::weighted(0.3),
    )
        .prop_flat_map(|(pods, queue, min_resources)| {
            let n = pods.len() as i32;
            (1..=n).prop_map(move |min| GenGang {
                queue,
                min,
                min_resources,
                pods: pods.clone(),
            })
        })
}

pub fn arb_cluster() -> impl Strategy<Value = GenCluster> {
    (
        prop::collection::vec(arb_node(), 1..=12),
        prop::collection::vec(arb_queue(), 1..=4),
        prop::collection::vec(arb_gang(), 1..=8),
    )
        .prop_map(|(nodes, queues, gangs)| GenCluster {
            nodes,
            queues,
            gangs,
        })
}

impl GenPod {
    fn template(&self) -> Template {
        let mut t = template()
            .cpu_milli(self.cpu_milli)
            .mem(self.mem_mi * MI)
            .gpu(self.gpu);
        if let Some(z) = self.zone {
            t = t.node_selector("zone", ZONES[z]);
        }
        if self.tolerates {
            t = t.toleration(TAINT.0, TAINT.1, TAINT.2);
        }
        t
    }
}

impl GenCluster {
    pub fn objects(&self) -> Objects {
        let mut c = cluster();
        for (i, n) in self.nodes.iter().enumerate() {
            let name = format!("n{i}");
            let mut b = node(&name)
                .cpu_milli(n.cpu_milli)
                .mem_gi(n.mem_gi)
                .gpu(n.gpu);
            if let Some(p) = n.max_pods {
                b = b.max_pods(p);
            }
            if let Some(z) = n.zone {
                b = b.label("zone", ZONES[z]);
            }
            if n.tainted {
                b = b.taint(TAINT.0, TAINT.1, TAINT.2);
            }
            c = c.with(b);
            for (k, e) in n.existing.iter().enumerate() {
                let mut p = pod("sys", &format!("ext-{i}-{k}"))
                    .template(
                        template()
                            .cpu_milli(e.cpu_milli)
                            .mem(e.mem_mi * MI)
                            .gpu(e.gpu),
                    )
                    .on(&name);
                if e.running {
                    p = p.running();
                }
                if e.other_scheduler {
                    p = p.scheduler("default-scheduler");
                }
                c = c.with(p);
            }
        }
        for (i, q) in self.queues.iter().enumerate() {
            let mut b = queue(&format!("q{i}")).weight(q.weight);
            if let Some((cpu, mem_gi)) = q.guarantee {
                b = b.guarantee(cpu, mem_gi * GI);
            }
            if let Some(v) = q.cap_cpu_milli {
                b = b.capability_cpu(v);
            }
            if let Some(v) = q.cap_mem_gi {
                b = b.capability_mem(v * GI);
            }
            if let Some(v) = q.cap_gpu {
                b = b.capability_gpu(v);
            }
            c = c.with(b);
        }
        let mut objs = c.objects();
        for (i, g) in self.gangs.iter().enumerate() {
            let name = format!("pg{i}");
            let mut b = gang("team", &name)
                .queue(&format!("q{}", g.queue % self.queues.len()))
                .min(g.min);
            for p in &g.pods {
                b = b.pods_like(1, p.template());
            }
            if g.min_resources {
                b = b.with_min_resources();
            }
            let (pg, mut pods) = b.build();
            for (p, gp) in pods.iter_mut().zip(&g.pods) {
                if let (Some(n), Some(spec)) = (gp.running_on, p.spec.as_mut()) {
                    spec.node_name = Some(format!("n{}", n % self.nodes.len()));
                    if let Some(st) = p.status.as_mut() {
                        st.phase = Some("Running".into());
                    }
                }
            }
            objs.pod_groups.push(pg);
            objs.pods.extend(pods.into_iter().map(Arc::new));
        }
        objs
    }
}

/// Inputs no valid cluster would hold but a real one might show for a moment: nodes without
/// status or with nothing allocatable, pods bound to unknown nodes, minMember above the pod
/// count or zero, PodGroups in missing queues, zero capabilities, finished pods.
#[derive(Debug, Clone)]
pub struct Wild {
    base: GenCluster,
    strip_status: Vec<usize>,
    ghost_bound: Vec<usize>,
    min_shift: Vec<i32>,
    missing_queue: Vec<usize>,
    zero_capability: bool,
    finished: Vec<(usize, bool)>,
}

pub fn arb_wild() -> impl Strategy<Value = Wild> {
    (
        arb_cluster(),
        prop::collection::vec(0usize..12, 0..=2),
        prop::collection::vec(0usize..40, 0..=3),
        prop::collection::vec(-2i32..=3, 0..=8),
        prop::collection::vec(0usize..8, 0..=2),
        any::<bool>(),
        prop::collection::vec((0usize..40, any::<bool>()), 0..=4),
    )
        .prop_map(
            |(
                base,
                strip_status,
                ghost_bound,
                min_shift,
                missing_queue,
                zero_capability,
                finished,
            )| {
                Wild {
                    base,
                    strip_status,
                    ghost_bound,
                    min_shift,
                    missing_queue,
                    zero_capability,
                    finished,
                }
            },
        )
}

impl Wild {
    pub fn objects(&self) -> Objects {
        let mut objs = self.base.objects();
        let n_nodes = objs.nodes.len();
        for &i in &self.strip_status {
            if i % 2 == 0 {
                objs.nodes[i % n_nodes].status = None;
            } else if let Some(st) = objs.nodes[i % n_nodes].status.as_mut() {
                st.allocatable = Some(ResourceList::new());
            }
        }
        let n_pods = objs.pods.len();
        for &i in &self.ghost_bound {
            if let Some(spec) = Arc::make_mut(&mut objs.pods[i % n_pods]).spec.as_mut() {
                spec.node_name = Some("ghost".into());
            }
        }
        for (&i, pg) in self.min_shift.iter().zip(objs.pod_groups.iter_mut()) {
            pg.spec.min_member = (pg.spec.min_member + i).max(0);
        }
        let n_pgs = objs.pod_groups.len();
        for &i in &self.missing_queue {
            objs.pod_groups[i % n_pgs].spec.queue = "missing".into();
        }
        if self.zero_capability {
            objs.queues[0].spec.capability = Some(ResourceList::from([
                ("cpu".to_string(), Quantity("0".into())),
                (GPU.to_string(), Quantity("0".into())),
            ]));
        }
        for &(i, ok) in &self.finished {
            if let Some(st) = Arc::make_mut(&mut objs.pods[i % n_pods]).status.as_mut() {
                st.phase = Some(if ok { "Succeeded" } else { "Failed" }.into());
            }
        }
        objs
    }
}
