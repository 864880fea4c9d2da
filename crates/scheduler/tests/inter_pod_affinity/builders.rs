//! Builders the inter-pod affinity scenario and property tests share: zoned nodes, terms
//! naming an app, and the affinity objects around them.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{
    Affinity, PodAffinity, PodAffinityTerm, PodAntiAffinity, WeightedPodAffinityTerm,
};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use volcano_api::scheduling::PodGroupStatus;
use volcano_scheduler::conf::{DEFAULT_SCHEDULER_CONF, SchedulerConf};
use volcano_testkit::build::*;

use super::support::conf;

/// The hostname label.
pub const HOSTNAME: &str = "kubernetes.io/hostname";
/// The zone label.
pub const ZONE: &str = "topology.kubernetes.io/zone";

pub fn default_conf() -> SchedulerConf {
    conf(DEFAULT_SCHEDULER_CONF)
}

pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A term selecting pods labelled `app=<app>` over `topology`.
pub fn app_term(app: &str, topology: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_labels: Some(labels(&[("app", app)])),
            ..Default::default()
        }),
        topology_key: topology.into(),
        ..Default::default()
    }
}

pub fn required_affinity(t: PodAffinityTerm) -> Affinity {
    Affinity {
        pod_affinity: Some(PodAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![t]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn required_anti_affinity(t: PodAffinityTerm) -> Affinity {
    Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![t]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn preferred_affinity(weight: i32, t: PodAffinityTerm) -> Affinity {
    Affinity {
        pod_affinity: Some(PodAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight,
                    pod_affinity_term: t,
                },
            ]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Gives the pods whose name starts with `prefix` the label `app=<app>` and `affinity`.
pub fn shape(objs: &mut Objects, prefix: &str, app: &str, affinity: Option<Affinity>) {
    for p in objs.pods.iter_mut().map(Arc::make_mut).filter(|p| {
        p.metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with(prefix))
    }) {
        p.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("app".into(), app.into());
        if let Some(spec) = p.spec.as_mut() {
            spec.affinity = affinity.clone();
        }
    }
}

pub fn zoned(name: &str, zone: &str, cpu: i64) -> NodeBuilder {
    node(name)
        .cpu(cpu)
        .mem_gi(16)
        .label(HOSTNAME, name)
        .label(ZONE, zone)
}

pub fn bound(d: &volcano_scheduler::framework::Decisions) -> HashMap<String, String> {
    d.binds
        .iter()
        .map(|(k, n)| (k.name.clone(), n.clone()))
        .collect()
}

pub fn set_phase(objs: &mut Objects, pg: &str, phase: &str) {
    for g in objs
        .pod_groups
        .iter_mut()
        .filter(|g| g.metadata.name.as_deref() == Some(pg))
    {
        g.status = Some(PodGroupStatus {
            phase: phase.to_string(),
            ..Default::default()
        });
    }
}
