//! The plan of a run: what exists at time zero, what is submitted later and when, and when
//! each node goes down, comes up or shrinks. Built from the annotations, every value checked.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use volcano_api::Objects;
use volcano_api::batch::Job;
use volcano_api::bus::Command;
use volcano_api::flow::{JobFlow, JobTemplate};
use volcano_api::k8s_openapi::api::core::v1::{Node, Pod};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::keys;
use volcano_api::scenario::{LoadError, ObjectKey, Source};
use volcano_api::scheduling::{PodGroup, Queue, ResourceList};

use super::annotations::{
    DOWN_AT, DURATION, FAIL_AFTER, Located, SHRINK_AT, SHRINK_TO, SUBMIT_AT, UP_AT, annotation,
    parse_resources,
};

/// An object created during the run.
#[derive(Debug, Clone)]
pub enum Submission {
    /// A Volcano Job (admitted already).
    Job(Box<Job>),
    /// A pod.
    Pod(Box<Pod>),
    /// A PodGroup.
    PodGroup(Box<PodGroup>),
    /// A queue.
    Queue(Box<Queue>),
    /// A bus Command.
    Command(Box<Command>),
    /// A JobFlow.
    JobFlow(Box<JobFlow>),
    /// A JobTemplate.
    JobTemplate(Box<JobTemplate>),
}

/// What happens to a node.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeChange {
    /// It goes away: NotReady, its pods lost.
    Down,
    /// It comes (back): Ready.
    Up,
    /// Its allocatable becomes these amounts (resources not listed keep theirs).
    Shrink(ResourceList),
}

/// Everything a run will do on its own, in time order.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The objects of time zero.
    pub initial: Objects,
    /// Later objects, by submission time (stable: input order within one instant).
    pub submissions: Vec<(Duration, Submission)>,
    /// Node changes, by time (stable).
    pub node_events: Vec<(Duration, String, NodeChange)>,
    /// Nodes whose first event is `up-at`: they join the cluster then.
    pub initially_down: Vec<String>,
}

/// Splits `objects` into what exists at time zero and what comes later, and reads the node
/// events, checking every simulation annotation.
pub fn plan(
    objects: Objects,
    sources: &BTreeMap<ObjectKey, Source>,
) -> Result<Plan, Box<LoadError>> {
    let at = Located { sources };
    let mut plan = Plan::default();
    let Objects {
        nodes,
        pods,
        pod_groups,
        queues,
        jobs,
        priority_classes,
        commands,
        namespaces,
        persistent_volumes,
        persistent_volume_claims,
        storage_classes,
        csi_nodes,
        replica_sets,
        stateful_sets,
        deployments,
        cron_jobs,
        job_flows,
        job_templates,
        hyper_nodes,
    } = objects;
    plan.initial.priority_classes = priority_classes;
    // Namespaces and storage exist from the start: nothing in a trace submits them later.
    plan.initial.namespaces = namespaces;
    plan.initial.persistent_volumes = persistent_volumes;
    plan.initial.persistent_volume_claims = persistent_volume_claims;
    plan.initial.storage_classes = storage_classes;
    plan.initial.csi_nodes = csi_nodes;
    // The network topology is part of the cluster, as its nodes are.
    plan.initial.hyper_nodes = hyper_nodes;
    // Workloads too: their pods are listed beside them and their annotations shape those
    // pods' PodGroups from the first look of the controllers.
    plan.initial.replica_sets = replica_sets;
    plan.initial.stateful_sets = stateful_sets;
    plan.initial.deployments = deployments;
    // CronJobs exist from the start; the Jobs they create come from the controller.
    plan.initial.cron_jobs = cron_jobs;
    // Flows and templates come at their `submit-at`; their Jobs come as the flows make them.
    for f in job_flows {
        match submit_at(&at, "JobFlow", &f.metadata)? {
            t if t.is_zero() => plan.initial.job_flows.push(f),
            t => plan.submissions.push((t, Submission::JobFlow(Box::new(f)))),
        }
    }
    for jt in job_templates {
        match submit_at(&at, "JobTemplate", &jt.metadata)? {
            t if t.is_zero() => plan.initial.job_templates.push(jt),
            t => plan
                .submissions
                .push((t, Submission::JobTemplate(Box::new(jt)))),
        }
    }

    for node in &nodes {
        node_events(&at, node, &mut plan)?;
    }
    plan.initial.nodes = nodes;

    for q in queues {
        match submit_at(&at, "Queue", &q.metadata)? {
            t if t.is_zero() => plan.initial.queues.push(q),
            t => plan.submissions.push((t, Submission::Queue(Box::new(q)))),
        }
    }
    // PodGroups before pods: bare pods without their own time come with their group.
    let mut group_times: BTreeMap<(String, String), Duration> = BTreeMap::new();
    for pg in pod_groups {
        lifetimes(&at, "PodGroup", &pg.metadata, &pg.metadata, "")?;
        let t = submit_at(&at, "PodGroup", &pg.metadata)?;
        group_times.insert(
            (
                pg.metadata.namespace.clone().unwrap_or_default(),
                pg.metadata.name.clone().unwrap_or_default(),
            ),
            t,
        );
        if t.is_zero() {
            plan.initial.pod_groups.push(pg);
        } else {
            plan.submissions
                .push((t, Submission::PodGroup(Box::new(pg))));
        }
    }
    for pod in pods {
        lifetimes(&at, "Pod", &pod.metadata, &pod.metadata, "")?;
        let own = annotation(&pod.metadata, SUBMIT_AT).is_some();
        let mut t = submit_at(&at, "Pod", &pod.metadata)?;
        if !own && let Some(group) = group_name(&pod) {
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            t = group_times.get(&(ns, group)).copied().unwrap_or(t);
        }
        if t.is_zero() {
            plan.initial.pods.push(pod);
        } else {
            plan.submissions
                .push((t, Submission::Pod(Box::new(Arc::unwrap_or_clone(pod)))));
        }
    }
    for job in jobs {
        lifetimes(&at, "Job", &job.metadata, &job.metadata, "")?;
        // A Job's pods are created by its controller, so a `submit-at` on a pod template can
        // only mean the Job's: taken when the Job has none and its templates agree.
        let mut from_templates: Option<(Duration, String)> = None;
        for (i, task) in job.spec.tasks.iter().enumerate() {
            if let Some(meta) = &task.template.metadata {
                let prefix = format!("spec.tasks[{i}].template.");
                let t = at.duration("Job", &job.metadata, meta, &prefix, SUBMIT_AT)?;
                lifetimes(&at, "Job", &job.metadata, meta, &prefix)?;
                let field = format!("{prefix}metadata.annotations.{SUBMIT_AT}");
                match (t, &from_templates) {
                    (Some(t), Some((first, first_field))) if t != *first => {
                        return Err(at.error(
                            "Job",
                            &job.metadata,
                            &field,
                            format!(
                                "differs from {first_field}; the Job is submitted once: put {SUBMIT_AT} on the Job"
                            ),
                        ));
                    }
                    (Some(t), None) => from_templates = Some((t, field)),
                    _ => {}
                }
            }
        }
        let own = annotation(&job.metadata, SUBMIT_AT).is_some();
        let t = match (own, from_templates) {
            (false, Some((t, _))) => t,
            _ => submit_at(&at, "Job", &job.metadata)?,
        };
        if t.is_zero() {
            plan.initial.jobs.push(job);
        } else {
            plan.submissions.push((t, Submission::Job(Box::new(job))));
        }
    }
    for cmd in commands {
        match submit_at(&at, "Command", &cmd.metadata)? {
            t if t.is_zero() => plan.initial.commands.push(cmd),
            t => plan
                .submissions
                .push((t, Submission::Command(Box::new(cmd)))),
        }
    }
    plan.submissions.sort_by_key(|(t, _)| *t);
    plan.node_events.sort_by_key(|(t, _, _)| *t);
    Ok(plan)
}

/// The PodGroup a pod names, if any.
pub fn group_name(pod: &Pod) -> Option<String> {
    annotation(&pod.metadata, keys::GROUP_NAME)
        .or_else(|| annotation(&pod.metadata, keys::VOLCANO_GROUP_NAME))
        .map(str::to_string)
}

fn submit_at(at: &Located<'_>, kind: &str, meta: &ObjectMeta) -> Result<Duration, Box<LoadError>> {
    Ok(at
        .duration(kind, meta, meta, "", SUBMIT_AT)?
        .unwrap_or_default())
}

fn lifetimes(
    at: &Located<'_>,
    kind: &str,
    owner: &ObjectMeta,
    meta: &ObjectMeta,
    prefix: &str,
) -> Result<(), Box<LoadError>> {
    for key in [DURATION, FAIL_AFTER] {
        at.duration(kind, owner, meta, prefix, key)?;
    }
    Ok(())
}

/// Reads one node's events. A node whose first event is `up-at` starts down and joins then;
/// two events at the same instant would leave its state to chance and are refused.
fn node_events(at: &Located<'_>, node: &Node, plan: &mut Plan) -> Result<(), Box<LoadError>> {
    let meta = &node.metadata;
    let name = meta.name.clone().unwrap_or_default();
    let field = |key: &str| format!("metadata.annotations.{key}");
    if annotation(meta, SUBMIT_AT).is_some() {
        return Err(at.error(
            "Node",
            meta,
            &field(SUBMIT_AT),
            format!("nodes are not submitted; a node that joins later is written {UP_AT}"),
        ));
    }
    let time = |key: &str| at.duration("Node", meta, meta, "", key);
    let (down, up, shrink) = (time(DOWN_AT)?, time(UP_AT)?, time(SHRINK_AT)?);
    let shrink_to = match annotation(meta, SHRINK_TO) {
        Some(text) => {
            Some(parse_resources(text).map_err(|m| at.error("Node", meta, &field(SHRINK_TO), m))?)
        }
        None => None,
    };
    let missing = |has: &str, needs: &str| {
        at.error(
            "Node",
            meta,
            &field(needs),
            format!("{has} is set but {needs} is not; give both"),
        )
    };
    let shrink = match (shrink, shrink_to) {
        (Some(t), Some(list)) => Some((t, list)),
        (None, None) => None,
        (Some(_), None) => return Err(missing(SHRINK_AT, SHRINK_TO)),
        (None, Some(_)) => return Err(missing(SHRINK_TO, SHRINK_AT)),
    };
    if let (Some(d), Some(u)) = (down, up)
        && d == u
    {
        return Err(at.error(
            "Node",
            meta,
            &field(UP_AT),
            format!("{UP_AT} and {DOWN_AT} are the same instant; which comes first?"),
        ));
    }
    if let Some(u) = up
        && down.is_none_or(|d| u < d)
    {
        plan.initially_down.push(name.clone());
    }
    if let Some(d) = down {
        plan.node_events.push((d, name.clone(), NodeChange::Down));
    }
    if let Some(u) = up {
        plan.node_events.push((u, name.clone(), NodeChange::Up));
    }
    if let Some((t, list)) = shrink {
        plan.node_events.push((t, name, NodeChange::Shrink(list)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn plan_of(text: &str) -> Result<Plan, Box<LoadError>> {
        let s = volcano_api::scenario::load_str(Path::new("t.yaml"), text)
            .unwrap_or_else(|e| panic!("{e}"));
        plan(s.objects, &s.sources)
    }

    const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  annotations: ANN\nstatus: {allocatable: {cpu: \"4\"}}\n";

    fn node(ann: &str) -> String {
        NODE.replace("ANN", ann)
    }

    #[test]
    fn objects_split_by_submission_time_and_bare_pods_follow_their_group() {
        let text = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g, namespace: ns, annotations: {sim.volcano-rs.io/submit-at: 5m}}\nspec: {minMember: 1}\n---\n\
            apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, annotations: {scheduling.k8s.io/group-name: g}}\nspec: {schedulerName: volcano, containers: [{name: c, image: x}]}\n---\n\
            apiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: ns}\nspec: {containers: [{name: c, image: x}]}\n";
        let p = plan_of(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.initial.pods.len(), 1);
        let times: Vec<u64> = p.submissions.iter().map(|(t, _)| t.as_secs()).collect();
        assert_eq!(times, vec![300, 300]);
    }

    fn job(job_ann: &str, template_ann: &[&str]) -> String {
        let tasks: String = template_ann
            .iter()
            .enumerate()
            .map(|(i, a)| {
                format!(
                    "  - name: t{i}\n    replicas: 1\n    template:\n      metadata: {{annotations: {{{a}}}}}\n      spec: {{containers: [{{name: c, image: x}}]}}\n"
                )
            })
            .collect();
        format!(
            "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: j, namespace: ns, annotations: {{{job_ann}}}}}\nspec:\n  tasks:\n{tasks}"
        )
    }

    #[test]
    fn namespaces_and_storage_objects_exist_from_the_start() {
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n\
            apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: local}\nprovisioner: x\n---\n\
            apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1}\nspec: {capacity: {storage: 1Gi}}\n---\n\
            apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: team}\nspec: {}\n---\n\
            apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: n1}\nspec: {drivers: []}\n";
        let p = plan_of(text).unwrap_or_else(|e| panic!("{e}"));
        let o = &p.initial;
        assert_eq!(
            [
                o.namespaces.len(),
                o.storage_classes.len(),
                o.persistent_volumes.len(),
                o.persistent_volume_claims.len(),
                o.csi_nodes.len(),
            ],
            [1; 5]
        );
        assert!(p.submissions.is_empty());
    }

    #[test]
    fn a_job_is_submitted_at_its_own_time_else_its_templates_agreed_one() {
        let at = |text: &str| {
            let p = plan_of(text).unwrap_or_else(|e| panic!("{e}"));
            p.submissions.first().map_or(0, |(t, _)| t.as_secs())
        };
        let five = "sim.volcano-rs.io/submit-at: 5m";
        let ten = "sim.volcano-rs.io/submit-at: 10m";
        assert_eq!(at(&job("", &[five, five, ""])), 300);
        assert_eq!(at(&job(ten, &[five])), 600);
        let e = plan_of(&job("", &[five, ten])).err().map(|e| e.to_string());
        let e = e.unwrap_or_default();
        assert!(
            e.contains("Job ns/j") && e.contains("spec.tasks[1].template"),
            "{e}"
        );
    }

    #[test]
    fn node_events_are_read_and_a_lone_up_at_means_joining_later() {
        let p = plan_of(&node(
            "{sim.volcano-rs.io/down-at: 2h, sim.volcano-rs.io/up-at: 3h}",
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.node_events.len(), 2);
        assert!(p.initially_down.is_empty());
        let p = plan_of(&node("{sim.volcano-rs.io/up-at: 1h}")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.initially_down, vec!["n1".to_string()]);
    }

    #[test]
    fn bad_node_events_name_the_field() {
        for (ann, field) in [
            ("{sim.volcano-rs.io/down-at: soon}", DOWN_AT),
            ("{sim.volcano-rs.io/shrink-at: 1h}", SHRINK_TO),
            ("{sim.volcano-rs.io/shrink-to: \"cpu=2\"}", SHRINK_AT),
            (
                "{sim.volcano-rs.io/shrink-at: 1h, sim.volcano-rs.io/shrink-to: \"cpu=lots\"}",
                SHRINK_TO,
            ),
            (
                "{sim.volcano-rs.io/down-at: 1h, sim.volcano-rs.io/up-at: 60m}",
                UP_AT,
            ),
            ("{sim.volcano-rs.io/submit-at: 1h}", SUBMIT_AT),
        ] {
            let e = plan_of(&node(ann)).err().map(|e| e.to_string());
            let e = e.unwrap_or_else(|| panic!("{ann} accepted"));
            assert!(e.contains("t.yaml") && e.contains("Node n1"), "{e}");
            assert!(e.contains(&format!("metadata.annotations.{field}")), "{e}");
        }
    }
}
