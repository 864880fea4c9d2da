//! A PodGroup's sub-groups (Volcano's sub-jobs): its `subGroupPolicy` splits the gang's pods by
//! label into smaller gangs, each with its own size and network topology, and each policy
//! needs `minSubGroups` of them ready. Pods no policy takes form one default sub-group. Built
//! once per session from the pods' labels; task statuses are read as they change.

use std::collections::BTreeMap;
use std::sync::Arc;

use volcano_api::label_selector::selector_matches;
use volcano_api::scheduling::{NetworkTopologySpec, SubGroupPolicySpec};

use super::{TaskId, TaskInfo, TaskStatus};

/// One sub-group.
#[derive(Debug, Clone, PartialEq)]
pub struct SubGroup {
    /// The policy (index into [`SubGroups::policies`]) that formed it; `None` for the default
    /// sub-group of pods no policy takes.
    pub policy: Option<usize>,
    /// `<policy>-<label values>` (`<default>` for the default sub-group), for messages.
    pub name: String,
    /// Pods it needs placed to be ready (`subGroupSize`, 1 when unset or default).
    pub min_available: i32,
    /// Its own network topology, when the policy gives one (the job's, for the default one).
    pub network_topology: Option<Arc<NetworkTopologySpec>>,
    /// The first label value as a number, when it is one (Volcano's `MatchIndex`): sub-groups
    /// are tried in partition order.
    pub index: Option<i64>,
    /// Its tasks.
    pub tasks: Vec<TaskId>,
}

/// A job's sub-groups.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubGroups {
    /// Each policy's name and `minSubGroups`.
    pub policies: Vec<(String, i32)>,
    /// The sub-groups, in the order they are tried when none is required before another.
    pub groups: Vec<SubGroup>,
}

/// The label values that put a pod into a sub-group of `policy` (Volcano's
/// `getSubJobMatchValues`): `None` when the selector refuses the pod or a key is missing or
/// empty, and when the policy names no keys (Volcano's policy then takes no pod).
fn match_values(
    policy: &SubGroupPolicySpec,
    labels: Option<&BTreeMap<String, String>>,
) -> Option<Vec<String>> {
    if policy.match_label_keys.is_empty() {
        return None;
    }
    if let Some(sel) = &policy.label_selector
        && !selector_matches(sel, labels)
    {
        return None;
    }
    policy
        .match_label_keys
        .iter()
        .map(|k| {
            labels
                .and_then(|l| l.get(k))
                .filter(|v| !v.is_empty())
                .cloned()
        })
        .collect()
}

impl SubGroups {
    /// The sub-groups `policies` make of `job_tasks` (ids into the task arena `s`); the
    /// default sub-group takes the job's own network topology, as Volcano's does.
    pub fn of(
        s: &[Arc<TaskInfo>],
        job_tasks: &[TaskId],
        policies: &[SubGroupPolicySpec],
        job_topology: Option<&Arc<NetworkTopologySpec>>,
    ) -> Self {
        let mut groups: Vec<SubGroup> = Vec::new();
        let mut by_key: BTreeMap<(usize, Vec<String>), usize> = BTreeMap::new();
        let mut default: Option<usize> = None;
        for &t in job_tasks {
            let labels = s[t.idx()].pod.metadata.labels.as_ref();
            // A pod belongs to the first policy that takes it, as in Volcano.
            let taken = policies
                .iter()
                .enumerate()
                .find_map(|(i, p)| match_values(p, labels).map(|v| (i, v)));
            let g = match taken {
                Some((i, values)) => *by_key.entry((i, values.clone())).or_insert_with(|| {
                    let p = &policies[i];
                    groups.push(SubGroup {
                        policy: Some(i),
                        name: format!("{}-{}", p.name, values.join("-")),
                        min_available: p.sub_group_size.unwrap_or(1),
                        network_topology: p.network_topology.clone().map(Arc::new),
                        index: values.first().and_then(|v| v.parse().ok()),
                        tasks: Vec::new(),
                    });
                    groups.len() - 1
                }),
                None => *default.get_or_insert_with(|| {
                    groups.push(SubGroup {
                        policy: None,
                        name: "<default>".to_string(),
                        min_available: 1,
                        network_topology: job_topology.cloned(),
                        index: None,
                        tasks: Vec::new(),
                    });
                    groups.len() - 1
                }),
            };
            groups[g].tasks.push(t);
        }
        groups.sort_by(|a, b| {
            (a.policy.is_none(), a.policy, a.index, &a.name).cmp(&(
                b.policy.is_none(),
                b.policy,
                b.index,
                &b.name,
            ))
        });
        SubGroups {
            policies: policies
                .iter()
                .map(|p| (p.name.clone(), p.min_sub_groups.unwrap_or(0)))
                .collect(),
            groups,
        }
    }

    /// Sub-groups of policy `p` whose tasks `counts` at least their minimum.
    fn count_of(
        &self,
        s: &[Arc<TaskInfo>],
        p: usize,
        counts: &impl Fn(TaskStatus, bool) -> bool,
    ) -> i32 {
        self.groups
            .iter()
            .filter(|g| g.policy == Some(p) && g.reaches_min(s, counts))
            .count() as i32
    }

    /// Every policy with `minSubGroups` has that many sub-groups whose tasks `counts` reach
    /// their minimum; otherwise the first policy short, with how many it has.
    pub fn short_policy(
        &self,
        s: &[Arc<TaskInfo>],
        counts: impl Fn(TaskStatus, bool) -> bool,
    ) -> Option<(&str, i32, i32)> {
        self.policies
            .iter()
            .enumerate()
            .filter(|(_, (_, min))| *min > 0)
            .map(|(p, (name, min))| (name.as_str(), self.count_of(s, p, &counts), *min))
            .find(|(_, have, min)| have < min)
    }

    /// Policies with fewer sub-groups than their `minSubGroups`, whatever their tasks' state.
    pub fn too_few(&self) -> Option<(&str, i32, i32)> {
        self.policies
            .iter()
            .enumerate()
            .map(|(p, (name, min))| {
                let have = self.groups.iter().filter(|g| g.policy == Some(p)).count() as i32;
                (name.as_str(), have, *min)
            })
            .find(|(_, have, min)| have < min)
    }
}

impl SubGroup {
    /// Whether the tasks `counts` reach the sub-group's minimum.
    pub fn reaches_min(
        &self,
        s: &[Arc<TaskInfo>],
        counts: &impl Fn(TaskStatus, bool) -> bool,
    ) -> bool {
        let n = self
            .tasks
            .iter()
            .filter(|&&t| {
                let task = &s[t.idx()];
                counts(task.status, task.best_effort)
            })
            .count();
        n as i64 >= i64::from(self.min_available)
    }

    /// Placed (allocated or succeeded) tasks and pending BestEffort ones reach the minimum
    /// (Volcano's `SubJobInfo.IsReady`).
    pub fn is_ready(&self, s: &[Arc<TaskInfo>]) -> bool {
        self.reaches_min(s, &occupied)
    }

    /// As [`SubGroup::is_ready`], with pipelined tasks counted.
    pub fn is_pipelined(&self, s: &[Arc<TaskInfo>]) -> bool {
        self.reaches_min(s, &|st, be| occupied(st, be) || st == TaskStatus::Pipelined)
    }
}

/// A task that counts towards a gang's readiness: placed, finished, or pending with nothing
/// to ask for.
pub fn occupied(status: TaskStatus, best_effort: bool) -> bool {
    status.is_allocated()
        || status == TaskStatus::Succeeded
        || (status == TaskStatus::Pending && best_effort)
}
