//! No pod the scheduler binds ever breaks a required placement rule of Kubernetes, whatever
//! the cluster: inter-pod affinity and anti-affinity (the pod's own and existing pods'),
//! `DoNotSchedule` topology spread and host ports.
//!
//! Random clusters of 2-8 nodes in up to three zones (some nodes without a zone), some pods
//! already running (a few with host ports or anti-affinity of their own), and 1-6 gangs whose
//! members share one rule. Each case runs two sessions, applying the binds between them, and
//! after each one judges every pod bound so far with an independent, naive reading of the
//! rules (`placement_rules/checker.rs`).

mod placement_rules {
    pub mod checker;
}
mod support;

use std::collections::BTreeMap;

use placement_rules::checker::Placed;
use proptest::prelude::*;
use support::*;
use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, Node, NodeStatus, Pod, PodAffinity, PodAffinityTerm,
    PodAntiAffinity, PodSpec, PodStatus, ResourceRequirements, TopologySpreadConstraint,
};
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use volcano_api::keys;
use volcano_api::scheduling::{PodGroup, PodGroupSpec, PodGroupStatus, Queue, QueueSpec};
use volcano_scheduler::conf::DEFAULT_SCHEDULER_CONF;

const HOST: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";
const NS: &str = "team";

/// The rule every member of a gang carries.
#[derive(Debug, Clone)]
enum Rule {
    None,
    /// Required anti-affinity to its own gang on a key.
    AntiAffinity(&'static str),
    /// Required affinity to gang `n`'s pods (possibly its own) on the zone.
    Affinity(usize),
    /// Spread of its own gang over zones, DoNotSchedule.
    Spread(i32),
    /// A host port.
    HostPort(i32, &'static str),
}

#[derive(Debug, Clone)]
struct Gang {
    size: usize,
    min: usize,
    cpu: u32,
    rule: Rule,
}

#[derive(Debug, Clone)]
struct Running {
    node: usize,
    app: usize,
    cpu: u32,
    host_port: bool,
    /// Required anti-affinity of the running pod to gang `n` on the hostname.
    anti_to: Option<usize>,
}

#[derive(Debug, Clone)]
struct Cluster {
    nodes: Vec<(u32, Option<&'static str>)>,
    running: Vec<Running>,
    gangs: Vec<Gang>,
}

fn arb_rule(gangs: usize) -> impl Strategy<Value = Rule> {
    prop_oneof![
        Just(Rule::None),
        prop_oneof![Just(HOST), Just(ZONE)].prop_map(Rule::AntiAffinity),
        (0..gangs).prop_map(Rule::Affinity),
        (1..=2i32).prop_map(Rule::Spread),
        (
            prop_oneof![Just(8080), Just(8081)],
            prop_oneof![Just("TCP"), Just("UDP")]
        )
            .prop_map(|(p, proto)| Rule::HostPort(p, proto)),
    ]
}

fn arb_cluster() -> impl Strategy<Value = Cluster> {
    (2..=8usize, 1..=6usize).prop_flat_map(|(n, g)| {
        let zone = prop_oneof![
            3 => Just(Some("a")),
            3 => Just(Some("b")),
            2 => Just(Some("c")),
            1 => Just(None),
        ];
        let nodes = prop::collection::vec((4..=12u32, zone), n);
        let running = prop::collection::vec(
            (
                0..n,
                0..=g,
                1..=2u32,
                prop::bool::weighted(0.2),
                prop::option::weighted(0.2, 0..g),
            )
                .prop_map(|(node, app, cpu, host_port, anti_to)| Running {
                    node,
                    app,
                    cpu,
                    host_port,
                    anti_to,
                }),
            0..6,
        );
        let gangs = prop::collection::vec(
            (1..=4usize, 1..=2u32, arb_rule(g), prop::bool::ANY).prop_map(
                |(size, cpu, rule, whole)| Gang {
                    size,
                    min: if whole { size } else { 1 },
                    cpu,
                    rule,
                },
            ),
            g,
        );
        (nodes, running, gangs).prop_map(|(nodes, running, gangs)| Cluster {
            nodes,
            running,
            gangs,
        })
    })
}

fn app(i: usize) -> String {
    format!("g{i}")
}

fn own(i: usize) -> LabelSelector {
    LabelSelector {
        match_labels: Some([("app".to_string(), app(i))].into()),
        ..LabelSelector::default()
    }
}

fn term(i: usize, key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(own(i)),
        topology_key: key.to_string(),
        ..PodAffinityTerm::default()
    }
}

fn node(i: usize, cpu: u32, zone: Option<&str>) -> Node {
    let name = format!("n{i}");
    let mut labels = BTreeMap::from([(HOST.to_string(), name.clone())]);
    if let Some(z) = zone {
        labels.insert(ZONE.to_string(), z.to_string());
    }
    let alloc = BTreeMap::from([
        ("cpu".to_string(), Quantity(cpu.to_string())),
        ("memory".to_string(), Quantity("64Gi".into())),
        ("pods".to_string(), Quantity("110".into())),
    ]);
    Node {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        status: Some(NodeStatus {
            allocatable: Some(alloc),
            ..NodeStatus::default()
        }),
        ..Node::default()
    }
}

fn pod(name: String, app_label: String, cpu: u32, group: Option<String>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(NS.to_string()),
            uid: Some(format!("uid-{name}")),
            labels: Some([("app".to_string(), app_label)].into()),
            annotations: group.map(|g| [(keys::GROUP_NAME.to_string(), g)].into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            scheduler_name: Some(keys::DEFAULT_SCHEDULER_NAME.to_string()),
            containers: vec![Container {
                name: "main".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([
                        ("cpu".to_string(), Quantity(cpu.to_string())),
                        ("memory".to_string(), Quantity("1Gi".into())),
                    ])),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some("Pending".into()),
            ..PodStatus::default()
        }),
    }
}

fn with_port(p: &mut Pod, port: i32, proto: &str) {
    if let Some(c) = p.spec.as_mut().and_then(|s| s.containers.first_mut()) {
        c.ports = Some(vec![ContainerPort {
            container_port: port,
            host_port: Some(port),
            protocol: Some(proto.to_string()),
            ..ContainerPort::default()
        }]);
    }
}

fn objects(c: &Cluster) -> Objects {
    let mut objs = Objects {
        nodes: c
            .nodes
            .iter()
            .enumerate()
            .map(|(i, (cpu, zone))| node(i, *cpu, *zone))
            .collect(),
        queues: vec![Queue::new(
            "default",
            QueueSpec {
                weight: 1,
                ..QueueSpec::default()
            },
        )],
        ..Objects::default()
    };
    for (i, r) in c.running.iter().enumerate() {
        let mut p = pod(format!("run-{i}"), app(r.app), r.cpu, None);
        if let Some(s) = p.spec.as_mut() {
            s.node_name = Some(format!("n{}", r.node));
            s.scheduler_name = Some("default-scheduler".into());
            if let Some(g) = r.anti_to {
                s.affinity = Some(Affinity {
                    pod_anti_affinity: Some(PodAntiAffinity {
                        required_during_scheduling_ignored_during_execution: Some(vec![term(
                            g, HOST,
                        )]),
                        ..PodAntiAffinity::default()
                    }),
                    ..Affinity::default()
                });
            }
        }
        if let Some(st) = p.status.as_mut() {
            st.phase = Some("Running".into());
        }
        if r.host_port {
            with_port(&mut p, 8080, "TCP");
        }
        objs.pods.push(p.into());
    }
    for (g, gang) in c.gangs.iter().enumerate() {
        let name = format!("pg{g}");
        let mut pg = PodGroup::new(
            &name,
            PodGroupSpec {
                min_member: gang.min as i32,
                queue: "default".into(),
                ..PodGroupSpec::default()
            },
        );
        pg.metadata.namespace = Some(NS.to_string());
        pg.status = Some(PodGroupStatus {
            phase: "Inqueue".into(),
            ..PodGroupStatus::default()
        });
        objs.pod_groups.push(pg);
        for k in 0..gang.size {
            let mut p = pod(format!("{name}-{k}"), app(g), gang.cpu, Some(name.clone()));
            let spec = p.spec.as_mut();
            match (&gang.rule, spec) {
                (Rule::AntiAffinity(key), Some(s)) => {
                    s.affinity = Some(Affinity {
                        pod_anti_affinity: Some(PodAntiAffinity {
                            required_during_scheduling_ignored_during_execution: Some(vec![term(
                                g, key,
                            )]),
                            ..PodAntiAffinity::default()
                        }),
                        ..Affinity::default()
                    })
                }
                (Rule::Affinity(to), Some(s)) => {
                    s.affinity = Some(Affinity {
                        pod_affinity: Some(PodAffinity {
                            required_during_scheduling_ignored_during_execution: Some(vec![term(
                                *to, ZONE,
                            )]),
                            ..PodAffinity::default()
                        }),
                        ..Affinity::default()
                    })
                }
                (Rule::Spread(skew), Some(s)) => {
                    s.topology_spread_constraints = Some(vec![TopologySpreadConstraint {
                        max_skew: *skew,
                        topology_key: ZONE.into(),
                        when_unsatisfiable: "DoNotSchedule".into(),
                        label_selector: Some(own(g)),
                        ..TopologySpreadConstraint::default()
                    }])
                }
                (Rule::HostPort(port, proto), Some(_)) => with_port(&mut p, *port, proto),
                _ => {}
            }
            objs.pods.push(p.into());
        }
    }
    objs
}

/// Pods of the gangs that are on a node.
fn bound(objs: &Objects) -> Vec<(Pod, String)> {
    objs.pods
        .iter()
        .filter(|p| {
            p.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("pg"))
        })
        .filter_map(|p| {
            let node = p.spec.as_ref()?.node_name.clone()?;
            Some(((**p).clone(), node))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_bound_pod_breaks_a_required_rule(c in arb_cluster()) {
        let conf = conf(DEFAULT_SCHEDULER_CONF);
        let mut objs = objects(&c);
        for i in 1..=2 {
            let d = run_session_n(&objs, &conf, i);
            apply(&mut objs, &d);
            let placed = Placed::of(&objs);
            let mut broken = Vec::new();
            for (p, node) in bound(&objs) {
                broken.extend(placed.broken(&p, &node));
                broken.extend(placed.skew_broken(&p, &node));
            }
            prop_assert!(broken.is_empty(), "after session {i}:\n{}", broken.join("\n"));
        }
    }
}
