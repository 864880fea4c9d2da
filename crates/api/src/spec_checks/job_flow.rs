//! The checks Volcano's JobFlow admission webhook makes: every dependency names a flow of the
//! JobFlow and the dependencies form no cycle. Flows named twice and a retain policy other
//! than `retain` or `delete` are refused too: Volcano keeps the last of two flows of one name,
//! silently.

use std::collections::{BTreeMap, BTreeSet};

use super::FieldError;
use crate::flow::{JobFlow, retain_policy};

/// Why a JobFlow is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobFlowInvalid {
    /// A field is wrong on its own.
    #[error("{0}")]
    Field(FieldError),
    /// A dependency names no flow of this JobFlow.
    #[error("{field}: no flow named {target:?} in this JobFlow")]
    UndefinedTarget {
        /// `spec.flows[i].dependsOn.targets[j]`.
        field: String,
        /// The name it gives.
        target: String,
    },
    /// The dependencies go round: the flow names along the cycle, the first repeated last.
    #[error("spec.flows: the flows' dependencies are not a DAG: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
}

impl JobFlowInvalid {
    /// The field and message, for errors that frame them (a scenario file's).
    pub fn field_error(&self) -> FieldError {
        match self {
            JobFlowInvalid::Field(e) => e.clone(),
            JobFlowInvalid::UndefinedTarget { field, target } => FieldError::new(
                field.clone(),
                format!("no flow named {target:?} in this JobFlow"),
            ),
            JobFlowInvalid::Cycle(cycle) => FieldError::new(
                "spec.flows",
                format!(
                    "the flows' dependencies are not a DAG: {}",
                    cycle.join(" -> ")
                ),
            ),
        }
    }

    /// The denial Volcano's webhook gives (`jobflow Flow is not DAG: vertex is not defined:
    /// c`), with the cycle named where it names none.
    pub fn volcano_message(&self) -> String {
        match self {
            JobFlowInvalid::Field(e) => e.to_string(),
            JobFlowInvalid::UndefinedTarget { target, .. } => {
                format!("jobflow Flow is not DAG: vertex is not defined: {target}")
            }
            JobFlowInvalid::Cycle(cycle) => {
                format!("jobflow Flow is not DAG: {}", cycle.join(" -> "))
            }
        }
    }
}

/// A JobFlow's flows are named once each, depend on flows it has, without a cycle.
pub fn check_job_flow(flow: &JobFlow) -> Result<(), JobFlowInvalid> {
    let field = |f: String, m: String| JobFlowInvalid::Field(FieldError::new(f, m));
    let policy = flow.spec.job_retain_policy.as_str();
    if !matches!(policy, "" | retain_policy::RETAIN | retain_policy::DELETE) {
        return Err(field(
            "spec.jobRetainPolicy".into(),
            format!("must be \"retain\" or \"delete\", got {policy:?}"),
        ));
    }
    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (i, step) in flow.spec.flows.iter().enumerate() {
        if step.name.is_empty() {
            return Err(field(
                format!("spec.flows[{i}].name"),
                "must name a JobTemplate".into(),
            ));
        }
        let targets = step
            .depends_on
            .iter()
            .flat_map(|d| d.targets.iter().map(String::as_str))
            .collect();
        if graph.insert(&step.name, targets).is_some() {
            return Err(field(
                format!("spec.flows[{i}].name"),
                format!("flow {:?} is defined twice", step.name),
            ));
        }
    }
    for (i, step) in flow.spec.flows.iter().enumerate() {
        let targets = graph.get(step.name.as_str()).into_iter().flatten();
        for (j, target) in targets.enumerate() {
            if !graph.contains_key(target) {
                return Err(JobFlowInvalid::UndefinedTarget {
                    field: format!("spec.flows[{i}].dependsOn.targets[{j}]"),
                    target: target.to_string(),
                });
            }
        }
    }
    match find_cycle(&graph) {
        Some(cycle) => Err(JobFlowInvalid::Cycle(
            cycle.into_iter().map(str::to_string).collect(),
        )),
        None => Ok(()),
    }
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
