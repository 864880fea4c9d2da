//! The `ray` plugin: turns a head task and a worker task into a Ray cluster. The head
//! container runs `ray start --head` with its GCS, dashboard and client ports declared, each
//! worker container runs `ray start --address=<head>`, and a Service `<job>-head-svc` exposes
//! the head's three ports to clients.

use std::collections::BTreeMap;

use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::{Pod, Service, ServicePort, ServiceSpec};
use volcano_api::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use volcano_api::keys;

use super::super::flags::{Arity, Flags};
use super::super::{
    JobPlugin, PluginError, forget, is_recorded, job_name, job_namespace, job_pod_labels,
    owned_meta, pod_spec, record,
};
use super::{domain_name, find_task, open_port, port_flag, task_key};
use crate::change::{Change, Owned};

const NAME: &str = "ray";
/// Port names on the head container, which the head Service targets.
const GCS_PORT: &str = "gcs";
const DASHBOARD_PORT: &str = "dashboard";
const CLIENT_PORT: &str = "client-server";

const FLAGS: &[(&str, Arity)] = &[
    ("head", Arity::Value),
    ("headContainer", Arity::Value),
    ("worker", Arity::Value),
    ("workerContainer", Arity::Value),
    ("port", Arity::Value),
    ("dashboardPort", Arity::Value),
    ("clientPort", Arity::Value),
];

/// The `ray` plugin with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RayPlugin {
    /// Head task (`--head`, default `head`).
    pub head: String,
    /// Container of the head pod that runs Ray (`--headContainer`, default `head`).
    pub head_container: String,
    /// Worker task (`--worker`, default `worker`).
    pub worker: String,
    /// Container of a worker pod that runs Ray (`--workerContainer`, default `worker`).
    pub worker_container: String,
    /// GCS port of the head (`--port`, default 6379).
    pub port: i32,
    /// Dashboard port of the head (`--dashboardPort`, default 8265).
    pub dashboard_port: i32,
    /// Client server port of the head (`--clientPort`, default 10001).
    pub client_port: i32,
}

impl RayPlugin {
    /// Parses the plugin's flags (camel-cased, as Volcano spells them), with Volcano's defaults.
    pub fn from_args(args: &[String]) -> Result<Self, PluginError> {
        let flags = Flags::parse(NAME, args, FLAGS)?;
        let text = |flag: &str, default: &str| flags.text(flag).unwrap_or(default).to_string();
        let port = |flag: &str, default: i32| port_flag(NAME, flag, flags.integer(flag)?, default);
        Ok(RayPlugin {
            head: text("head", "head"),
            head_container: text("headContainer", "head"),
            worker: text("worker", "worker"),
            worker_container: text("workerContainer", "worker"),
            port: port("port", 6379)?,
            dashboard_port: port("dashboardPort", 8265)?,
            client_port: port("clientPort", 10001)?,
        })
    }

    fn head_command(&self) -> Vec<String> {
        shell(format!(
            "ray start --head --block --dashboard-host=0.0.0.0 --port={} --dashboard-port={} \
             --ray-client-server-port={}",
            self.port, self.dashboard_port, self.client_port
        ))
    }

    fn worker_command(&self, head_addr: &str) -> Vec<String> {
        shell(format!(
            "ray start --block --address={head_addr}:{}",
            self.port
        ))
    }

    fn head_service(&self, job: &Job) -> Service {
        let mut selector = job_pod_labels(job);
        selector.insert(keys::TASK_SPEC.to_string(), self.head.clone());
        let port = |name: &str, number: i32| ServicePort {
            name: Some(name.to_string()),
            port: number,
            target_port: Some(IntOrString::String(name.to_string())),
            protocol: Some("TCP".to_string()),
            ..ServicePort::default()
        };
        Service {
            metadata: owned_meta(job, head_service_name(job)),
            spec: Some(ServiceSpec {
                selector: Some(selector),
                ports: Some(vec![
                    port(GCS_PORT, self.port),
                    port(DASHBOARD_PORT, self.dashboard_port),
                    port(CLIENT_PORT, self.client_port),
                ]),
                ..ServiceSpec::default()
            }),
            status: None,
        }
    }
}

fn shell(script: String) -> Vec<String> {
    vec!["sh".to_string(), "-c".to_string(), script]
}

/// Name of the Service in front of the head: `<job>-head-svc`.
fn head_service_name(job: &Job) -> String {
    format!("{}-head-svc", job_name(job))
}

impl JobPlugin for RayPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_pod_create(&self, job: &Job, pod: &mut Pod) -> Result<(), PluginError> {
        let Some(head) = find_task(job, &self.head) else {
            return Err(PluginError::new(
                NAME,
                format!(
                    "job {} has no head task {:?} (set --head to name another task)",
                    job_name(job),
                    self.head
                ),
            ));
        };
        let head_addr = domain_name(job, head, 0);
        let task = task_key(pod).to_string();
        for container in pod_spec(pod).containers.iter_mut() {
            if task == self.head && container.name == self.head_container {
                open_port(container, GCS_PORT, self.port);
                open_port(container, DASHBOARD_PORT, self.dashboard_port);
                open_port(container, CLIENT_PORT, self.client_port);
                container.command = Some(self.head_command());
            }
            if task == self.worker && container.name == self.worker_container {
                container.command = Some(self.worker_command(&head_addr));
            }
        }
        Ok(())
    }

    fn on_job_add(
        &self,
        job: &Job,
        controlled: &mut BTreeMap<String, String>,
    ) -> Result<Vec<Change>, PluginError> {
        if is_recorded(controlled, NAME) {
            return Ok(Vec::new());
        }
        record(controlled, NAME);
        Ok(vec![Change::Create(Box::new(Owned::Service(
            self.head_service(job),
        )))])
    }

    fn on_job_delete(
        &self,
        job: &Job,
        controlled: &mut BTreeMap<String, String>,
    ) -> Result<Vec<Change>, PluginError> {
        if !is_recorded(controlled, NAME) {
            return Ok(Vec::new());
        }
        forget(controlled, NAME);
        Ok(vec![Change::Delete {
            kind: "Service",
            namespace: job_namespace(job).to_string(),
            name: head_service_name(job),
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::testing::{job, pod};
    use super::*;
    use volcano_api::k8s_openapi::api::core::v1::{Container, ContainerPort};

    fn ray(args: &[&str]) -> RayPlugin {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        RayPlugin::from_args(&args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A pod of `task` whose containers have the given names.
    fn ray_pod(j: &Job, task: &str, names: &[&str]) -> Pod {
        let mut p = pod(j, task, 0);
        if let Some(spec) = p.spec.as_mut() {
            spec.containers = names
                .iter()
                .map(|n| Container {
                    name: n.to_string(),
                    ..Container::default()
                })
                .collect();
        }
        p
    }

    fn container<'p>(p: &'p Pod, name: &str) -> &'p Container {
        p.spec
            .as_ref()
            .and_then(|s| s.containers.iter().find(|c| c.name == name))
            .unwrap_or_else(|| panic!("no container {name}"))
    }

    fn ports(c: &Container) -> Vec<(String, i32)> {
        c.ports
            .iter()
            .flatten()
            .map(|p| (p.name.clone().unwrap_or_default(), p.container_port))
            .collect()
    }

    fn sh(script: &str) -> Option<Vec<String>> {
        Some(shell(script.to_string()))
    }

    #[test]
    fn arguments_default_like_volcano() {
        assert_eq!(
            ray(&[]),
            RayPlugin {
                head: "head".into(),
                head_container: "head".into(),
                worker: "worker".into(),
                worker_container: "worker".into(),
                port: 6379,
                dashboard_port: 8265,
                client_port: 10001,
            }
        );
        let custom = ray(&[
            "--port=1234",
            "--dashboardPort=3456",
            "--clientPort=4567",
            "--head=test-head",
            "--headContainer=h",
            "--worker=w",
            "--workerContainer=wc",
        ]);
        assert_eq!(
            custom,
            RayPlugin {
                head: "test-head".into(),
                head_container: "h".into(),
                worker: "w".into(),
                worker_container: "wc".into(),
                port: 1234,
                dashboard_port: 3456,
                client_port: 4567,
            }
        );
    }

    #[test]
    fn the_head_container_starts_the_head_with_its_ports() {
        let j = job("ns", "ray-cluster-test").task("test-head", 1).build();
        let plugin = ray(&[
            "--port=1234",
            "--dashboardPort=3456",
            "--clientPort=4567",
            "--head=test-head",
        ]);
        let mut p = ray_pod(&j, "test-head", &["head", "sidecar"]);
        plugin.on_pod_create(&j, &mut p).unwrap();
        let head = container(&p, "head");
        assert_eq!(
            head.command,
            sh(
                "ray start --head --block --dashboard-host=0.0.0.0 --port=1234 \
                --dashboard-port=3456 --ray-client-server-port=4567"
            )
        );
        assert_eq!(
            ports(head),
            vec![
                ("gcs".to_string(), 1234),
                ("dashboard".to_string(), 3456),
                ("client-server".to_string(), 4567)
            ]
        );
        let sidecar = container(&p, "sidecar");
        assert!(sidecar.command.is_none() && sidecar.ports.is_none());
    }

    #[test]
    fn declared_head_ports_are_not_declared_twice() {
        let j = job("ns", "r").task("head", 1).build();
        let mut p = ray_pod(&j, "head", &["head"]);
        if let Some(c) = p.spec.as_mut().map(|s| &mut s.containers[0]) {
            c.ports = Some(vec![ContainerPort {
                name: Some("ui".into()),
                container_port: 8265,
                ..ContainerPort::default()
            }]);
        }
        ray(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(
            ports(container(&p, "head")),
            vec![
                ("ui".to_string(), 8265),
                ("gcs".to_string(), 6379),
                ("client-server".to_string(), 10001)
            ]
        );
    }

    #[test]
    fn worker_containers_join_the_head() {
        let j = job("ns", "ray-cluster-worker")
            .task("head", 1)
            .task("worker", 2)
            .build();
        let mut p = ray_pod(&j, "worker", &["worker", "logger"]);
        ray(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(
            container(&p, "worker").command,
            sh("ray start --block --address=ray-cluster-worker-head-0.ray-cluster-worker:6379")
        );
        assert!(container(&p, "worker").ports.is_none());
        assert!(container(&p, "logger").command.is_none());
    }

    #[test]
    fn a_job_without_its_head_task_is_an_error() {
        let j = job("ns", "r").task("worker", 1).build();
        let mut p = ray_pod(&j, "worker", &["worker"]);
        let err = ray(&[])
            .on_pod_create(&j, &mut p)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "job plugin ray: job r has no head task \"head\" (set --head to name another task)"
            )
        );
    }

    #[test]
    fn job_add_creates_the_head_service_once_and_delete_removes_it() {
        let j = job("ns", "ray-cluster-test").task("test-head", 1).build();
        let plugin = ray(&["--port=1234", "--head=test-head"]);
        let mut controlled = BTreeMap::new();
        let changes = plugin.on_job_add(&j, &mut controlled).unwrap();
        assert_eq!(
            controlled.get("plugin-ray").map(String::as_str),
            Some("ray")
        );
        let [Change::Create(owned)] = changes.as_slice() else {
            panic!("expected one create, got {changes:?}")
        };
        let Owned::Service(svc) = owned.as_ref() else {
            panic!("not a Service")
        };
        assert_eq!(
            svc.metadata.name.as_deref(),
            Some("ray-cluster-test-head-svc")
        );
        assert_eq!(svc.metadata.namespace.as_deref(), Some("ns"));
        let owner = svc.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(
            owner
                .iter()
                .map(|o| (o.kind.as_str(), o.name.as_str(), o.controller))
                .collect::<Vec<_>>(),
            vec![("Job", "ray-cluster-test", Some(true))]
        );
        let spec = svc.spec.clone().unwrap_or_default();
        assert_eq!(spec.cluster_ip, None, "a normal Service, not headless");
        let selector: Vec<(String, String)> =
            spec.selector.unwrap_or_default().into_iter().collect();
        assert_eq!(
            selector,
            vec![
                ("volcano.sh/job-name".into(), "ray-cluster-test".into()),
                ("volcano.sh/job-namespace".into(), "ns".into()),
                ("volcano.sh/task-spec".into(), "test-head".into()),
            ]
        );
        let ports: Vec<_> = spec
            .ports
            .unwrap_or_default()
            .into_iter()
            .map(|p| (p.name, p.port, p.target_port, p.protocol))
            .collect();
        let named = |n: &str, p: i32| {
            (
                Some(n.to_string()),
                p,
                Some(IntOrString::String(n.to_string())),
                Some("TCP".to_string()),
            )
        };
        assert_eq!(
            ports,
            vec![
                named("gcs", 1234),
                named("dashboard", 8265),
                named("client-server", 10001)
            ]
        );

        assert!(plugin.on_job_add(&j, &mut controlled).unwrap().is_empty());
        let deleted = plugin.on_job_delete(&j, &mut controlled).unwrap();
        let deleted: Vec<String> = deleted
            .iter()
            .map(|c| match c {
                Change::Delete {
                    kind,
                    namespace,
                    name,
                } => format!("delete {kind} {namespace}/{name}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(deleted, vec!["delete Service ns/ray-cluster-test-head-svc"]);
        assert!(controlled.is_empty());
        assert!(
            plugin
                .on_job_delete(&j, &mut controlled)
                .unwrap()
                .is_empty()
        );
    }
}
