//! Gangs of workloads in the embedded cluster: the scenario cases of `volcano schedule`
//! (crates/cli/tests/scenarios/workload-*), looked at from inside: after the controllers
//! settle, a Deployment's (through its ReplicaSet) or a StatefulSet's pods are all in one
//! PodGroup whose minMember is the workload's annotation, and sessions bind none of a gang
//! the node cannot hold whole.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use volcano_api::NamespacedName;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::keys;
use volcano_api::scheduling::PodGroup;
use volcano_controllers::job_plugins::PlaceholderSshKeys;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::time::Instant;
use volcano_controllers::workqueue::RetryPolicy;
use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::Cluster;

const DEPLOYMENT: &str =
    include_str!("../../cli/tests/scenarios/workload-deployment-gang-too-big.yaml");
const STATEFUL_SET: &str =
    include_str!("../../cli/tests/scenarios/workload-statefulset-gang-too-big.yaml");

fn cluster(text: &str) -> Cluster {
    let scenario = volcano_api::scenario::load_str(Path::new("workload.yaml"), text)
        .unwrap_or_else(|e| panic!("{e}"));
    let opts = ManagerOptions {
        retry: RetryPolicy::default(),
        scheduler_names: Vec::new(),
        ssh_keys: Box::new(PlaceholderSshKeys),
    };
    let mut c = Cluster::new(scenario.objects, opts, Instant(Duration::from_secs(1)));
    c.settle().unwrap();
    c
}

/// Checks the one PodGroup and its pods, then runs three sessions: nothing is bound.
fn one_gang_and_nothing_bound(text: &str, ns: &str, group: &str, min: i32, pods: &[&str]) {
    let mut c = cluster(text);
    let groups = &c.store.objects().pod_groups;
    assert_eq!(groups.len(), 1, "one PodGroup for the workload: {groups:?}");
    let pg: &PodGroup = c
        .store
        .indexed()
        .get(&NamespacedName::new(ns, group))
        .unwrap();
    assert_eq!(pg.spec.min_member, min);
    for name in pods {
        let pod: &Pod = c
            .store
            .indexed()
            .get(&NamespacedName::new(ns, *name))
            .unwrap();
        let in_group = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(keys::GROUP_NAME));
        assert_eq!(in_group.map(String::as_str), Some(group), "{name}");
    }
    let conf = SchedulerConf::default_conf();
    for i in 1..=3 {
        c.now = c.now.after(Duration::from_secs(1));
        c.settle().unwrap();
        let d = c.run_session(&conf, &format!("s{i}")).unwrap();
        assert!(d.binds.is_empty(), "session {i} bound {:?}", d.binds);
    }
}

#[test]
fn a_deployments_three_replicas_are_one_gang_of_three_and_two_places_bind_none() {
    one_gang_and_nothing_bound(
        DEPLOYMENT,
        "default",
        "podgroup-rs-web-uid",
        3,
        &["web-5d4f8c-a", "web-5d4f8c-b", "web-5d4f8c-c"],
    );
}

#[test]
fn a_stateful_sets_two_replicas_are_one_gang_of_two_and_one_place_binds_none() {
    one_gang_and_nothing_bound(
        STATEFUL_SET,
        "data",
        "podgroup-sts-db-uid",
        2,
        &["db-0", "db-1"],
    );
}
