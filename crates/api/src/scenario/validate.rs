//! Checks of one object alone, as the API server's validation and Volcano's admission webhooks
//! make them: every quantity parses, and the Volcano CRDs' value rules hold.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, Node, PersistentVolume, PersistentVolumeClaim, Pod, PodSpec,
    ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::LoadError;
use super::object::Object;
use super::site::Site;
use crate::batch::Job;
use crate::keys;
use crate::resources;
use crate::scheduling::{PodGroup, Queue, queue_state};
use crate::spec_checks::{check_hyper_node, check_network_topology, check_sub_group_policy};

/// Checks one decoded object.
pub(super) fn object(site: &Site, object: &Object) -> Result<(), LoadError> {
    match object {
        Object::Node(node) => node_quantities(site, node),
        Object::Pod(pod) => pod_quantities(site, pod),
        Object::PodGroup(pg) => pod_group(site, pg),
        Object::Queue(queue) => self::queue(site, queue),
        Object::Job(job) => self::job(site, job),
        Object::ConfigMap(cm) => config_map(site, cm),
        Object::PersistentVolume(pv) => persistent_volume(site, pv),
        Object::PersistentVolumeClaim(pvc) => persistent_volume_claim(site, pvc),
        Object::ReplicaSet(rs) => replica_set(site, rs),
        Object::StatefulSet(sts) => stateful_set(site, sts),
        Object::Deployment(d) => deployment(site, d),
        Object::CronJob(cj) => super::validate_cronjob::cron_job(site, cj),
        // Checked by `flow`, which uses this module's quantity checks.
        Object::JobFlow(_) | Object::JobTemplate(_) => Ok(()),
        Object::HyperNode(hn) => {
            check_hyper_node(hn).map_err(|e| site.field_error(e.field, e.message))
        }
        Object::Command(_)
        | Object::PriorityClass(_)
        | Object::Namespace(_)
        | Object::StorageClass(_)
        | Object::CSINode(_) => Ok(()),
    }
}

/// Every quantity of `list` parses; errors name `prefix.<resource>`.
fn quantities(
    site: &Site,
    prefix: &str,
    list: Option<&BTreeMap<String, Quantity>>,
) -> Result<(), LoadError> {
    let Some(list) = list else { return Ok(()) };
    resources::parse_resource_list(list)
        .map(|_| ())
        .map_err(|(name, err)| site.field_error(format!("{prefix}.{name}"), err.to_string()))
}

fn node_quantities(site: &Site, node: &Node) -> Result<(), LoadError> {
    let Some(status) = &node.status else {
        return Ok(());
    };
    quantities(site, "status.allocatable", status.allocatable.as_ref())?;
    quantities(site, "status.capacity", status.capacity.as_ref())
}

/// A volume's size must parse: the volume binder compares it with what claims request.
fn persistent_volume(site: &Site, pv: &PersistentVolume) -> Result<(), LoadError> {
    let capacity = pv.spec.as_ref().and_then(|s| s.capacity.as_ref());
    quantities(site, "spec.capacity", capacity)
}

/// A claim's request must parse: the volume binder matches it against volumes' capacity.
fn persistent_volume_claim(site: &Site, pvc: &PersistentVolumeClaim) -> Result<(), LoadError> {
    if let Some(resources) = pvc.spec.as_ref().and_then(|s| s.resources.as_ref()) {
        quantities(site, "spec.resources.requests", resources.requests.as_ref())?;
        quantities(site, "spec.resources.limits", resources.limits.as_ref())?;
    }
    let capacity = pvc.status.as_ref().and_then(|s| s.capacity.as_ref());
    quantities(site, "status.capacity", capacity)
}

fn replica_set(site: &Site, rs: &ReplicaSet) -> Result<(), LoadError> {
    let spec = rs.spec.as_ref();
    workload(
        site,
        &rs.metadata,
        spec.and_then(|s| s.replicas),
        spec.and_then(|s| s.template.as_ref()),
    )
}

fn stateful_set(site: &Site, sts: &StatefulSet) -> Result<(), LoadError> {
    let spec = sts.spec.as_ref();
    workload(
        site,
        &sts.metadata,
        spec.and_then(|s| s.replicas),
        spec.map(|s| &s.template),
    )
}

fn deployment(site: &Site, d: &Deployment) -> Result<(), LoadError> {
    let spec = d.spec.as_ref();
    workload(
        site,
        &d.metadata,
        spec.and_then(|s| s.replicas),
        spec.map(|s| &s.template),
    )
}

/// A workload's replica count and pod template quantities, and the gang size its annotation
/// asks of the PodGroup controller: in a cluster a bad one falls back to 1 with only a log
/// line, which a scenario author would never see, so a scenario refuses it.
fn workload(
    site: &Site,
    meta: &ObjectMeta,
    replicas: Option<i32>,
    template: Option<&PodTemplateSpec>,
) -> Result<(), LoadError> {
    if let Some(n) = replicas.filter(|n| *n < 0) {
        return Err(site.field_error("spec.replicas", format!("must be >= 0, got {n}")));
    }
    if let Some(value) = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::GROUP_MIN_MEMBER))
    {
        crate::workload::parse_group_min_member(value).map_err(|e| {
            site.field_error(
                format!("metadata.annotations.{}", keys::GROUP_MIN_MEMBER),
                e.to_string(),
            )
        })?;
    }
    match template.and_then(|t| t.spec.as_ref()) {
        Some(spec) => pod_spec_quantities(site, "spec.template.spec", spec),
        None => Ok(()),
    }
}

fn pod_quantities(site: &Site, pod: &Pod) -> Result<(), LoadError> {
    match &pod.spec {
        Some(spec) => pod_spec_quantities(site, "spec", spec),
        None => Ok(()),
    }
}

/// The quantities of a pod spec, at `prefix` (`spec`, or a Job task's `template.spec`).
pub(super) fn pod_spec_quantities(
    site: &Site,
    prefix: &str,
    spec: &PodSpec,
) -> Result<(), LoadError> {
    containers(site, &format!("{prefix}.containers"), &spec.containers)?;
    if let Some(init) = &spec.init_containers {
        containers(site, &format!("{prefix}.initContainers"), init)?;
    }
    quantities(site, &format!("{prefix}.overhead"), spec.overhead.as_ref())?;
    if let Some(resources) = &spec.resources {
        requirements(site, &format!("{prefix}.resources"), resources)?;
    }
    Ok(())
}

fn containers(site: &Site, prefix: &str, containers: &[Container]) -> Result<(), LoadError> {
    for (i, container) in containers.iter().enumerate() {
        if let Some(resources) = &container.resources {
            requirements(site, &format!("{prefix}[{i}].resources"), resources)?;
        }
    }
    Ok(())
}

fn requirements(
    site: &Site,
    prefix: &str,
    resources: &ResourceRequirements,
) -> Result<(), LoadError> {
    quantities(
        site,
        &format!("{prefix}.requests"),
        resources.requests.as_ref(),
    )?;
    quantities(site, &format!("{prefix}.limits"), resources.limits.as_ref())
}

fn pod_group(site: &Site, pg: &PodGroup) -> Result<(), LoadError> {
    let spec = &pg.spec;
    if spec.min_member < 0 {
        return Err(site.field_error(
            "spec.minMember",
            format!("must be >= 0, got {}", spec.min_member),
        ));
    }
    if let Some((task, n)) = spec.min_task_member.iter().find(|(_, n)| **n < 0) {
        return Err(site.field_error(
            format!("spec.minTaskMember.{task}"),
            format!("must be >= 0, got {n}"),
        ));
    }
    if let Some(nt) = &spec.network_topology {
        check_network_topology(nt, "spec.networkTopology")
            .map_err(|e| site.field_error(e.field, e.message))?;
    }
    if let Some(policies) = &spec.sub_group_policy {
        check_sub_group_policy(policies, "spec.subGroupPolicy")
            .map_err(|e| site.field_error(e.field, e.message))?;
    }
    quantities(site, "spec.minResources", spec.min_resources.as_ref())
}

fn queue(site: &Site, queue: &Queue) -> Result<(), LoadError> {
    let spec = &queue.spec;
    if !(1..=65535).contains(&spec.weight) {
        return Err(site.field_error(
            "spec.weight",
            format!("must be between 1 and 65535, got {}", spec.weight),
        ));
    }
    quantities(site, "spec.capability", spec.capability.as_ref())?;
    quantities(site, "spec.deserved", spec.deserved.as_ref())?;
    if let Some(guarantee) = &spec.guarantee {
        quantities(site, "spec.guarantee.resource", guarantee.resource.as_ref())?;
    }
    let states = [
        queue_state::OPEN,
        queue_state::CLOSED,
        queue_state::CLOSING,
        queue_state::UNKNOWN,
    ];
    if let Some(status) = &queue.status
        && !status.state.is_empty()
        && !states.contains(&status.state.as_str())
    {
        return Err(site.field_error(
            "status.state",
            format!(
                "must be one of Open, Closed, Closing, Unknown, got {:?}",
                status.state
            ),
        ));
    }
    if let Some(status) = &queue.status {
        quantities(site, "status.allocated", status.allocated.as_ref())?;
    }
    Ok(())
}

/// Only what loading itself needs: the quantities of the task templates. Volcano's Job rules
/// (task names, replicas, minAvailable, policies...) are the admission library's, in
/// `volcano-controllers`, so they give the webhook's reasons.
fn job(site: &Site, job: &Job) -> Result<(), LoadError> {
    for (i, task) in job.spec.tasks.iter().enumerate() {
        if let Some(pod_spec) = &task.template.spec {
            pod_spec_quantities(site, &format!("spec.tasks[{i}].template.spec"), pod_spec)?;
        }
    }
    Ok(())
}

fn config_map(site: &Site, cm: &ConfigMap) -> Result<(), LoadError> {
    let has_conf = cm
        .data
        .as_ref()
        .is_some_and(|d| d.contains_key(keys::SCHEDULER_CONF_KEY));
    if has_conf {
        Ok(())
    } else {
        Err(site.field_error(
            "data",
            format!(
                "has no key {}; the only ConfigMap a scenario holds is the scheduler configuration",
                keys::SCHEDULER_CONF_KEY
            ),
        ))
    }
}
