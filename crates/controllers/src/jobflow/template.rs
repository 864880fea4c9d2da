//! The JobTemplate controller: a template's status lists the Jobs made from it, as Volcano's
//! `syncJobTemplate` does.

use volcano_api::NamespacedName;
use volcano_api::batch::Job;
use volcano_api::flow::{JobTemplate, JobTemplateStatus, labels};

use super::object_string;
use super::sync::in_namespace;

/// The status to write on `template`, given the Jobs of its namespace; `None` when no Job was
/// made from it (Volcano then leaves the status alone) or the status already says so.
pub fn sync_job_template(template: &JobTemplate, jobs: &[Job]) -> Option<JobTemplateStatus> {
    let key = NamespacedName::of(&template.metadata);
    let value = object_string(&key.namespace, &key.name);
    let made: Vec<String> = jobs
        .iter()
        .filter(|j| in_namespace(&j.metadata, &key.namespace))
        .filter(|j| {
            j.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(labels::CREATED_BY_JOB_TEMPLATE))
                == Some(&value)
        })
        .filter_map(|j| j.metadata.name.clone())
        .collect();
    if made.is_empty() {
        return None;
    }
    let status = JobTemplateStatus {
        job_depends_on_list: made,
    };
    (template.status.as_ref() != Some(&status)).then_some(status)
}
