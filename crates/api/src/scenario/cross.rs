//! Checks across objects, made once every file is read: every queue, PodGroup and priority
//! class an object names exists in the scenario, and the HyperNodes form a tree.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::site::Site;
use super::{LoadError, ObjectKey, Scenario, Source};
use crate::keys;
use crate::topology::tree::{HyperNodeTree, NodeRef, TreeError};

/// Priority classes every cluster has without declaring them.
const BUILTIN_PRIORITY_CLASSES: [&str; 2] = ["system-cluster-critical", "system-node-critical"];

/// Runs every cross-object check; the first failure is returned.
pub(super) fn check(scenario: &Scenario) -> Result<(), LoadError> {
    let refs = References::new(scenario);
    queues(scenario, &refs)?;
    pod_groups_of_pods(scenario)?;
    priority_classes(scenario, &refs)?;
    hyper_node_tree(scenario)
}

/// The names objects may refer to.
struct References {
    queues: BTreeSet<String>,
    priority_classes: BTreeSet<String>,
}

impl References {
    fn new(scenario: &Scenario) -> Self {
        let objects = &scenario.objects;
        let mut queues: BTreeSet<String> = objects
            .queues
            .iter()
            .map(|q| name(&q.metadata).to_string())
            .collect();
        queues.insert(keys::DEFAULT_QUEUE.to_string());
        queues.insert(keys::ROOT_QUEUE.to_string());
        let mut priority_classes: BTreeSet<String> = objects
            .priority_classes
            .iter()
            .map(|pc| name(&pc.metadata).to_string())
            .collect();
        priority_classes.extend(BUILTIN_PRIORITY_CLASSES.iter().map(|s| s.to_string()));
        References {
            queues,
            priority_classes,
        }
    }

    fn queue_error(&self, site: &Site, field: &str, queue: &str) -> Option<LoadError> {
        if self.queues.contains(queue) {
            return None;
        }
        let known: Vec<&str> = self.queues.iter().map(String::as_str).collect();
        Some(site.field_error(
            field,
            format!(
                "queue {queue} is not declared; declare a Queue named {queue} or use one of: {}",
                known.join(", ")
            ),
        ))
    }

    fn priority_class_error(
        &self,
        site: &Site,
        field: &str,
        class: Option<&str>,
    ) -> Option<LoadError> {
        let class = class.filter(|c| !c.is_empty())?;
        if self.priority_classes.contains(class) {
            return None;
        }
        Some(site.field_error(
            field,
            format!("PriorityClass {class} is not declared; declare it in the scenario"),
        ))
    }
}

fn name(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

fn namespace(meta: &ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or_default()
}

/// The site of a loaded object, for errors about it.
fn site(scenario: &Scenario, kind: &str, meta: &ObjectMeta) -> Site {
    let key = ObjectKey {
        kind: kind.to_string(),
        namespace: namespace(meta).to_string(),
        name: name(meta).to_string(),
    };
    // Every loaded object has a recorded source; an empty one only guards against a bug.
    let source = scenario
        .sources
        .get(&key)
        .cloned()
        .unwrap_or_else(|| Source {
            file: Default::default(),
            document: 0,
            line: None,
        });
    Site::object(source, &key)
}

fn queues(scenario: &Scenario, refs: &References) -> Result<(), LoadError> {
    let objects = &scenario.objects;
    for pg in &objects.pod_groups {
        let queue = non_empty_or(&pg.spec.queue, keys::DEFAULT_QUEUE);
        if let Some(err) = refs.queue_error(
            &site(scenario, "PodGroup", &pg.metadata),
            "spec.queue",
            queue,
        ) {
            return Err(err);
        }
    }
    for job in &objects.jobs {
        let queue = non_empty_or(&job.spec.queue, keys::DEFAULT_QUEUE);
        if let Some(err) =
            refs.queue_error(&site(scenario, "Job", &job.metadata), "spec.queue", queue)
        {
            return Err(err);
        }
    }
    for queue in &objects.queues {
        let parent = non_empty_or(&queue.spec.parent, keys::ROOT_QUEUE);
        if let Some(err) = refs.queue_error(
            &site(scenario, "Queue", &queue.metadata),
            "spec.parent",
            parent,
        ) {
            return Err(err);
        }
    }
    parent_cycles(scenario)
}

/// Every queue's ancestors must end at `root`: a chain of parents that comes back to itself
/// would leave the queues in it without a share, so it is refused with the whole loop named.
fn parent_cycles(scenario: &Scenario) -> Result<(), LoadError> {
    let parents: BTreeMap<&str, &str> = scenario
        .objects
        .queues
        .iter()
        .map(|q| {
            let name = name(&q.metadata);
            let parent = if name == keys::ROOT_QUEUE {
                ""
            } else {
                non_empty_or(&q.spec.parent, keys::ROOT_QUEUE)
            };
            (name, parent)
        })
        .collect();
    for queue in &scenario.objects.queues {
        let start = name(&queue.metadata);
        let mut chain = vec![start];
        let mut at = start;
        while let Some(&parent) = parents.get(at) {
            if parent.is_empty() || parent == keys::ROOT_QUEUE {
                break;
            }
            if let Some(pos) = chain.iter().position(|q| *q == parent) {
                let mut cycle: Vec<&str> = chain[pos..].to_vec();
                cycle.push(parent);
                return Err(site(scenario, "Queue", &queue.metadata).field_error(
                    "spec.parent",
                    format!(
                        "queues form a cycle ({}); every queue's parents must lead to root",
                        cycle.join(" -> ")
                    ),
                ));
            }
            chain.push(parent);
            at = parent;
        }
    }
    Ok(())
}

fn non_empty_or<'a>(value: &'a str, default: &'a str) -> &'a str {
    if value.is_empty() { default } else { value }
}

/// A pod's group annotation must name a PodGroup of its namespace, or one a Job of the
/// scenario will own: the job controller names it `<job>-<job uid>`; plain `<job>` is
/// accepted as well, since a scenario's jobs usually carry no uid.
fn pod_groups_of_pods(scenario: &Scenario) -> Result<(), LoadError> {
    let objects = &scenario.objects;
    let mut groups: BTreeSet<(&str, String)> = objects
        .pod_groups
        .iter()
        .map(|pg| (namespace(&pg.metadata), name(&pg.metadata).to_string()))
        .collect();
    for job in &objects.jobs {
        let ns = namespace(&job.metadata);
        let job_name = name(&job.metadata);
        groups.insert((ns, job_name.to_string()));
        if let Some(uid) = job.metadata.uid.as_deref().filter(|u| !u.is_empty()) {
            groups.insert((ns, format!("{job_name}-{uid}")));
        }
    }
    for pod in &objects.pods {
        let Some(group) = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(keys::GROUP_NAME))
        else {
            continue;
        };
        let ns = namespace(&pod.metadata);
        if groups.contains(&(ns, group.clone())) {
            continue;
        }
        let field = format!("metadata.annotations.{}", keys::GROUP_NAME);
        let message = if group.is_empty() {
            format!("is empty; it must name a PodGroup of namespace {ns}")
        } else {
            format!(
                "PodGroup {ns}/{group} does not exist; declare it, or a Job in namespace {ns} whose controller creates it"
            )
        };
        return Err(site(scenario, "Pod", &pod.metadata).field_error(field, message));
    }
    Ok(())
}

fn priority_classes(scenario: &Scenario, refs: &References) -> Result<(), LoadError> {
    let objects = &scenario.objects;
    for pod in &objects.pods {
        let class = pod
            .spec
            .as_ref()
            .and_then(|s| s.priority_class_name.as_deref());
        if let Some(err) = refs.priority_class_error(
            &site(scenario, "Pod", &pod.metadata),
            "spec.priorityClassName",
            class,
        ) {
            return Err(err);
        }
    }
    // A PodGroup's class is not checked: no admission plugin checks it in a cluster, and
    // Volcano falls back to the global default priority when it names an unknown class.
    for job in &objects.jobs {
        let s = site(scenario, "Job", &job.metadata);
        if let Some(err) = refs.priority_class_error(
            &s,
            "spec.priorityClassName",
            Some(&job.spec.priority_class_name),
        ) {
            return Err(err);
        }
        for (i, task) in job.spec.tasks.iter().enumerate() {
            let class = task
                .template
                .spec
                .as_ref()
                .and_then(|s| s.priority_class_name.as_deref());
            let field = format!("spec.tasks[{i}].template.spec.priorityClassName");
            if let Some(err) = refs.priority_class_error(&s, &field, class) {
                return Err(err);
            }
        }
    }
    let mut global_default: Option<&str> = None;
    for pc in &objects.priority_classes {
        if pc.global_default != Some(true) {
            continue;
        }
        if let Some(first) = global_default {
            return Err(site(scenario, "PriorityClass", &pc.metadata).field_error(
                "globalDefault",
                format!("PriorityClass {first} is already the global default; only one may be"),
            ));
        }
        global_default = Some(name(&pc.metadata));
    }
    Ok(())
}

/// The HyperNodes form a tree over the scenario's nodes; an error names the HyperNode it is
/// about (for a cycle or a clash, the first one the message names).
fn hyper_node_tree(scenario: &Scenario) -> Result<(), LoadError> {
    let objects = &scenario.objects;
    if objects.hyper_nodes.is_empty() {
        return Ok(());
    }
    let nodes: Vec<NodeRef<'_>> = objects
        .nodes
        .iter()
        .map(|n| (name(&n.metadata), n.metadata.labels.as_ref()))
        .collect();
    let Err(e) = HyperNodeTree::build(&objects.hyper_nodes, &nodes) else {
        return Ok(());
    };
    let about = match &e {
        TreeError::Invalid { hyper_node, .. } | TreeError::NotSubset { hyper_node, .. } => {
            hyper_node.clone()
        }
        TreeError::Cycle { path } => path.first().cloned().unwrap_or_default(),
        TreeError::TwoParents { second, .. } => second.clone(),
        TreeError::TierNotLower { parent, .. } => parent.clone(),
        TreeError::NodeInTwo { second, .. } => second.clone(),
    };
    let meta = objects
        .hyper_nodes
        .iter()
        .map(|h| &h.metadata)
        .find(|m| name(m) == about);
    let site = match meta {
        Some(m) => site(scenario, "HyperNode", m),
        None => site(scenario, "HyperNode", &objects.hyper_nodes[0].metadata),
    };
    Err(match e {
        TreeError::Invalid { error, .. } => site.field_error(error.field, error.message),
        other => site.field_error("spec.members", other.to_string()),
    })
}
