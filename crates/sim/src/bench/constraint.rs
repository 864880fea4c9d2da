//! The placement rule `volcano bench --constraint` gives every pending pod, in the shapes
//! kube-scheduler's own performance tests use, so a run measures what the rule costs.

use std::collections::BTreeMap;

use serde::Serialize;
use volcano_api::k8s_openapi::api::core::v1::{
    Affinity, ContainerPort, Pod, PodAffinity, PodAffinityTerm, PodAntiAffinity,
    TopologySpreadConstraint,
};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Node label naming the node.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// Node label naming the node's zone.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// Zones the nodes are spread over, round-robin, when a run has a constraint.
pub const ZONES: usize = 10;
/// Label every pending pod carries, valued with its job's name: the rules select on it.
pub const APP_LABEL: &str = "app";
/// The host port of `host-port` runs.
pub const HOST_PORT: i32 = 8080;

/// A placement rule given to every pending pod of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Constraint {
    /// Required anti-affinity to the pods of its own job (its `app` label) on the hostname:
    /// at most one pod of a job per node.
    PodAntiAffinity,
    /// Required affinity to the pods of its own job on the zone: a job's pods share a zone
    /// (the first one goes anywhere).
    PodAffinity,
    /// The job's pods spread over zones, `maxSkew: 1`, `DoNotSchedule`.
    TopologySpread,
    /// Host port 8080 (TCP): at most one such pod per node, whatever its job.
    HostPort,
}

impl Constraint {
    /// Every rule, in the order `--help` lists them.
    pub const ALL: [Constraint; 4] = [
        Constraint::PodAntiAffinity,
        Constraint::PodAffinity,
        Constraint::TopologySpread,
        Constraint::HostPort,
    ];

    /// The rule's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Constraint::PodAntiAffinity => "pod-anti-affinity",
            Constraint::PodAffinity => "pod-affinity",
            Constraint::TopologySpread => "topology-spread",
            Constraint::HostPort => "host-port",
        }
    }

    /// The rule named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Constraint> {
        Constraint::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether nodes need a zone label for the rule.
    pub fn needs_zones(self) -> bool {
        matches!(self, Constraint::PodAffinity | Constraint::TopologySpread)
    }

    /// Gives `pod` of job `job` the rule.
    pub fn apply(self, pod: &mut Pod, job: &str) {
        pod.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(APP_LABEL.to_string(), job.to_string());
        let Some(spec) = pod.spec.as_mut() else {
            return;
        };
        let own_job = || LabelSelector {
            match_labels: Some([(APP_LABEL.to_string(), job.to_string())].into()),
            ..LabelSelector::default()
        };
        let term = |key: &str| PodAffinityTerm {
            label_selector: Some(own_job()),
            topology_key: key.to_string(),
            ..PodAffinityTerm::default()
        };
        match self {
            Constraint::PodAntiAffinity => {
                spec.affinity = Some(Affinity {
                    pod_anti_affinity: Some(PodAntiAffinity {
                        required_during_scheduling_ignored_during_execution: Some(vec![term(
                            HOSTNAME_LABEL,
                        )]),
                        ..PodAntiAffinity::default()
                    }),
                    ..Affinity::default()
                });
            }
            Constraint::PodAffinity => {
                spec.affinity = Some(Affinity {
                    pod_affinity: Some(PodAffinity {
                        required_during_scheduling_ignored_during_execution: Some(vec![term(
                            ZONE_LABEL,
                        )]),
                        ..PodAffinity::default()
                    }),
                    ..Affinity::default()
                });
            }
            Constraint::TopologySpread => {
                spec.topology_spread_constraints = Some(vec![TopologySpreadConstraint {
                    max_skew: 1,
                    topology_key: ZONE_LABEL.to_string(),
                    when_unsatisfiable: "DoNotSchedule".to_string(),
                    label_selector: Some(own_job()),
                    ..TopologySpreadConstraint::default()
                }]);
            }
            Constraint::HostPort => {
                for c in &mut spec.containers {
                    c.ports = Some(vec![ContainerPort {
                        container_port: HOST_PORT,
                        host_port: Some(HOST_PORT),
                        protocol: Some("TCP".to_string()),
                        ..ContainerPort::default()
                    }]);
                }
            }
        }
    }
}

/// The zone of node `i`.
pub fn zone_of(i: usize) -> String {
    format!("zone-{}", i % ZONES)
}
