//! Network-topology figures of a run: gangs kept inside one tier-1 HyperNode, jobs with a
//! network topology, and GPUs stranded in domains too small for the gangs still waiting.

// Helpers outside #[test] functions drive the simulation; a failure there is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use volcano_controllers::admission;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::metrics::SimMetrics;
use volcano_sim::simulate::{SimOptions, simulate};

fn sim(text: &str) -> SimMetrics {
    let mut s = volcano_api::scenario::load_str(Path::new("t.yaml"), text)
        .unwrap_or_else(|e| panic!("{e}"));
    for j in &mut s.objects.jobs {
        admission::default_job(j);
        admission::validate_job(j).unwrap();
    }
    let opts = SimOptions {
        timings: false,
        until: Some(Duration::from_secs(3600)),
        ..Default::default()
    };
    let manager = ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    };
    simulate(
        s.objects,
        &s.sources,
        &SchedulerConf::default_conf(),
        &opts,
        manager,
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A node with 8 GPUs in `rack`.
fn node(name: &str, rack: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\n\
         metadata: {{name: {name}, labels: {{rack: {rack}, kubernetes.io/hostname: {name}}}}}\n\
         status: {{allocatable: {{cpu: \"64\", memory: 256Gi, nvidia.com/gpu: \"8\", pods: \"110\"}}}}\n---\n"
    )
}

/// A task of `replicas` pods with `gpus` GPUs each, on nodes matching `selector`, running 2h.
fn task(name: &str, replicas: u32, gpus: u32, selector: &str) -> String {
    format!(
        "  - name: {name}\n    replicas: {replicas}\n    template:\n\
         \x20     metadata: {{annotations: {{sim.volcano-rs.io/duration: 2h}}}}\n\
         \x20     spec:\n        nodeSelector: {{{selector}}}\n\
         \x20       containers: [{{name: c, image: x, resources: {{requests: {{cpu: \"1\", nvidia.com/gpu: \"{gpus}\"}}, limits: {{nvidia.com/gpu: \"{gpus}\"}}}}}}]\n"
    )
}

fn job(name: &str, extra: &str, tasks: &[String]) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n\
         metadata: {{name: {name}, namespace: default}}\nspec:\n{extra}  tasks:\n{}---\n",
        tasks.concat()
    )
}

/// Two leaves of two 8-GPU nodes under one spine (by regex, by name and by member names).
const HYPER_NODES: &str = "\
apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: leaf-a}\n\
spec: {tier: 1, tierName: leaf, members: [{type: Node, selector: {regexMatch: {pattern: '^n[12]$'}}}]}\n---\n\
apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: leaf-b}\n\
spec: {tier: 1, tierName: leaf, members: [{type: Node, selector: {exactMatch: {name: n3}}}, {type: Node, selector: {exactMatch: {name: n4}}}]}\n---\n\
apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: spine}\n\
spec: {tier: 2, tierName: spine, members: [{type: HyperNode, selector: {regexMatch: {pattern: '^leaf-'}}}]}\n---\n";

fn cluster() -> String {
    [
        node("n1", "a"),
        node("n2", "a"),
        node("n3", "b"),
        node("n4", "b"),
    ]
    .concat()
}

/// `inside`: a gang of 2 pods held to rack a (one leaf); `across`: a gang with one pod on n3
/// and one on n1 (two leaves); `single`: one pod, not a gang; `big`: a gang of 3 whole nodes
/// with a hard network topology, which no leaf of 16 GPUs can hold and which never starts.
fn workload() -> String {
    [
        job("inside", "", &[task("w", 2, 2, "rack: a")]),
        job(
            "across",
            "",
            &[
                task("x", 1, 4, "kubernetes.io/hostname: n3"),
                task("y", 1, 4, "kubernetes.io/hostname: n1"),
            ],
        ),
        job("single", "", &[task("w", 1, 1, "rack: b")]),
        job(
            "big",
            "  networkTopology: {mode: hard, highestTierAllowed: 1}\n",
            &[task("w", 3, 8, "rack: a")],
        ),
    ]
    .concat()
}

#[test]
fn gangs_in_one_leaf_and_stranded_gpus_are_counted() {
    let m = sim(&format!("{}{HYPER_NODES}{}", cluster(), workload()));
    let t = m
        .topology
        .as_ref()
        .expect("a run with HyperNodes has figures");
    assert_eq!(t.resource, "nvidia.com/gpu");
    // inside and across ran; only inside stayed in one leaf; big never ran.
    assert_eq!((t.gangs_ran, t.gangs_in_one_tier1_domain), (2, 1));
    assert_eq!(t.topology_jobs, 1);
    assert_eq!(t.topology_wait_s.count, 0);
    assert_eq!(t.gangs_waiting, 1);
    assert_eq!(t.smallest_waiting_gang, Some(24.0));
    // 32 GPUs, 4 + 8 + 1 in use: the 19 free are in leaves of 16, too small for 24.
    assert_eq!(t.stranded, 19.0);
    let d = |name: &str| {
        t.domains
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("no domain {name}"))
    };
    assert_eq!((d("leaf-a").used, d("leaf-a").total), (8.0, 16.0));
    assert_eq!((d("leaf-b").used, d("leaf-b").total), (5.0, 16.0));
    assert_eq!(
        (d("spine").used, d("spine").total, d("spine").nodes),
        (13.0, 32.0, 4)
    );
    assert_eq!(d("leaf-a").parent.as_deref(), Some("spine"));
    assert!(d("leaf-a").stranded && d("leaf-b").stranded && !d("spine").stranded);
    // The job with a network topology says so in the JSON, with its wait for a domain.
    let json = serde_json::to_value(&m).unwrap();
    let big = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == "default/big")
        .unwrap();
    assert_eq!(big["networkTopology"]["mode"], "hard");
    assert_eq!(big["networkTopology"]["highestTierAllowed"], 1);
    assert!(big["networkTopology"]["networkTopologyWaitS"].is_number());
    assert_eq!(json["topology"]["gangsInOneTier1Domain"], 1);
}

#[test]
fn a_run_without_hyper_nodes_writes_nothing_of_topology() {
    let m = sim(&format!("{}{}", cluster(), workload()));
    assert_eq!(m.topology, None);
    let json = serde_json::to_value(&m).unwrap();
    assert!(json.get("topology").is_none());
    // Only the job that asked for a network topology carries one.
    let with: Vec<_> = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j.get("networkTopology").is_some())
        .map(|j| j["name"].clone())
        .collect();
    assert_eq!(with, vec![serde_json::json!("default/big")]);
}
