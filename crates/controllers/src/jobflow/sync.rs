//! One JobFlow turn, as Volcano's `syncJobFlow` takes it: delete the Jobs of a succeeded flow
//! whose policy says so; otherwise create each flow's Job whose dependencies have completed,
//! then recompute the status and apply the phase's transition.

use std::collections::BTreeMap;

use thiserror::Error;
use volcano_api::NamespacedName;
use volcano_api::batch::{Job, JobStatus, job_phase};
use volcano_api::flow::{Flow, JobFlow, JobFlowStatus, JobTemplate, flow_phase, labels};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::status::{advance_phase, job_flow_status};
use super::{job_name, object_string};
use crate::time::Instant;

/// Why a JobFlow turn could not do all it should.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum JobFlowError {
    /// A flow names a JobTemplate that does not exist in the flow's namespace.
    #[error(
        "JobFlow {flow}: spec.flows[{index}].name {template:?}: no JobTemplate {template:?} in namespace {namespace:?}"
    )]
    MissingTemplate {
        /// The JobFlow.
        flow: NamespacedName,
        /// The flow's index in `spec.flows`.
        index: usize,
        /// The template named.
        template: String,
        /// The namespace searched.
        namespace: String,
    },
}

/// What one JobFlow turn asks of the cluster.
#[derive(Debug, Clone, Default)]
pub struct FlowSync {
    /// Jobs to create, in flow order.
    pub create_jobs: Vec<Job>,
    /// Jobs to delete (the flow succeeded and its policy is `delete`).
    pub delete_jobs: Vec<NamespacedName>,
    /// The status to write, when the turn got that far.
    pub status: Option<JobFlowStatus>,
    /// What stopped the turn early; the Jobs listed above are still to be made, as Volcano
    /// has made them by then.
    pub error: Option<JobFlowError>,
}

/// One turn of the JobFlow `flow`, given the JobTemplates and Jobs of its namespace (others are
/// ignored) and the time now.
pub fn sync_job_flow(
    flow: &JobFlow,
    templates: &[JobTemplate],
    jobs: &[Job],
    now: Instant,
) -> FlowSync {
    let phase = flow
        .status
        .as_ref()
        .map(|s| s.state.phase.as_str())
        .unwrap_or_default();
    // Volcano's Failed and Terminating states do nothing at all: no Job is created any more.
    if phase == flow_phase::FAILED || phase == flow_phase::TERMINATING {
        return FlowSync::default();
    }
    let namespace = NamespacedName::of(&flow.metadata).namespace;
    let name = flow.metadata.name.clone().unwrap_or_default();
    let owned = owned_jobs(&namespace, &name, jobs);
    let mut out = FlowSync::default();
    if flow.spec.job_retain_policy == volcano_api::flow::retain_policy::DELETE
        && phase == flow_phase::SUCCEED
    {
        out.delete_jobs = owned
            .iter()
            .map(|j| {
                NamespacedName::new(
                    namespace.as_str(),
                    j.metadata.name.as_deref().unwrap_or_default(),
                )
            })
            .collect();
        return out;
    }
    let by_name: BTreeMap<&str, &Job> = jobs
        .iter()
        .filter(|j| in_namespace(&j.metadata, &namespace))
        .filter_map(|j| j.metadata.name.as_deref().map(|n| (n, j)))
        .collect();
    for (index, step) in flow.spec.flows.iter().enumerate() {
        let job = job_name(&name, &step.name);
        if by_name.contains_key(job.as_str()) || !dependencies_completed(&name, step, &by_name) {
            continue;
        }
        match job_from_template(flow, &namespace, step, &job, templates) {
            Some(j) => out.create_jobs.push(j),
            None => {
                out.error = Some(JobFlowError::MissingTemplate {
                    flow: NamespacedName::new(namespace.as_str(), name.as_str()),
                    index,
                    template: step.name.clone(),
                    namespace,
                });
                return out;
            }
        }
    }
    let previous = flow.status.clone().unwrap_or_default();
    let mut status = job_flow_status(&previous, &owned, now);
    advance_phase(&mut status, flow.spec.flows.len());
    out.status = Some(status);
    out
}

/// Whether every target of a flow has a Job in phase `Completed`.
fn dependencies_completed(flow_name: &str, step: &Flow, jobs: &BTreeMap<&str, &Job>) -> bool {
    let Some(depends_on) = &step.depends_on else {
        return true;
    };
    depends_on.targets.iter().all(|target| {
        jobs.get(job_name(flow_name, target).as_str())
            .and_then(|j| j.status.as_ref())
            .is_some_and(|s: &JobStatus| s.state.phase == job_phase::COMPLETED)
    })
}

/// The Jobs a flow made: those of its namespace labelled with it.
pub fn owned_jobs<'a>(namespace: &str, name: &str, jobs: &'a [Job]) -> Vec<&'a Job> {
    let value = object_string(namespace, name);
    jobs.iter()
        .filter(|j| in_namespace(&j.metadata, namespace))
        .filter(|j| {
            j.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(labels::CREATED_BY_JOB_FLOW))
                == Some(&value)
        })
        .collect()
}

/// The Job of one flow: the template's spec, labelled and annotated with its template and flow,
/// controlled by the flow.
fn job_from_template(
    flow: &JobFlow,
    namespace: &str,
    step: &Flow,
    job: &str,
    templates: &[JobTemplate],
) -> Option<Job> {
    let template = templates.iter().find(|t| {
        in_namespace(&t.metadata, namespace)
            && t.metadata.name.as_deref() == Some(step.name.as_str())
    })?;
    let flow_name = flow.metadata.name.clone().unwrap_or_default();
    let marks: BTreeMap<String, String> = [
        (
            labels::CREATED_BY_JOB_TEMPLATE.to_string(),
            object_string(namespace, &step.name),
        ),
        (
            labels::CREATED_BY_JOB_FLOW.to_string(),
            object_string(namespace, &flow_name),
        ),
    ]
    .into();
    let owner = OwnerReference {
        api_version: "flow.volcano.sh/v1alpha1".to_string(),
        kind: "JobFlow".to_string(),
        name: flow_name,
        uid: flow.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        // Unset, as on every reference the controllers write: setting it needs `update` on
        // the owner's finalizers, which a real API server enforces and deploy/ does not grant.
        block_owner_deletion: None,
    };
    let mut out = Job::new(job, template.spec.0.clone());
    out.metadata = ObjectMeta {
        name: Some(job.to_string()),
        namespace: Some(namespace.to_string()),
        labels: Some(marks.clone()),
        annotations: Some(marks),
        owner_references: Some(vec![owner]),
        ..ObjectMeta::default()
    };
    Some(out)
}

/// Whether an object lives in `namespace` (a missing namespace is `default`, as stored).
pub(super) fn in_namespace(meta: &ObjectMeta, namespace: &str) -> bool {
    meta.namespace
        .as_deref()
        .unwrap_or(volcano_api::object_ref::DEFAULT_NAMESPACE)
        == namespace
}
