//! Checks of JobFlows and JobTemplates, as Volcano's JobFlow admission webhook makes them (the
//! flows' dependencies form a graph without cycles, every target names a flow), plus the
//! quantity checks every Job spec gets.

use super::LoadError;
use super::object::Object;
use super::site::Site;
use super::validate::pod_spec_quantities;
use crate::batch::JobSpec;
use crate::flow::{JobFlow, JobTemplate};
use crate::spec_checks::check_job_flow;

/// The checks of a JobFlow or a JobTemplate; other kinds pass.
pub(super) fn object(site: &Site, object: &Object) -> Result<(), LoadError> {
    match object {
        Object::JobFlow(flow) => job_flow(site, flow),
        Object::JobTemplate(template) => job_template(site, template),
        _ => Ok(()),
    }
}

/// A JobFlow's flows are named once each, depend on flows it has, without a cycle; the Job
/// specs its flows patch in pass a Job's checks.
fn job_flow(site: &Site, flow: &JobFlow) -> Result<(), LoadError> {
    check_job_flow(flow).map_err(|e| {
        let e = e.field_error();
        site.field_error(e.field, e.message)
    })?;
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
