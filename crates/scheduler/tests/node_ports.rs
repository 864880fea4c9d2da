//! Host ports through whole sessions: a port taken on a node keeps a second pod asking for it
//! off that node, with kube-scheduler's words; preemption frees a port held by a pod of lower
//! priority; and, whatever the cluster, no node ends up with two pods holding one port.

mod support;

use std::collections::BTreeMap;

use proptest::prelude::*;
use support::*;
use volcano_api::k8s_openapi::api::core::v1::{ContainerPort, Pod};
use volcano_api::{NamespacedName, Objects};
use volcano_scheduler::conf::SchedulerConf;
use volcano_testkit::build::*;
use volcano_testkit::conf::evicting;

const NO_FREE_PORTS: &str = "node(s) didn't have free ports for the requested pod ports";

/// Gives every container of the pod the host port `port` (TCP, every address).
fn with_host_port(mut p: Pod, port: i32) -> Pod {
    for c in p.spec.iter_mut().flat_map(|s| s.containers.iter_mut()) {
        c.ports = Some(vec![ContainerPort {
            container_port: port,
            host_port: Some(port),
            ..Default::default()
        }]);
    }
    p
}

/// Adds a gang whose pods all ask `port` on the host; `running_on` binds them there.
fn add_gang(
    objs: &mut Objects,
    name: &str,
    pods: usize,
    port: i32,
    class: Option<&str>,
    running_on: Option<&str>,
) {
    let mut g = gang("ns", name).queue("q").min(1).pods(pods, 500, GI);
    if let Some(c) = class {
        g = g.priority_class(c);
    }
    let (mut pg, group_pods) = g.build();
    if running_on.is_some() {
        pg.status = Some(volcano_api::scheduling::PodGroupStatus {
            phase: "Running".into(),
            ..Default::default()
        });
    }
    objs.pod_groups.push(pg);
    for p in group_pods {
        let mut p = with_host_port(p, port);
        if let Some(n) = running_on {
            if let Some(spec) = p.spec.as_mut() {
                spec.node_name = Some(n.into());
            }
            if let Some(st) = p.status.as_mut() {
                st.phase = Some("Running".into());
            }
        }
        objs.pods.push(p.into());
    }
}

fn one_node() -> Objects {
    cluster()
        .with(queue("q"))
        .with(priority_class("low", 10))
        .with(priority_class("high", 1000))
        .with(node("node-1").cpu(8).mem_gi(16))
        .objects()
}

#[test]
fn a_second_pod_asking_a_taken_port_stays_pending_with_kubes_reason() {
    let mut objs = one_node();
    add_gang(&mut objs, "first", 1, 8080, None, Some("node-1"));
    add_gang(&mut objs, "second", 1, 8080, None, None);
    add_gang(&mut objs, "other-port", 1, 8081, None, None);
    let d = run_session_n(&objs, &SchedulerConf::default_conf(), 0);
    let bound: Vec<&str> = d.binds.iter().map(|(p, _)| p.name.as_str()).collect();
    assert_eq!(bound, ["other-port-0"]);
    let why = &d.unschedulable[&key("ns", "second")].message;
    assert!(
        why.contains(&format!("1 {NO_FREE_PORTS}")),
        "unexpected reason: {why}"
    );
}

#[test]
fn two_pending_pods_asking_one_port_do_not_both_land_in_one_session() {
    let mut objs = one_node();
    add_gang(&mut objs, "pair", 2, 9000, None, None);
    let d = run_session_n(&objs, &SchedulerConf::default_conf(), 0);
    assert_eq!(d.binds.len(), 1, "binds: {:?}", d.binds);
}

#[test]
fn preemption_frees_a_port_held_by_a_lower_priority_pod() {
    let mut objs = one_node();
    add_gang(&mut objs, "holder", 1, 8080, Some("low"), Some("node-1"));
    add_gang(&mut objs, "urgent", 1, 8080, Some("high"), None);
    if let Some(pg) = objs
        .pod_groups
        .iter_mut()
        .find(|g| g.metadata.name.as_deref() == Some("urgent"))
    {
        pg.status = Some(volcano_api::scheduling::PodGroupStatus {
            phase: "Inqueue".into(),
            ..Default::default()
        });
    }
    let d = run_session_n(&objs, &conf(evicting()), 0);
    assert_eq!(d.evictions, [key("ns", "holder-0")]);
    let pipelined: Vec<&NamespacedName> = d.pipelined.iter().map(|(p, _)| p).collect();
    assert_eq!(pipelined, [&key("ns", "urgent-0")]);
}

#[test]
fn preemption_does_not_evict_a_pod_of_equal_priority_for_a_port() {
    let mut objs = one_node();
    add_gang(&mut objs, "holder", 1, 8080, Some("high"), Some("node-1"));
    add_gang(&mut objs, "urgent", 1, 8080, Some("high"), None);
    let d = run_session_n(&objs, &conf(evicting()), 0);
    assert!(d.evictions.is_empty(), "evicted {:?}", d.evictions);
    assert!(d.binds.is_empty() && d.pipelined.is_empty());
}

/// The host port of each container of the pod.
fn ports_of(p: &Pod) -> Vec<i32> {
    p.spec
        .iter()
        .flat_map(|s| &s.containers)
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|cp| cp.host_port)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random nodes, running pods and pending gangs asking a few ports: after two sessions,
    /// no node holds one port twice.
    #[test]
    fn no_node_ends_up_with_one_port_held_twice(
        nodes in 1usize..=4,
        running in prop::collection::vec((0usize..4, 0i32..3), 0..6),
        pending in prop::collection::vec((1usize..=3, 0i32..3), 1..6),
    ) {
        let mut objs = cluster()
            .with(queue("q"))
            .with_all((0..nodes).map(|i| node(&format!("n{i}")).cpu(16).mem_gi(32)))
            .objects();
        let mut taken: BTreeMap<(usize, i32), ()> = BTreeMap::new();
        for (i, (n, port)) in running.iter().enumerate() {
            let n = n % nodes;
            // The cluster starts valid: one holder per port and node.
            if taken.insert((n, *port), ()).is_some() {
                continue;
            }
            add_gang(&mut objs, &format!("r{i}"), 1, 7000 + port, None, Some(&format!("n{n}")));
        }
        for (i, (size, port)) in pending.iter().enumerate() {
            add_gang(&mut objs, &format!("p{i}"), *size, 7000 + port, None, None);
        }
        let conf = SchedulerConf::default_conf();
        for session in 0..2 {
            let d = run_session_n(&objs, &conf, session);
            apply(&mut objs, &d);
        }
        let mut held: BTreeMap<(String, i32), Vec<String>> = BTreeMap::new();
        for p in &objs.pods {
            let Some(n) = p.spec.as_ref().and_then(|s| s.node_name.clone()) else { continue };
            for port in ports_of(p) {
                held.entry((n.clone(), port))
                    .or_default()
                    .push(p.metadata.name.clone().unwrap_or_default());
            }
        }
        for ((n, port), pods) in held {
            prop_assert!(pods.len() == 1, "{n} port {port} held by {pods:?}");
        }
    }
}
