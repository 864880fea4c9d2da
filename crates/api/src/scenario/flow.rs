//! Checks of JobFlows and JobTemplates, as Volcano's JobFlow admission webhook makes them (the
//! flows' dependencies form a graph without cycles, every target names a flow), plus the
//! quantity checks every Job spec gets.

use std::collections::{BTreeMap, BTreeSet};

use super::LoadError;
use super::object::Object;
use super::site::Site;
use super::validate::pod_spec_quantities;
use crate::batch::JobSpec;
use crate::flow::{JobFlow, JobTemplate, retain_policy};

/// The checks of a JobFlow or a JobTemplate; other kinds pass.
pub(super) fn object(site: &Site, object: &Object) -> Result<(), LoadError> {
    match object {
        Object::JobFlow(flow) => job_flow(site, flow),
        Object::JobTemplate(template) => job_template(site, template),
        _ => Ok(()),
    }
}

/// A JobFlow's flows are named once each, depend on flows it has, without a cycle.
fn job_flow(site: &Site, flow: &JobFlow) -> Result<(), LoadError> {
    let policy = flow.spec.job_retain_policy.as_str();
    if !matches!(policy, "" | retain_policy::RETAIN | retain_policy::DELETE) {
        return Err(site.field_error(
            "spec.jobRetainPolicy",
            format!("must be \"retain\" or \"delete\", got {policy:?}"),
        ));
    }
    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (i, step) in flow.spec.flows.iter().enumerate() {
        if step.name.is_empty() {
            return Err(
                site.field_error(format!("spec.flows[{i}].name"), "must name a JobTemplate")
            );
        }
        let targets = step
            .depends_on
            .iter()
            .flat_map(|d| d.targets.iter().map(String::as_str))
            .collect();
        if graph.insert(&step.name, targets).is_some() {
            return Err(site.field_error(
                format!("spec.flows[{i}].name"),
                format!("flow {:?} is defined twice", step.name),
            ));
        }
    }
    for (i, step) in flow.spec.flows.iter().enumerate() {
        for (j, target) in graph[step.name.as_str()].iter().enumerate() {
            if !graph.contains_key(target) {
                return Err(site.field_error(
                    format!("spec.flows[{i}].dependsOn.targets[{j}]"),
                    format!("no flow named {target:?} in this JobFlow"),
                ));
            }
        }
    }
    if let Some(cycle) = find_cycle(&graph) {
        return Err(site.field_error(
            "spec.flows",
            format!(
                "the flows' dependencies are not a DAG: {}",
                cycle.join(" -> ")
            ),
        ));
    }
    for (i, step) in flow.spec.flows.iter().enumerate() {
        if let Some(spec) = step.patch.as_ref().and_then(|p| p.job_spec.as_ref()) {
            job_spec(site, &format!("spec.flows[{i}].patch.jobSpec"), spec)?;
        }
    }
    Ok(())
}

/// A JobTemplate's spec passes the checks of a Job's.
fn job_template(site: &Site, template: &JobTemplate) -> Result<(), LoadError> {
    job_spec(site, "spec", &template.spec.0)
}

fn job_spec(site: &Site, prefix: &str, spec: &JobSpec) -> Result<(), LoadError> {
    for (i, task) in spec.tasks.iter().enumerate() {
        if let Some(pod_spec) = &task.template.spec {
            pod_spec_quantities(
                site,
                &format!("{prefix}.tasks[{i}].template.spec"),
                pod_spec,
            )?;
        }
    }
    Ok(())
}

/// A dependency cycle, as the flow names along it (the first repeated at the end).
fn find_cycle<'a>(graph: &BTreeMap<&'a str, Vec<&'a str>>) -> Option<Vec<&'a str>> {
    fn walk<'a>(
        node: &'a str,
        graph: &BTreeMap<&'a str, Vec<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(at) = path.iter().position(|n| *n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node);
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = walk(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node);
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| walk(node, graph, &mut Vec::new(), &mut done))
}
