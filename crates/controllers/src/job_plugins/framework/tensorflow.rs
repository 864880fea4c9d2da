//! The `tensorflow` plugin: writes `TF_CONFIG`, the JSON cluster spec TensorFlow's distribution
//! strategies read, into every main container: each role's `host:port` list and the pod's own
//! role and index.

use serde::Serialize;
use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::Pod;

use super::super::flags::{Arity, Flags};
use super::super::{JobPlugin, PluginError, pod_spec};
use super::{domain_name, env, numeric_index_from_name, port_flag, task_key};

const NAME: &str = "tensorflow";
/// The environment variable TensorFlow reads its cluster from.
pub const TF_CONFIG: &str = "TF_CONFIG";

const FLAGS: &[(&str, Arity)] = &[
    ("ps", Arity::Value),
    ("worker", Arity::Value),
    ("chief", Arity::Value),
    ("evaluator", Arity::Value),
    ("port", Arity::Value),
];

/// The `tensorflow` plugin with its arguments: which task plays which TensorFlow role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorflowPlugin {
    /// Parameter-server task (`--ps`, default `ps`).
    pub ps: String,
    /// Worker task (`--worker`, default `worker`).
    pub worker: String,
    /// Chief task (`--chief`, default `chief`).
    pub chief: String,
    /// Evaluator task (`--evaluator`, default `evaluator`).
    pub evaluator: String,
    /// Port every task listens on (`--port`, default 2222).
    pub port: i32,
}

/// `TF_CONFIG` as TensorFlow reads it. Field order is the JSON order Volcano writes.
#[derive(Serialize)]
struct TfConfig {
    cluster: Cluster,
    task: TfTask,
}

#[derive(Serialize, Default)]
struct Cluster {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    ps: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    worker: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    chief: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    evaluator: Vec<String>,
}

#[derive(Serialize)]
struct TfTask {
    #[serde(rename = "type")]
    type_: String,
    index: i64,
}

impl TensorflowPlugin {
    /// Parses `--ps`, `--worker`, `--chief`, `--evaluator` and `--port`.
    pub fn from_args(args: &[String]) -> Result<Self, PluginError> {
        let flags = Flags::parse(NAME, args, FLAGS)?;
        let role = |flag: &str| flags.text(flag).unwrap_or(flag).to_string();
        Ok(TensorflowPlugin {
            ps: role("ps"),
            worker: role("worker"),
            chief: role("chief"),
            evaluator: role("evaluator"),
            port: port_flag(NAME, "port", flags.integer("port")?, 2222)?,
        })
    }

    /// The TensorFlow role of a task; a task of no role keeps its own name as type.
    fn task_type(&self, task: &str) -> String {
        let role = if task == self.chief {
            "chief"
        } else if task == self.worker {
            "worker"
        } else if task == self.ps {
            "ps"
        } else if task == self.evaluator {
            "evaluator"
        } else {
            task
        };
        role.to_string()
    }

    fn config(&self, job: &Job, pod: &Pod) -> Result<TfConfig, PluginError> {
        let index = numeric_index_from_name(pod).map_err(|m| PluginError::new(NAME, m))?;
        let mut cluster = Cluster::default();
        for task in &job.spec.tasks {
            let hosts: Vec<String> = (0..i64::from(task.replicas.max(0)))
                .map(|i| format!("{}:{}", domain_name(job, task, i), self.port))
                .collect();
            let slot = if task.name == self.ps {
                &mut cluster.ps
            } else if task.name == self.worker {
                &mut cluster.worker
            } else if task.name == self.chief {
                &mut cluster.chief
            } else if task.name == self.evaluator {
                &mut cluster.evaluator
            } else {
                continue;
            };
            *slot = hosts;
        }
        Ok(TfConfig {
            cluster,
            task: TfTask {
                type_: self.task_type(task_key(pod)),
                index,
            },
        })
    }
}

impl JobPlugin for TensorflowPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_pod_create(&self, job: &Job, pod: &mut Pod) -> Result<(), PluginError> {
        // A single pod trains on its own; TensorFlow wants no TF_CONFIG then.
        if let [only] = job.spec.tasks.as_slice()
            && only.replicas == 1
        {
            return Ok(());
        }
        let raw = serde_json::to_string(&self.config(job, pod)?)
            .map_err(|e| PluginError::new(NAME, format!("cannot write TF_CONFIG: {e}")))?;
        for container in pod_spec(pod).containers.iter_mut() {
            container
                .env
                .get_or_insert_with(Vec::new)
                .push(env(TF_CONFIG, raw.clone()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::testing::{containers, job, pod};
    use super::*;

    fn tf(args: &[&str]) -> TensorflowPlugin {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        TensorflowPlugin::from_args(&args).unwrap_or_else(|e| panic!("{e}"))
    }

    fn tf_config(pod: &Pod) -> Vec<Option<String>> {
        containers(pod)
            .iter()
            .map(|c| {
                c.env
                    .iter()
                    .flatten()
                    .find(|e| e.name == TF_CONFIG)
                    .and_then(|e| e.value.clone())
            })
            .collect()
    }

    #[test]
    fn arguments_default_like_volcano() {
        assert_eq!(
            tf(&[]),
            TensorflowPlugin {
                ps: "ps".into(),
                worker: "worker".into(),
                chief: "chief".into(),
                evaluator: "evaluator".into(),
                port: 2222,
            }
        );
        let custom = tf(&[
            "--ps=p",
            "--worker=w",
            "--chief=c",
            "--evaluator=e",
            "--port=1",
        ]);
        assert_eq!(
            (
                custom.ps,
                custom.worker,
                custom.chief,
                custom.evaluator,
                custom.port
            ),
            ("p".into(), "w".into(), "c".into(), "e".into(), 1)
        );
    }

    #[test]
    fn every_role_gets_the_whole_cluster_and_its_own_place() {
        let j = job("ns", "train-123")
            .task("ps", 2)
            .task("worker", 2)
            .task("chief", 1)
            .build();
        let cluster = r#"{"cluster":{"ps":["train-123-ps-0.train-123:5000","train-123-ps-1.train-123:5000"],"worker":["train-123-worker-0.train-123:5000","train-123-worker-1.train-123:5000"],"chief":["train-123-chief-0.train-123:5000"]}"#;
        for (task, index) in [("ps", 1), ("worker", 0), ("chief", 0)] {
            let mut p = pod(&j, task, index);
            tf(&["--port=5000"]).on_pod_create(&j, &mut p).unwrap();
            let expected = format!(r#"{cluster},"task":{{"type":"{task}","index":{index}}}}}"#);
            assert_eq!(
                tf_config(&p),
                vec![Some(expected), None],
                "{task}: main container only"
            );
        }
    }

    #[test]
    fn renamed_roles_evaluators_and_untyped_tasks() {
        let j = job("ns", "t")
            .task("params", 1)
            .task("trainer", 1)
            .task("eval", 1)
            .task("tb", 1)
            .build();
        let plugin = tf(&["--ps=params", "--worker=trainer", "--evaluator=eval"]);
        let mut p = pod(&j, "tb", 0);
        plugin.on_pod_create(&j, &mut p).unwrap();
        assert_eq!(
            tf_config(&p)[0].as_deref(),
            Some(
                r#"{"cluster":{"ps":["t-params-0.t:2222"],"worker":["t-trainer-0.t:2222"],"evaluator":["t-eval-0.t:2222"]},"task":{"type":"tb","index":0}}"#
            ),
            "a task of no role is left out of the cluster and keeps its name as type"
        );
        let mut p = pod(&j, "trainer", 0);
        plugin.on_pod_create(&j, &mut p).unwrap();
        assert!(
            tf_config(&p)[0]
                .as_deref()
                .is_some_and(|c| c.ends_with(r#""task":{"type":"worker","index":0}}"#))
        );
    }

    #[test]
    fn a_fixed_hostname_is_every_replica_host() {
        let j = job("ns", "t")
            .task("ps", 2)
            .task_hostname("ps", "store", "net")
            .task("worker", 1)
            .build();
        let mut p = pod(&j, "worker", 0);
        tf(&[]).on_pod_create(&j, &mut p).unwrap();
        assert!(tf_config(&p)[0].as_deref().is_some_and(|c| {
            c.starts_with(r#"{"cluster":{"ps":["store.net:2222","store.net:2222"],"worker""#)
        }));
    }

    #[test]
    fn a_stand_alone_pod_gets_no_tf_config() {
        let j = job("ns", "t").task("worker", 1).build();
        let mut p = pod(&j, "worker", 0);
        tf(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(tf_config(&p), vec![None, None]);

        // Two replicas of one task do need it.
        let j = job("ns", "t").task("worker", 2).build();
        let mut p = pod(&j, "worker", 1);
        tf(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(
            tf_config(&p)[0].as_deref(),
            Some(
                r#"{"cluster":{"worker":["t-worker-0.t:2222","t-worker-1.t:2222"]},"task":{"type":"worker","index":1}}"#
            )
        );
    }

    #[test]
    fn a_pod_without_an_index_is_an_error() {
        let j = job("ns", "t").task("ps", 1).task("worker", 1).build();
        let mut p = pod(&j, "ps", 0);
        p.metadata.name = Some("solo".into());
        let err = tf(&[]).on_pod_create(&j, &mut p).err().map(|e| e.plugin);
        assert_eq!(err, Some("tensorflow"));
    }
}
