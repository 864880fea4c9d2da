//! The node-level faults of a run: nodes deleted and back later, nodes whose allocatable
//! drops below what their pods use, pods bound straight to a node by another scheduler. Drawn
//! from the run's fault seed when the run starts; each undone when the fault window closes.
//! Each waits on the clock as an [`Event::Fault`] carrying its [`Disruption`].

use std::time::Duration;

use volcano_api::k8s_openapi::api::core::v1::{
    Container, Node, Pod, PodSpec, ResourceRequirements,
};
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::resources::{format_amount, parse_resource_list};
use volcano_api::scheduling::ResourceList;
use volcano_controllers::change::Change;
use volcano_controllers::time::Instant;

use super::annotations::DURATION;
use super::clock::{Clock, Disruption, Event};
use super::kubelet::{Kubelets, is_terminal, node_of};
use crate::faults::{Faults, accounting};
use crate::store::Store;
use volcano_api::{NamespacedName, WatchEvent};

/// The scheduler name of the pods another scheduler binds.
pub const FOREIGN_SCHEDULER: &str = "default-scheduler";

/// How long a foreign pod runs.
const FOREIGN_POD_RUNS: Duration = Duration::from_secs(120);

/// Schedules the plan's node faults at random instants of the window, on random nodes.
pub fn schedule(faults: &mut Faults, nodes: &[Node], clock: &mut Clock) {
    let names: Vec<String> = nodes
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    if names.is_empty() {
        return;
    }
    let plan = faults.plan().clone();
    let pick = |faults: &mut Faults| names[faults.below(names.len())].clone();
    for _ in 0..plan.node_vanish {
        let (at, node) = (faults.instant_in_window(), pick(faults));
        clock.schedule(at, Event::Fault(Disruption::Vanish(node)));
    }
    for _ in 0..plan.node_shrink {
        let (at, node) = (faults.instant_in_window(), pick(faults));
        clock.schedule(at, Event::Fault(Disruption::Shrink(node)));
    }
    for _ in 0..plan.foreign_pods {
        let (at, node) = (faults.instant_in_window(), pick(faults));
        clock.schedule(at, Event::Fault(Disruption::ForeignPod(node)));
    }
}

/// Carries out `d` now, scheduling its undoing at the end of `window`.
pub fn fire(
    d: Disruption,
    store: &mut Store,
    kubelets: &mut Kubelets,
    clock: &mut Clock,
    faults: &mut Faults,
    out: &mut Vec<WatchEvent>,
) {
    let now = clock.now();
    let heal = Instant(faults.plan().window.max(now.0));
    match d {
        Disruption::Vanish(name) => {
            let Ok(WatchEvent::Node(Some(node), _)) =
                store.delete::<Node>(&NamespacedName::cluster(name.as_str()))
            else {
                return;
            };
            faults.counts.nodes_vanished += 1;
            kubelets.set_down(&name, true);
            kubelets.lose_pods_on(store, &name, now, out);
            clock.schedule(heal, Event::Fault(Disruption::Return(node)));
        }
        Disruption::Return(node) => {
            let name = node.metadata.name.clone().unwrap_or_default();
            if position(store, &name).is_none() {
                store.upsert(*node);
                kubelets.set_down(&name, false);
            }
        }
        Disruption::Shrink(name) => {
            let used = requested_on(store, &name);
            let Some(i) = position(store, &name) else {
                return;
            };
            let Some(before) = store.objects().nodes[i]
                .status
                .as_ref()
                .and_then(|s| s.allocatable.clone())
            else {
                return;
            };
            let mut shrunk = before.clone();
            for (resource, amount) in parse_resource_list(&before).unwrap_or_default() {
                if resource == "cpu" || resource == "memory" {
                    let in_use = used.get(&resource).copied().unwrap_or(0);
                    let half = if in_use > 0 { in_use / 2 } else { amount / 2 };
                    shrunk.insert(resource.clone(), Quantity(format_amount(&resource, half)));
                }
            }
            let _ = store.modify::<Node>(&NamespacedName::cluster(name.as_str()), |n| {
                n.status.get_or_insert_with(Default::default).allocatable = Some(shrunk)
            });
            faults.counts.nodes_shrunk += 1;
            clock.schedule(heal, Event::Fault(Disruption::Restore(name, before)));
        }
        Disruption::Restore(name, allocatable) => {
            let _ = store.modify::<Node>(&NamespacedName::cluster(name.as_str()), |n| {
                n.status.get_or_insert_with(Default::default).allocatable = Some(allocatable)
            });
        }
        Disruption::ForeignPod(name) => {
            let Some(i) = position(store, &name) else {
                return;
            };
            let allocatable = store.objects().nodes[i]
                .status
                .as_ref()
                .and_then(|s| s.allocatable.clone())
                .unwrap_or_default();
            faults.counts.foreign_pods += 1;
            let pod = foreign_pod(faults.counts.foreign_pods, &name, &allocatable);
            let pod_name = pod.metadata.name.clone().unwrap_or_default();
            out.extend(
                store
                    .apply(&Change::CreatePod(Box::new(pod)), now)
                    .unwrap_or_default(),
            );
            kubelets.adopt(store, clock, "default", &pod_name, out);
        }
    }
}

fn position(store: &Store, node: &str) -> Option<usize> {
    store
        .indexed()
        .position::<Node>(&NamespacedName::cluster(node))
}

/// Σ requests (canonical units) of the pods occupying `node`.
fn requested_on(store: &Store, node: &str) -> accounting::Res {
    let mut sum = accounting::Res::new();
    for p in &store.objects().pods {
        if node_of(p) == Some(node) && !is_terminal(p) {
            accounting::add(&mut sum, &accounting::pod_request(p));
        }
    }
    sum
}

/// The `n`-th pod another scheduler binds to `node`: half its CPU and memory, for two minutes.
fn foreign_pod(n: u64, node: &str, allocatable: &ResourceList) -> Pod {
    let half: ResourceList = parse_resource_list(allocatable)
        .unwrap_or_default()
        .into_iter()
        .filter(|(r, _)| r == "cpu" || r == "memory")
        .map(|(r, v)| {
            let q = Quantity(format_amount(&r, v / 2));
            (r, q)
        })
        .collect();
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("foreign-{n}")),
            namespace: Some("default".to_string()),
            annotations: Some(
                [(
                    DURATION.to_string(),
                    format!("{}s", FOREIGN_POD_RUNS.as_secs()),
                )]
                .into(),
            ),
            ..Default::default()
        },
        spec: Some(PodSpec {
            scheduler_name: Some(FOREIGN_SCHEDULER.to_string()),
            node_name: Some(node.to_string()),
            containers: vec![Container {
                name: "main".to_string(),
                resources: Some(ResourceRequirements {
                    requests: Some(half),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}
