//! The `pytorch` plugin: gives every pod of the job what `torch.distributed`'s `env://`
//! rendezvous reads (`MASTER_ADDR`, `MASTER_PORT`, `WORLD_SIZE`, `RANK`), opens the rendezvous
//! port, and can hold workers back until the master listens.

use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::{Container, Pod};

use super::super::flags::{Arity, Flags};
use super::super::{JobPlugin, PluginError, pod_spec};
use super::{domain_name, env, find_task, numeric_index_from_name, open_port, port_flag, task_key};

const NAME: &str = "pytorch";
/// Name of the port the plugin declares.
const PORT_NAME: &str = "pytorchjob-port";
/// Name of the init container that waits for the master.
const WAIT_CONTAINER: &str = "wait-for-master";

const FLAGS: &[(&str, Arity)] = &[
    ("master", Arity::Value),
    ("worker", Arity::Value),
    ("port", Arity::Value),
    ("wait-master-enabled", Arity::Switch),
    ("wait-master-timeout", Arity::Value),
    ("wait-master-image", Arity::Value),
];

/// The `pytorch` plugin with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PytorchPlugin {
    /// Task of the rank-0 pod (`--master`, default `master`).
    pub master: String,
    /// Task of the other ranks (`--worker`, default `worker`).
    pub worker: String,
    /// Rendezvous port (`--port`, default 23456).
    pub port: i32,
    /// Whether workers get an init container that waits for the master
    /// (`--wait-master-enabled`, default false).
    pub wait_master: bool,
    /// Seconds that init container waits before failing (`--wait-master-timeout`, default 300).
    pub wait_master_timeout: i64,
    /// Image of that init container (`--wait-master-image`, default `busybox:1.36.1`).
    pub wait_master_image: String,
}

impl PytorchPlugin {
    /// Parses the plugin's flags, with Volcano's defaults.
    pub fn from_args(args: &[String]) -> Result<Self, PluginError> {
        let flags = Flags::parse(NAME, args, FLAGS)?;
        Ok(PytorchPlugin {
            master: flags.text("master").unwrap_or("master").to_string(),
            worker: flags.text("worker").unwrap_or("worker").to_string(),
            port: port_flag(NAME, "port", flags.integer("port")?, 23456)?,
            wait_master: flags.switch("wait-master-enabled", false)?,
            wait_master_timeout: flags.integer("wait-master-timeout")?.unwrap_or(300),
            wait_master_image: flags
                .text("wait-master-image")
                .unwrap_or("busybox:1.36.1")
                .to_string(),
        })
    }

    /// WORLD_SIZE: the replicas of the master and worker tasks; other tasks take no rank.
    fn world_size(&self, job: &Job) -> i64 {
        job.spec
            .tasks
            .iter()
            .filter(|t| t.name == self.master || t.name == self.worker)
            .map(|t| i64::from(t.replicas))
            .sum()
    }

    /// A shell loop that returns once the master's port accepts connections, with `nc` or,
    /// where the image has none, bash's `/dev/tcp`.
    fn wait_script(&self, master_addr: &str) -> String {
        let (addr, port, timeout) = (master_addr, self.port, self.wait_master_timeout);
        format!(
            "echo \"Waiting for master node {addr}:{port} to be ready...\"\n\
             TIMEOUT={timeout}\n\
             ELAPSED=0\n\
             until {{ nc -z {addr} {port} || echo > /dev/tcp/{addr}/{port}; }} 2>/dev/null; do\n\
             \x20 if [ $ELAPSED -ge $TIMEOUT ]; then\n\
             \x20   echo \"Timeout waiting for master after ${{TIMEOUT}} seconds\"\n\
             \x20   exit 1\n\
             \x20 fi\n\
             \x20 echo \"Master not ready yet, retrying in 2 seconds... (elapsed: ${{ELAPSED}}s)\"\n\
             \x20 sleep 2\n\
             \x20 ELAPSED=$((ELAPSED + 2))\n\
             done\n\
             echo \"Master node is ready!\""
        )
    }

    fn add_wait_container(&self, pod: &mut Pod, master_addr: &str) {
        let inits = pod_spec(pod).init_containers.get_or_insert_with(Vec::new);
        if inits.iter().any(|c| c.name == WAIT_CONTAINER) {
            return;
        }
        inits.push(Container {
            name: WAIT_CONTAINER.to_string(),
            image: Some(self.wait_master_image.clone()),
            command: Some(vec![
                "sh".to_string(),
                "-c".to_string(),
                self.wait_script(master_addr),
            ]),
            ..Container::default()
        });
    }
}

impl JobPlugin for PytorchPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_pod_create(&self, job: &Job, pod: &mut Pod) -> Result<(), PluginError> {
        // Without a master there is no rendezvous to point at; Volcano leaves the pod alone.
        let Some(master) = find_task(job, &self.master) else {
            return Ok(());
        };
        let master_addr = domain_name(job, master, 0);
        let task = task_key(pod).to_string();
        // The master's replicas all claim rank 0, as in Volcano: one master is the design.
        let rank = if task == self.worker {
            let index = numeric_index_from_name(pod).map_err(|m| PluginError::new(NAME, m))?;
            if self.wait_master {
                self.add_wait_container(pod, &master_addr);
            }
            Some(index + 1)
        } else if task == self.master {
            Some(0)
        } else {
            None
        };
        let world_size = self.world_size(job);
        // Only the main containers: an init container runs before any rendezvous.
        for container in pod_spec(pod).containers.iter_mut() {
            open_port(container, PORT_NAME, self.port);
            let vars = container.env.get_or_insert_with(Vec::new);
            vars.push(env("MASTER_ADDR", master_addr.clone()));
            vars.push(env("MASTER_PORT", self.port.to_string()));
            vars.push(env("WORLD_SIZE", world_size.to_string()));
            if let Some(rank) = rank {
                vars.push(env("RANK", rank.to_string()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::testing::{containers, job, pod};
    use super::*;
    use volcano_api::k8s_openapi::api::core::v1::ContainerPort;

    fn pytorch(args: &[&str]) -> PytorchPlugin {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        PytorchPlugin::from_args(&args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The main container's environment as (name, value) pairs.
    fn main_env(pod: &Pod) -> Vec<(String, String)> {
        containers(pod)[0]
            .env
            .iter()
            .flatten()
            .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
            .collect()
    }

    fn expected_env(addr: &str, port: &str, world: &str, rank: &str) -> Vec<(String, String)> {
        let mut out = vec![
            ("MASTER_ADDR".to_string(), addr.to_string()),
            ("MASTER_PORT".to_string(), port.to_string()),
            ("WORLD_SIZE".to_string(), world.to_string()),
        ];
        if !rank.is_empty() {
            out.push(("RANK".to_string(), rank.to_string()));
        }
        out
    }

    fn main_ports(pod: &Pod) -> Vec<(Option<String>, i32)> {
        containers(pod)[0]
            .ports
            .iter()
            .flatten()
            .map(|p| (p.name.clone(), p.container_port))
            .collect()
    }

    #[test]
    fn arguments_default_like_volcano() {
        assert_eq!(
            pytorch(&[]),
            PytorchPlugin {
                master: "master".into(),
                worker: "worker".into(),
                port: 23456,
                wait_master: false,
                wait_master_timeout: 300,
                wait_master_image: "busybox:1.36.1".into(),
            }
        );
        let custom = pytorch(&[
            "--master=chief",
            "--worker=replica",
            "--port=5000",
            "--wait-master-enabled",
            "--wait-master-timeout=600",
            "--wait-master-image=alpine:latest",
        ]);
        assert_eq!(
            (custom.master.as_str(), custom.worker.as_str(), custom.port),
            ("chief", "replica", 5000)
        );
        assert!(custom.wait_master);
        assert_eq!(custom.wait_master_timeout, 600);
        assert_eq!(custom.wait_master_image, "alpine:latest");
    }

    #[test]
    fn without_a_master_task_pods_are_left_alone() {
        let j = job("ns", "test-pytorch").task("worker", 1).build();
        let mut p = pod(&j, "worker", 0);
        pytorch(&[]).on_pod_create(&j, &mut p).unwrap();
        assert!(main_env(&p).is_empty());
        assert!(main_ports(&p).is_empty());
    }

    #[test]
    fn the_master_is_rank_zero() {
        let j = job("ns", "test-pytorch")
            .task("master", 1)
            .task("worker", 1)
            .build();
        let mut p = pod(&j, "master", 0);
        pytorch(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(
            main_env(&p),
            expected_env("test-pytorch-master-0.test-pytorch", "23456", "2", "0")
        );
        assert_eq!(
            main_ports(&p),
            vec![(Some("pytorchjob-port".to_string()), 23456)]
        );
        let init = containers(&p)[1];
        assert!(
            init.env.is_none() && init.ports.is_none(),
            "init containers are untouched"
        );
    }

    #[test]
    fn workers_rank_after_the_master_and_other_tasks_do_not_count() {
        let j = job("ns", "test-pytorch")
            .task("master", 1)
            .task("worker", 2)
            .task("extra", 1)
            .build();
        for (index, rank) in [(0, "1"), (1, "2")] {
            let mut p = pod(&j, "worker", index);
            pytorch(&[]).on_pod_create(&j, &mut p).unwrap();
            assert_eq!(
                main_env(&p),
                expected_env("test-pytorch-master-0.test-pytorch", "23456", "3", rank)
            );
        }
        // A pod of neither role learns where the master is but takes no rank.
        let mut p = pod(&j, "extra", 0);
        pytorch(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(
            main_env(&p),
            expected_env("test-pytorch-master-0.test-pytorch", "23456", "3", "")
        );
    }

    #[test]
    fn a_declared_port_is_kept_and_another_number_is_added() {
        let j = job("ns", "t").task("master", 1).task("worker", 1).build();
        let mut p = pod(&j, "master", 0);
        if let Some(c) = p.spec.as_mut().and_then(|s| s.containers.first_mut()) {
            c.ports = Some(vec![ContainerPort {
                name: Some("pytorchjob-port".into()),
                container_port: 123,
                ..ContainerPort::default()
            }]);
        }
        pytorch(&["--port=123"]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(main_ports(&p).len(), 1, "port 123 is already declared");
        pytorch(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(
            main_ports(&p),
            vec![
                (Some("pytorchjob-port".to_string()), 123),
                (Some("pytorchjob-port".to_string()), 23456)
            ]
        );
    }

    #[test]
    fn the_master_address_follows_a_fixed_hostname() {
        let j = job("ns", "t")
            .task("master", 1)
            .task_hostname("master", "rdv", "net")
            .task("worker", 1)
            .build();
        let mut p = pod(&j, "worker", 0);
        pytorch(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(main_env(&p)[0].1, "rdv.net");
    }

    #[test]
    fn workers_can_wait_for_the_master() {
        let j = job("ns", "test-pytorch")
            .task("master", 1)
            .task("worker", 1)
            .build();
        let plugin = pytorch(&[
            "--wait-master-enabled=true",
            "--wait-master-image=alpine:latest",
            "--wait-master-timeout=600",
        ]);
        let mut p = pod(&j, "worker", 0);
        plugin.on_pod_create(&j, &mut p).unwrap();
        let inits = p
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.clone())
            .unwrap_or_default();
        let names: Vec<_> = inits.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["setup", "wait-for-master"]);
        let wait = &inits[1];
        assert_eq!(wait.image.as_deref(), Some("alpine:latest"));
        let command = wait.command.clone().unwrap_or_default();
        assert_eq!(command[..2], ["sh".to_string(), "-c".to_string()]);
        let script = &command[2];
        assert!(script.contains("TIMEOUT=600\n"), "{script}");
        assert!(
            script.contains("nc -z test-pytorch-master-0.test-pytorch 23456"),
            "{script}"
        );
        assert!(
            script.contains("/dev/tcp/test-pytorch-master-0.test-pytorch/23456"),
            "{script}"
        );

        // Once is enough, and the master never waits for itself.
        plugin.on_pod_create(&j, &mut p).unwrap();
        let count = |p: &Pod| {
            p.spec
                .as_ref()
                .and_then(|s| s.init_containers.as_ref())
                .map_or(0, |i| i.iter().filter(|c| c.name == WAIT_CONTAINER).count())
        };
        assert_eq!(count(&p), 1);
        let mut m = pod(&j, "master", 0);
        plugin.on_pod_create(&j, &mut m).unwrap();
        assert_eq!(count(&m), 0);
        let mut w = pod(&j, "worker", 0);
        pytorch(&["--wait-master-enabled=false"])
            .on_pod_create(&j, &mut w)
            .unwrap();
        assert_eq!(count(&w), 0);
    }

    #[test]
    fn a_worker_pod_without_an_index_is_an_error() {
        let j = job("ns", "t").task("master", 1).task("worker", 1).build();
        let mut p = pod(&j, "worker", 0);
        p.metadata.name = Some("t-worker-x".into());
        let err = pytorch(&[])
            .on_pod_create(&j, &mut p)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "job plugin pytorch: pod \"t-worker-x\" has no replica index: its name \
                 should end in -<index>"
            )
        );
    }
}
