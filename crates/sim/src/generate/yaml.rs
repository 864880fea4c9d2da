//! Writing objects back as scenario YAML, so a generated workload can be saved, read, edited
//! and run again as an ordinary scenario.

use serde::Serialize;
use volcano_api::Objects;

/// An object that could not be written as YAML.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {object} as YAML: {source}")]
pub struct YamlError {
    /// `Kind name` of the object.
    pub object: String,
    /// The serializer's error.
    #[source]
    pub source: serde_yaml_ng::Error,
}

/// The objects as one multi-document YAML text, in the order a reader wants them: queues,
/// priority classes, namespaces and storage classes, nodes, HyperNodes and CSI drivers,
/// volumes and claims, then the work (workloads before the PodGroups and pods they shape).
pub fn to_yaml(objects: &Objects) -> Result<String, YamlError> {
    let mut out = String::new();
    let name = |m: &volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        m.name.clone().unwrap_or_default()
    };
    for q in &objects.queues {
        document(&mut out, "Queue", &name(&q.metadata), q)?;
    }
    for pc in &objects.priority_classes {
        document(&mut out, "PriorityClass", &name(&pc.metadata), pc)?;
    }
    for ns in &objects.namespaces {
        document(&mut out, "Namespace", &name(&ns.metadata), ns)?;
    }
    for sc in &objects.storage_classes {
        document(&mut out, "StorageClass", &name(&sc.metadata), sc)?;
    }
    for n in &objects.nodes {
        document(&mut out, "Node", &name(&n.metadata), n)?;
    }
    for h in &objects.hyper_nodes {
        document(&mut out, "HyperNode", &name(&h.metadata), h)?;
    }
    for c in &objects.csi_nodes {
        document(&mut out, "CSINode", &name(&c.metadata), c)?;
    }
    for pv in &objects.persistent_volumes {
        document(&mut out, "PersistentVolume", &name(&pv.metadata), pv)?;
    }
    for pvc in &objects.persistent_volume_claims {
        document(&mut out, "PersistentVolumeClaim", &name(&pvc.metadata), pvc)?;
    }
    for d in &objects.deployments {
        document(&mut out, "Deployment", &name(&d.metadata), d)?;
    }
    for rs in &objects.replica_sets {
        document(&mut out, "ReplicaSet", &name(&rs.metadata), rs)?;
    }
    for sts in &objects.stateful_sets {
        document(&mut out, "StatefulSet", &name(&sts.metadata), sts)?;
    }
    for pg in &objects.pod_groups {
        document(&mut out, "PodGroup", &name(&pg.metadata), pg)?;
    }
    for p in &objects.pods {
        document(&mut out, "Pod", &name(&p.metadata), &**p)?;
    }
    for j in &objects.jobs {
        document(&mut out, "Job", &name(&j.metadata), j)?;
    }
    for c in &objects.commands {
        document(&mut out, "Command", &name(&c.metadata), c)?;
    }
    for cj in &objects.cron_jobs {
        document(&mut out, "CronJob", &name(&cj.metadata), cj)?;
    }
    Ok(out)
}

fn document(
    out: &mut String,
    kind: &str,
    name: &str,
    object: &impl Serialize,
) -> Result<(), YamlError> {
    let text = serde_yaml_ng::to_string(object).map_err(|source| YamlError {
        object: format!("{kind} {name}"),
        source,
    })?;
    if !out.is_empty() {
        out.push_str("---\n");
    }
    out.push_str(&text);
    Ok(())
}
