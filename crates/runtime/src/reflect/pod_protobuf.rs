//! A pod read from Kubernetes' protobuf encoding (as `k8s-pb` decodes it) into the fields that
//! the scheduler ([`slim_pod`](volcano_scheduler::cache::slim_pod)) and the controllers
//! ([`controller_pod`](volcano_controllers::pod_view::controller_pod)) keep of it, so that a pod
//! watched in protobuf reads exactly as the same pod watched in JSON, once each view is taken.
//!
//! Go's protobuf writes every field that is not a pointer, empty or not, where its JSON leaves
//! out the empty ones (`omitempty`). So an empty string, list or map, a `false` and a zero
//! port read here as unset, as they do from JSON. A pointer field is written by both
//! encodings whenever it is set, even to `false` or `""`, and passes as it is.

use std::collections::BTreeMap;

use k8s_pb::api::core::v1 as pb;
use k8s_pb::apimachinery::pkg::api::resource::Quantity as PbQuantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pbmeta;
use volcano_api::k8s_openapi::api::core::v1::{
    Affinity, CSIVolumeSource, Container, ContainerPort, ContainerState, ContainerStateRunning,
    ContainerStateTerminated, ContainerStateWaiting, ContainerStatus, EphemeralVolumeSource,
    LocalObjectReference, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    PersistentVolumeClaimSpec, PersistentVolumeClaimTemplate, PersistentVolumeClaimVolumeSource,
    Pod, PodAffinity, PodAffinityTerm, PodAntiAffinity, PodCondition, PodSchedulingGate, PodSpec,
    PodStatus, PreferredSchedulingTerm, ResourceClaim, ResourceRequirements, Toleration,
    TopologySpreadConstraint, TypedLocalObjectReference, TypedObjectReference, Volume,
    VolumeResourceRequirements, WeightedPodAffinityTerm,
};
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference, Time,
};
use volcano_api::k8s_openapi::jiff::Timestamp;

use super::PodView;

/// The pod, with what `view` reads of it (the scheduler's fields, and for the controllers
/// container statuses too); the rest is left unset. The view still has to be taken.
pub fn read_pod(pod: pb::Pod, view: PodView) -> Pod {
    let statuses = view != PodView::Scheduler;
    Pod {
        metadata: pod.metadata.map(meta).unwrap_or_default(),
        spec: pod.spec.map(spec),
        status: pod.status.map(|s| status(s, statuses)),
    }
}

/// The identity, labels, annotations, times and owners: what the scheduler, the controllers
/// and the PVC templates of ephemeral volumes read.
fn meta(m: pbmeta::ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: text(m.name),
        generate_name: text(m.generate_name),
        namespace: text(m.namespace),
        uid: text(m.uid),
        resource_version: text(m.resource_version),
        labels: map(m.labels),
        annotations: map(m.annotations),
        creation_timestamp: m.creation_timestamp.and_then(time),
        deletion_timestamp: m.deletion_timestamp.and_then(time),
        owner_references: list(m.owner_references, |o| OwnerReference {
            api_version: o.api_version.unwrap_or_default(),
            kind: o.kind.unwrap_or_default(),
            name: o.name.unwrap_or_default(),
            uid: o.uid.unwrap_or_default(),
            controller: o.controller,
            block_owner_deletion: o.block_owner_deletion,
        }),
        ..ObjectMeta::default()
    }
}

fn spec(s: pb::PodSpec) -> PodSpec {
    PodSpec {
        affinity: s.affinity.map(affinity),
        node_name: text(s.node_name),
        node_selector: map(s.node_selector),
        overhead: quantities(s.overhead),
        preemption_policy: s.preemption_policy,
        priority: s.priority,
        priority_class_name: text(s.priority_class_name),
        scheduler_name: text(s.scheduler_name),
        scheduling_gates: list(s.scheduling_gates, |g| PodSchedulingGate {
            name: g.name.unwrap_or_default(),
        }),
        tolerations: list(s.tolerations, |t| Toleration {
            key: text(t.key),
            operator: text(t.operator),
            value: text(t.value),
            effect: text(t.effect),
            toleration_seconds: t.toleration_seconds,
        }),
        topology_spread_constraints: list(s.topology_spread_constraints, |c| {
            TopologySpreadConstraint {
                max_skew: c.max_skew.unwrap_or_default(),
                topology_key: c.topology_key.unwrap_or_default(),
                when_unsatisfiable: c.when_unsatisfiable.unwrap_or_default(),
                label_selector: c.label_selector.map(label_selector),
                min_domains: c.min_domains,
                node_affinity_policy: c.node_affinity_policy,
                node_taints_policy: c.node_taints_policy,
                match_label_keys: list(c.match_label_keys, |k| k),
            }
        }),
        containers: s.containers.into_iter().map(container).collect(),
        init_containers: list(s.init_containers, container),
        volumes: list(s.volumes, volume),
        ..PodSpec::default()
    }
}

fn affinity(a: pb::Affinity) -> Affinity {
    Affinity {
        node_affinity: a.node_affinity.map(|n| NodeAffinity {
            required_during_scheduling_ignored_during_execution: n
                .required_during_scheduling_ignored_during_execution
                .map(|s| NodeSelector {
                    node_selector_terms: s
                        .node_selector_terms
                        .into_iter()
                        .map(node_selector_term)
                        .collect(),
                }),
            preferred_during_scheduling_ignored_during_execution: list(
                n.preferred_during_scheduling_ignored_during_execution,
                |p| PreferredSchedulingTerm {
                    weight: p.weight.unwrap_or_default(),
                    preference: p.preference.map(node_selector_term).unwrap_or_default(),
                },
            ),
        }),
        pod_affinity: a.pod_affinity.map(|p| {
            let (required, preferred) = pod_terms(
                p.required_during_scheduling_ignored_during_execution,
                p.preferred_during_scheduling_ignored_during_execution,
            );
            PodAffinity {
                required_during_scheduling_ignored_during_execution: required,
                preferred_during_scheduling_ignored_during_execution: preferred,
            }
        }),
        pod_anti_affinity: a.pod_anti_affinity.map(|p| {
            let (required, preferred) = pod_terms(
                p.required_during_scheduling_ignored_during_execution,
                p.preferred_during_scheduling_ignored_during_execution,
            );
            PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: required,
                preferred_during_scheduling_ignored_during_execution: preferred,
            }
        }),
    }
}

/// The required and the preferred terms of a pod affinity or anti-affinity (the same shape).
fn pod_terms(
    required: Vec<pb::PodAffinityTerm>,
    preferred: Vec<pb::WeightedPodAffinityTerm>,
) -> (
    Option<Vec<PodAffinityTerm>>,
    Option<Vec<WeightedPodAffinityTerm>>,
) {
    (
        list(required, pod_affinity_term),
        list(preferred, weighted_term),
    )
}

fn node_selector_term(t: pb::NodeSelectorTerm) -> NodeSelectorTerm {
    let requirement = |r: pb::NodeSelectorRequirement| NodeSelectorRequirement {
        key: r.key.unwrap_or_default(),
        operator: r.operator.unwrap_or_default(),
        values: list(r.values, |v| v),
    };
    NodeSelectorTerm {
        match_expressions: list(t.match_expressions, requirement),
        match_fields: list(t.match_fields, requirement),
    }
}

fn pod_affinity_term(t: pb::PodAffinityTerm) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: t.label_selector.map(label_selector),
        namespaces: list(t.namespaces, |n| n),
        topology_key: t.topology_key.unwrap_or_default(),
        namespace_selector: t.namespace_selector.map(label_selector),
        match_label_keys: list(t.match_label_keys, |k| k),
        mismatch_label_keys: list(t.mismatch_label_keys, |k| k),
    }
}

fn weighted_term(w: pb::WeightedPodAffinityTerm) -> WeightedPodAffinityTerm {
    WeightedPodAffinityTerm {
        weight: w.weight.unwrap_or_default(),
        pod_affinity_term: w
            .pod_affinity_term
            .map(pod_affinity_term)
            .unwrap_or_default(),
    }
}

fn label_selector(s: pbmeta::LabelSelector) -> LabelSelector {
    LabelSelector {
        match_labels: map(s.match_labels),
        match_expressions: list(s.match_expressions, |r| LabelSelectorRequirement {
            key: r.key.unwrap_or_default(),
            operator: r.operator.unwrap_or_default(),
            values: list(r.values, |v| v),
        }),
    }
}

/// What is read of a container: name, resources, ports, restart policy. Ports
/// are all kept here, as JSON gives them; [`slim_pod`](volcano_scheduler::cache::slim_pod)
/// keeps the host ports.
fn container(c: pb::Container) -> Container {
    Container {
        name: c.name.unwrap_or_default(),
        resources: c.resources.map(resources),
        ports: list(c.ports, |p| ContainerPort {
            container_port: p.container_port.unwrap_or_default(),
            host_port: p.host_port.filter(|&h| h != 0),
            host_ip: text(p.host_ip),
            name: text(p.name),
            protocol: text(p.protocol),
        }),
        // A pointer in Go, written as it is.
        restart_policy: c.restart_policy,
        ..Container::default()
    }
}

fn resources(r: pb::ResourceRequirements) -> ResourceRequirements {
    ResourceRequirements {
        limits: quantities(r.limits),
        requests: quantities(r.requests),
        claims: list(r.claims, |c| ResourceClaim {
            name: c.name.unwrap_or_default(),
            request: text(c.request),
        }),
    }
}

/// A volume, with the sources the volume predicates and the binder read (claims, ephemeral
/// claims and CSI); another source reads as none, as the scheduler's copy drops it anyway.
fn volume(v: pb::Volume) -> Volume {
    let source = v.volume_source.unwrap_or_default();
    Volume {
        name: v.name.unwrap_or_default(),
        persistent_volume_claim: source.persistent_volume_claim.map(|c| {
            PersistentVolumeClaimVolumeSource {
                claim_name: c.claim_name.unwrap_or_default(),
                read_only: flag(c.read_only),
            }
        }),
        ephemeral: source.ephemeral.map(|e| EphemeralVolumeSource {
            volume_claim_template: e
                .volume_claim_template
                .map(|t| PersistentVolumeClaimTemplate {
                    metadata: t.metadata.map(meta),
                    spec: t.spec.map(claim_spec).unwrap_or_default(),
                }),
        }),
        csi: source.csi.map(|c| CSIVolumeSource {
            driver: c.driver.unwrap_or_default(),
            // Pointers in Go: JSON keeps `false` and `""`, so they pass as they are.
            read_only: c.read_only,
            fs_type: c.fs_type,
            volume_attributes: map(c.volume_attributes),
            node_publish_secret_ref: c.node_publish_secret_ref.map(|r| LocalObjectReference {
                name: r.name.unwrap_or_default(),
            }),
        }),
        ..Volume::default()
    }
}

fn claim_spec(s: pb::PersistentVolumeClaimSpec) -> PersistentVolumeClaimSpec {
    PersistentVolumeClaimSpec {
        access_modes: list(s.access_modes, |m| m),
        selector: s.selector.map(label_selector),
        resources: s.resources.map(|r| VolumeResourceRequirements {
            limits: quantities(r.limits),
            requests: quantities(r.requests),
        }),
        volume_name: text(s.volume_name),
        storage_class_name: s.storage_class_name,
        volume_mode: s.volume_mode,
        data_source: s.data_source.map(|d| TypedLocalObjectReference {
            api_group: d.api_group,
            kind: d.kind.unwrap_or_default(),
            name: d.name.unwrap_or_default(),
        }),
        data_source_ref: s.data_source_ref.map(|d| TypedObjectReference {
            api_group: d.api_group,
            kind: d.kind.unwrap_or_default(),
            name: d.name.unwrap_or_default(),
            namespace: d.namespace,
        }),
        volume_attributes_class_name: s.volume_attributes_class_name,
    }
}

fn status(s: pb::PodStatus, statuses: bool) -> PodStatus {
    let (containers, inits) = if statuses {
        (s.container_statuses, s.init_container_statuses)
    } else {
        (Vec::new(), Vec::new())
    };
    PodStatus {
        phase: text(s.phase),
        start_time: s.start_time.and_then(time),
        nominated_node_name: text(s.nominated_node_name),
        conditions: list(s.conditions, |c| PodCondition {
            type_: c.r#type.unwrap_or_default(),
            status: c.status.unwrap_or_default(),
            reason: text(c.reason),
            message: text(c.message),
            last_probe_time: c.last_probe_time.and_then(time),
            last_transition_time: c.last_transition_time.and_then(time),
            observed_generation: c.observed_generation.filter(|&g| g != 0),
        }),
        container_statuses: list(containers, container_status),
        init_container_statuses: list(inits, container_status),
        ..PodStatus::default()
    }
}

/// What the controllers read of a container's status: name, readiness, restarts and current
/// state. `ready` and `restartCount` are written by JSON even when false or zero.
fn container_status(s: pb::ContainerStatus) -> ContainerStatus {
    ContainerStatus {
        name: s.name.unwrap_or_default(),
        ready: s.ready.unwrap_or_default(),
        restart_count: s.restart_count.unwrap_or_default(),
        state: s.state.map(container_state),
        ..ContainerStatus::default()
    }
}

/// A container's state. An empty state is written by both encodings (a struct in JSON) and
/// reads as one with nothing set.
fn container_state(s: pb::ContainerState) -> ContainerState {
    ContainerState {
        waiting: s.waiting.map(|w| ContainerStateWaiting {
            reason: text(w.reason),
            message: text(w.message),
        }),
        running: s.running.map(|r| ContainerStateRunning {
            started_at: r.started_at.and_then(time),
        }),
        terminated: s.terminated.map(|t| ContainerStateTerminated {
            // Written by JSON even when zero: a clean exit.
            exit_code: t.exit_code.unwrap_or_default(),
            signal: t.signal.filter(|&s| s != 0),
            reason: text(t.reason),
            message: text(t.message),
            started_at: t.started_at.and_then(time),
            finished_at: t.finished_at.and_then(time),
            container_id: text(t.container_id),
        }),
    }
}

/// A string that JSON leaves out when empty.
fn text(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

/// A `bool` that JSON leaves out when false.
fn flag(b: Option<bool>) -> Option<bool> {
    b.filter(|&b| b)
}

/// A list that JSON leaves out when empty.
fn list<A, B>(items: Vec<A>, f: impl FnMut(A) -> B) -> Option<Vec<B>> {
    (!items.is_empty()).then(|| items.into_iter().map(f).collect())
}

/// A map that JSON leaves out when empty.
fn map(m: BTreeMap<String, String>) -> Option<BTreeMap<String, String>> {
    (!m.is_empty()).then_some(m)
}

fn quantities(m: BTreeMap<String, PbQuantity>) -> Option<BTreeMap<String, Quantity>> {
    (!m.is_empty()).then(|| {
        m.into_iter()
            .map(|(k, q)| (k, Quantity(q.string.unwrap_or_default())))
            .collect()
    })
}

/// A time to the second, as JSON writes it. Go writes a zero time as an empty message, and
/// JSON as `null`: both read as unset, as does a time out of range.
fn time(t: pbmeta::Time) -> Option<Time> {
    Timestamp::new(t.seconds?, 0).ok().map(Time)
}
