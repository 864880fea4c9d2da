//! The `hcclrank` plugin: gives each master and worker pod its global rank in the
//! `hccl/rankIndex` annotation, which Ascend's HCCL device plugin reads to order NPUs across
//! pods. The masters come first, then the workers.

use std::collections::BTreeMap;

use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::Pod;
use volcano_api::keys;

use super::super::flags::{Arity, Flags};
use super::super::{JobPlugin, PluginError};
use super::{find_task, task_key};
use crate::change::Change;

const NAME: &str = "hcclrank";
/// The annotation carrying the pod's rank.
pub const HCCL_RANK: &str = "hccl/rankIndex";

const FLAGS: &[(&str, Arity)] = &[("master", Arity::Value), ("worker", Arity::Value)];

/// The `hcclrank` plugin with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HcclRankPlugin {
    /// Task ranked first (`--master`, default `master`).
    pub master: String,
    /// Task ranked after the masters (`--worker`, default `worker`).
    pub worker: String,
}

impl HcclRankPlugin {
    /// Parses `--master` and `--worker`.
    pub fn from_args(args: &[String]) -> Result<Self, PluginError> {
        let flags = Flags::parse(NAME, args, FLAGS)?;
        Ok(HcclRankPlugin {
            master: flags.text("master").unwrap_or("master").to_string(),
            worker: flags.text("worker").unwrap_or("worker").to_string(),
        })
    }
}

/// The value of the first `RANK` variable of the pod's main containers: a rank another plugin
/// (or the user) already chose is the one to annotate.
fn rank_env(pod: &Pod) -> Option<String> {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .flat_map(|c| c.env.iter().flatten())
        .find(|e| e.name == "RANK")
        .and_then(|e| e.value.clone())
        .filter(|v| !v.is_empty())
}

/// The pod's index within its task, from the `volcano.sh/task-index` label the job controller
/// sets (Volcano's `GetTaskIndexOfPod`).
fn labelled_index(pod: &Pod) -> Result<i64, PluginError> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let text = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(keys::TASK_INDEX))
        .ok_or_else(|| {
            PluginError::new(
                NAME,
                format!("pod {name:?} has no {} label", keys::TASK_INDEX),
            )
        })?;
    text.parse::<i64>().map_err(|_| {
        PluginError::new(
            NAME,
            format!(
                "pod {name:?} has label {}={text:?}, which is not a number",
                keys::TASK_INDEX
            ),
        )
    })
}

impl JobPlugin for HcclRankPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_pod_create(&self, job: &Job, pod: &mut Pod) -> Result<(), PluginError> {
        let annotated = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(HCCL_RANK))
            .is_some_and(|v| !v.is_empty());
        if annotated {
            return Ok(());
        }
        let rank = match rank_env(pod) {
            Some(rank) => rank,
            None => {
                let task = task_key(pod);
                if task == self.master {
                    labelled_index(pod)?.to_string()
                } else if task == self.worker {
                    let masters = find_task(job, &self.master).map_or(0, |t| t.replicas);
                    (i64::from(masters) + labelled_index(pod)?).to_string()
                } else {
                    return Ok(());
                }
            }
        };
        pod.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(HCCL_RANK.to_string(), rank);
        Ok(())
    }

    // Volcano's hcclrank creates nothing and, unlike the other plugins, does not record itself
    // in controlledResources.
    fn on_job_add(
        &self,
        _job: &Job,
        _controlled: &mut BTreeMap<String, String>,
    ) -> Result<Vec<Change>, PluginError> {
        Ok(Vec::new())
    }

    fn on_job_delete(
        &self,
        _job: &Job,
        _controlled: &mut BTreeMap<String, String>,
    ) -> Result<Vec<Change>, PluginError> {
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::testing::{job, pod};
    use super::super::env;
    use super::*;

    fn hccl(args: &[&str]) -> HcclRankPlugin {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        HcclRankPlugin::from_args(&args).unwrap_or_else(|e| panic!("{e}"))
    }

    fn rank(pod: &Pod) -> Option<&str> {
        pod.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(HCCL_RANK))
            .map(String::as_str)
    }

    fn ranked(plugin: &HcclRankPlugin, j: &Job, task: &str, index: u32) -> Option<String> {
        let mut p = pod(j, task, index);
        plugin.on_pod_create(j, &mut p).unwrap();
        rank(&p).map(str::to_string)
    }

    #[test]
    fn arguments_default_like_volcano() {
        assert_eq!(
            hccl(&[]),
            HcclRankPlugin {
                master: "master".into(),
                worker: "worker".into()
            }
        );
        assert_eq!(
            hccl(&["--master", "test-master", "--worker", "test-worker"]),
            HcclRankPlugin {
                master: "test-master".into(),
                worker: "test-worker".into()
            }
        );
    }

    #[test]
    fn masters_rank_first_then_workers() {
        let j = job("ns", "j").task("master", 3).task("worker", 2).build();
        let plugin = hccl(&[]);
        assert_eq!(ranked(&plugin, &j, "master", 2).as_deref(), Some("2"));
        assert_eq!(ranked(&plugin, &j, "worker", 0).as_deref(), Some("3"));
        assert_eq!(ranked(&plugin, &j, "worker", 1).as_deref(), Some("4"));
    }

    #[test]
    fn renamed_roles_are_followed_and_other_tasks_are_not_ranked() {
        let j = job("ns", "j")
            .task("custom-master", 4)
            .task("custom-worker", 3)
            .task("ps", 1)
            .build();
        let plugin = hccl(&["--master=custom-master", "--worker=custom-worker"]);
        assert_eq!(
            ranked(&plugin, &j, "custom-master", 3).as_deref(),
            Some("3")
        );
        assert_eq!(
            ranked(&plugin, &j, "custom-worker", 2).as_deref(),
            Some("6")
        );
        assert_eq!(ranked(&plugin, &j, "ps", 0), None);
    }

    #[test]
    fn without_masters_workers_rank_from_zero() {
        let j = job("ns", "j").task("master", 0).task("worker", 2).build();
        assert_eq!(ranked(&hccl(&[]), &j, "worker", 0).as_deref(), Some("0"));
    }

    #[test]
    fn an_existing_annotation_or_rank_variable_wins() {
        let j = job("ns", "j").task("master", 1).task("worker", 2).build();
        let mut p = pod(&j, "worker", 1);
        if let Some(a) = p.metadata.annotations.as_mut() {
            a.insert(HCCL_RANK.into(), "1".into());
        }
        hccl(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(rank(&p), Some("1"));

        let mut p = pod(&j, "worker", 1);
        if let Some(c) = p.spec.as_mut().map(|s| &mut s.containers[0]) {
            c.env = Some(vec![env("OTHER", "x"), env("RANK", "5")]);
        }
        hccl(&[]).on_pod_create(&j, &mut p).unwrap();
        assert_eq!(rank(&p), Some("5"));
    }

    #[test]
    fn a_ranked_pod_without_its_index_label_is_an_error() {
        let j = job("ns", "j").task("master", 1).build();
        let mut p = pod(&j, "master", 0);
        p.metadata.labels = None;
        let err = hccl(&[])
            .on_pod_create(&j, &mut p)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("job plugin hcclrank: pod \"j-master-0\" has no volcano.sh/task-index label")
        );
    }

    #[test]
    fn does_not_touch_controlled_resources() {
        let j = job("ns", "j").build();
        let mut controlled = BTreeMap::new();
        assert!(
            hccl(&[])
                .on_job_add(&j, &mut controlled)
                .unwrap()
                .is_empty()
        );
        assert!(controlled.is_empty());
    }
}
