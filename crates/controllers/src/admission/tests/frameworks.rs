//! The distributed-framework plugins at admission: the plugins the mutating webhook adds for
//! them, and the checks the validating webhook makes of their arguments.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::{
    AdmissionSettings, AdmissionView, Endpoint, Operation, Request, Verdict, review,
};
use super::*;
use volcano_api::scheduling::Queue;

fn plugins(list: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
    list.iter()
        .map(|(name, args)| {
            (
                name.to_string(),
                args.iter().map(|a| a.to_string()).collect(),
            )
        })
        .collect()
}

/// The plugins of a job after the mutating webhook's defaults.
fn defaulted(list: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    let mut j = job("train", vec![task("master", 1), task("worker", 2)]);
    j.spec.plugins = plugins(list);
    default_job(&mut j);
    j.spec.plugins.into_iter().collect()
}

fn entry(name: &str, args: &[&str]) -> (String, Vec<String>) {
    (
        name.to_string(),
        args.iter().map(|a| a.to_string()).collect(),
    )
}

#[test]
fn mpi_brings_ssh_and_svc() {
    assert_eq!(
        defaulted(&[("mpi", &["--master=master"])]),
        vec![
            entry("mpi", &["--master=master"]),
            entry("ssh", &[]),
            entry("svc", &[]),
        ]
    );
}

#[test]
fn pytorch_tensorflow_and_ray_bring_svc_only() {
    for framework in ["pytorch", "tensorflow", "ray"] {
        let mut expected = vec![entry(framework, &[]), entry("svc", &[])];
        expected.sort();
        assert_eq!(defaulted(&[(framework, &[])]), expected, "{framework}");
    }
}

#[test]
fn hcclrank_and_plain_plugins_bring_nothing() {
    assert_eq!(
        defaulted(&[("hcclrank", &[]), ("env", &[])]),
        vec![entry("env", &[]), entry("hcclrank", &[])]
    );
    assert_eq!(defaulted(&[]), Vec::new());
}

#[test]
fn plugins_the_user_configured_keep_their_arguments() {
    assert_eq!(
        defaulted(&[
            ("mpi", &[]),
            ("svc", &["--disable-network-policy=true"]),
            ("ssh", &["--ssh-port=2222"]),
        ]),
        vec![
            entry("mpi", &[]),
            entry("ssh", &["--ssh-port=2222"]),
            entry("svc", &["--disable-network-policy=true"]),
        ]
    );
}

fn framework_job(list: &[(&str, &[&str])], tasks: &[&str]) -> Job {
    let mut j = job("train", tasks.iter().map(|t| task(t, 1)).collect());
    j.spec.plugins = plugins(list);
    default_job(&mut j);
    j
}

#[test]
fn every_framework_plugin_is_admitted() {
    let j = framework_job(
        &[
            ("mpi", &["--master=master", "--worker=worker", "--port=22"]),
            (
                "pytorch",
                &["--master=master", "--worker=worker", "--port=23456"],
            ),
            ("tensorflow", &["--ps=ps", "--worker=worker", "--port=2222"]),
            (
                "ray",
                &[
                    "--head=head",
                    "--headContainer=main",
                    "--dashboardPort=8265",
                ],
            ),
            ("hcclrank", &["--master=master", "--worker=worker"]),
        ],
        &["master", "worker", "ps", "head"],
    );
    assert_eq!(validate_job(&j), Ok(()));
}

#[test]
fn an_mpi_job_needs_its_master_task() {
    let j = framework_job(&[("mpi", &[])], &["launcher", "worker"]);
    assert_only(
        &j,
        "spec.plugins.mpi",
        "The specified mpi master task was not found: no task is named \"master\"",
    );
    let j = framework_job(&[("mpi", &["--master=launcher"])], &["launcher"]);
    assert_eq!(
        validate_job(&j),
        Ok(()),
        "a renamed master suffices; workers are optional"
    );
}

#[test]
fn framework_arguments_that_do_not_parse_are_refused() {
    let j = framework_job(&[("tensorflow", &["--port=grpc"])], &["ps", "worker"]);
    assert_only(
        &j,
        "spec.plugins.tensorflow",
        "job plugin tensorflow: flag --port wants an integer, not \"grpc\"",
    );
    let j = framework_job(&[("ray", &["--head-container=main"])], &["head"]);
    assert_starts(
        &j,
        "spec.plugins.ray",
        "job plugin ray: unknown flag --head-container; known flags: --head, --headContainer",
    );
    let j = framework_job(
        &[("pytorch", &["--wait-master-enabled=maybe"])],
        &["master"],
    );
    assert_only(
        &j,
        "spec.plugins.pytorch",
        "job plugin pytorch: flag --wait-master-enabled wants true or false, not \"maybe\"",
    );
}

struct OneQueue;
impl AdmissionView for OneQueue {
    fn queue(&self, name: &str) -> Option<Queue> {
        (name == "default").then(|| {
            serde_json::from_value(json!({"metadata": {"name": "default"},
                "spec": {"weight": 1}, "status": {"state": "Open"}}))
            .unwrap_or_else(|e| panic!("{e}"))
        })
    }
    fn queues(&self) -> Vec<Queue> {
        self.queue("default").into_iter().collect()
    }
}

#[test]
fn the_mutating_webhook_patches_the_implied_plugins_in() {
    let object = json!({"metadata": {"name": "mpi", "namespace": "ns"},
        "spec": {"plugins": {"mpi": ["--master=mpimaster", "--worker=mpiworker"]},
        "tasks": [
            {"name": "mpimaster", "replicas": 1,
             "template": {"spec": {"containers": [{"name": "m", "image": "mpi"}]}}},
            {"name": "mpiworker", "replicas": 2,
             "template": {"spec": {"containers": [{"name": "w", "image": "mpi"}]}}}]}});
    let request = Request {
        endpoint: Endpoint::JobsMutate,
        operation: Operation::Create,
        object: Some(&object),
        old_object: None,
    };
    let Verdict::Allowed(patch) = review(request, &OneQueue, &AdmissionSettings::default()) else {
        panic!("refused");
    };
    let ops = patch.to_json();
    let adds: Vec<(String, Value)> = ops
        .as_array()
        .into_iter()
        .flatten()
        .filter(|op| {
            op["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("/spec/plugins/"))
        })
        .map(|op| {
            (
                format!(
                    "{} {}",
                    op["op"].as_str().unwrap_or(""),
                    op["path"].as_str().unwrap_or("")
                ),
                op["value"].clone(),
            )
        })
        .collect();
    assert_eq!(
        adds,
        vec![
            ("add /spec/plugins/ssh".to_string(), json!([])),
            ("add /spec/plugins/svc".to_string(), json!([])),
        ]
    );
}
