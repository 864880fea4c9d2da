//! The `mpi` plugin: opens the SSH port `mpirun` uses on every container of the job, and tells
//! the master's containers the workers' host names in `MPI_HOST`.

use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::Pod;

use super::super::flags::{Arity, Flags};
use super::super::{JobPlugin, PluginError, pod_spec, task_hosts};
use super::{env, find_task, open_port, port_flag, task_key};

const NAME: &str = "mpi";
/// Name of the port the plugin declares.
const PORT_NAME: &str = "mpijob-port";
/// Environment variable listing the worker hosts, comma-separated.
pub const MPI_HOST: &str = "MPI_HOST";

const FLAGS: &[(&str, Arity)] = &[
    ("master", Arity::Value),
    ("worker", Arity::Value),
    ("port", Arity::Value),
];

/// The `mpi` plugin with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiPlugin {
    /// Task whose pods run `mpirun` (`--master`, default `master`).
    pub master: String,
    /// Task whose pods `mpirun` reaches over SSH (`--worker`, default `worker`).
    pub worker: String,
    /// SSH port opened on every container (`--port`, default 22).
    pub port: i32,
}

impl MpiPlugin {
    /// Parses `--master`, `--worker` and `--port`.
    pub fn from_args(args: &[String]) -> Result<Self, PluginError> {
        let flags = Flags::parse(NAME, args, FLAGS)?;
        Ok(MpiPlugin {
            master: flags.text("master").unwrap_or("master").to_string(),
            worker: flags.text("worker").unwrap_or("worker").to_string(),
            port: port_flag(NAME, "port", flags.integer("port")?, 22)?,
        })
    }
}

impl JobPlugin for MpiPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_pod_create(&self, job: &Job, pod: &mut Pod) -> Result<(), PluginError> {
        let mut hosts = None;
        if task_key(pod) == self.master {
            // Volcano leaves a master without a worker task untouched, ports included.
            let Some(worker) = find_task(job, &self.worker) else {
                return Ok(());
            };
            let names: Vec<String> = task_hosts(job, worker)
                .into_iter()
                .map(|h| h.fqdn)
                .collect();
            hosts = Some(names.join(","));
        }
        let spec = pod_spec(pod);
        let inits = spec.init_containers.iter_mut().flatten();
        for container in inits.chain(spec.containers.iter_mut()) {
            open_port(container, PORT_NAME, self.port);
            if let Some(hosts) = &hosts {
                container
                    .env
                    .get_or_insert_with(Vec::new)
                    .push(env(MPI_HOST, hosts.clone()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::super::testing::{containers, job, pod};
    use super::*;
    use volcano_api::k8s_openapi::api::core::v1::ContainerPort;

    fn mpi(args: &[&str]) -> MpiPlugin {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        MpiPlugin::from_args(&args).unwrap_or_else(|e| panic!("{e}"))
    }

    fn ports(pod: &Pod) -> Vec<Vec<(Option<String>, i32)>> {
        containers(pod)
            .iter()
            .map(|c| {
                c.ports
                    .iter()
                    .flatten()
                    .map(|p| (p.name.clone(), p.container_port))
                    .collect()
            })
            .collect()
    }

    fn mpi_host(pod: &Pod) -> Vec<Option<String>> {
        containers(pod)
            .iter()
            .map(|c| {
                c.env
                    .iter()
                    .flatten()
                    .find(|e| e.name == MPI_HOST)
                    .and_then(|e| e.value.clone())
            })
            .collect()
    }

    #[test]
    fn arguments_default_like_volcano() {
        assert_eq!(
            mpi(&[]),
            MpiPlugin {
                master: "master".into(),
                worker: "worker".into(),
                port: 22
            }
        );
        assert_eq!(
            mpi(&["--master=launcher", "--worker", "node", "--port=5000"]),
            MpiPlugin {
                master: "launcher".into(),
                worker: "node".into(),
                port: 5000
            }
        );
        let bad = MpiPlugin::from_args(&["--port=ssh".to_string()]).map_err(|e| e.to_string());
        assert_eq!(
            bad,
            Err("job plugin mpi: flag --port wants an integer, not \"ssh\"".to_string())
        );
        let bad = MpiPlugin::from_args(&["--port=70000".to_string()]).map_err(|e| e.message);
        assert_eq!(
            bad,
            Err("flag --port wants a port number from 1 to 65535, not 70000".to_string())
        );
    }

    #[test]
    fn a_pod_of_another_task_only_gets_the_port() {
        let j = job("ns", "test-mpi-0")
            .task("fakeMaster", 1)
            .task("fakeWorker", 2)
            .build();
        let mut p = pod(&j, "fakeMaster", 0);
        mpi(&[]).on_pod_create(&j, &mut p).unwrap();
        let ssh = vec![(Some("mpijob-port".to_string()), 22)];
        assert_eq!(
            ports(&p),
            vec![ssh.clone(), ssh],
            "container and init container"
        );
        assert_eq!(mpi_host(&p), vec![None, None]);
    }

    #[test]
    fn the_port_flag_moves_the_opened_port() {
        let j = job("ns", "test-mpi-1")
            .task("master", 1)
            .task("worker", 2)
            .build();
        let mut p = pod(&j, "worker", 1);
        mpi(&["--port=5000"]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(ports(&p)[0], vec![(Some("mpijob-port".to_string()), 5000)]);
        assert_eq!(mpi_host(&p), vec![None, None], "workers get no host list");
    }

    #[test]
    fn the_master_learns_every_worker_host() {
        let j = job("ns", "test-mpi-valid-worker")
            .task("master", 1)
            .task("worker", 2)
            .build();
        let mut p = pod(&j, "master", 0);
        mpi(&[]).on_pod_create(&j, &mut p).unwrap();
        let hosts = "test-mpi-valid-worker-worker-0.test-mpi-valid-worker,\
                     test-mpi-valid-worker-worker-1.test-mpi-valid-worker";
        assert_eq!(
            mpi_host(&p),
            vec![Some(hosts.to_string()), Some(hosts.to_string())],
            "container and init container"
        );
    }

    #[test]
    fn renamed_tasks_and_fixed_hostnames_are_followed() {
        let j = job("ns", "j")
            .task("launcher", 1)
            .task("node", 3)
            .task_hostname("node", "gpu", "rack")
            .build();
        let mut p = pod(&j, "launcher", 0);
        mpi(&["--master=launcher", "--worker=node"])
            .on_pod_create(&j, &mut p)
            .unwrap();
        assert_eq!(mpi_host(&p)[0].as_deref(), Some("gpu.rack"));
    }

    #[test]
    fn a_master_without_workers() {
        // No worker task at all: Volcano leaves the pod alone.
        let j = job("ns", "test-mpi-no-worker").task("master", 1).build();
        let mut p = pod(&j, "master", 0);
        mpi(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(ports(&p), vec![Vec::new(), Vec::new()]);
        assert_eq!(mpi_host(&p), vec![None, None]);

        // A worker task of zero replicas: an empty host list, and the port.
        let j = job("ns", "test-mpi-zero-worker")
            .task("master", 1)
            .task("worker", 0)
            .build();
        let mut p = pod(&j, "master", 0);
        mpi(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(mpi_host(&p), vec![Some(String::new()), Some(String::new())]);
        assert_eq!(ports(&p)[0].len(), 1);
    }

    #[test]
    fn a_port_the_template_declares_is_not_declared_twice() {
        let j = job("ns", "j").task("master", 1).task("worker", 1).build();
        let mut p = pod(&j, "worker", 0);
        if let Some(c) = p.spec.as_mut().and_then(|s| s.containers.first_mut()) {
            c.ports = Some(vec![ContainerPort {
                name: Some("sshd".into()),
                container_port: 22,
                ..ContainerPort::default()
            }]);
        }
        mpi(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(
            ports(&p),
            vec![
                vec![(Some("sshd".to_string()), 22)],
                vec![(Some("mpijob-port".to_string()), 22)]
            ]
        );
    }

    #[test]
    fn records_itself_in_controlled_resources() {
        let j = job("ns", "j").build();
        let mut controlled = BTreeMap::new();
        assert!(mpi(&[]).on_job_add(&j, &mut controlled).unwrap().is_empty());
        assert_eq!(
            controlled.get("plugin-mpi").map(String::as_str),
            Some("mpi")
        );
        assert!(
            mpi(&[])
                .on_job_delete(&j, &mut controlled)
                .unwrap()
                .is_empty()
        );
        assert!(controlled.is_empty());
    }
}
