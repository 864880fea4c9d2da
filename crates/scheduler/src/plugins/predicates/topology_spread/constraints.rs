//! A pod's topology spread constraints as kube-scheduler reads them: one action's constraints,
//! `matchLabelKeys` merged into the selector, the inclusion policies' defaults applied; and the
//! cluster's default constraints for pods that declare none.

use k8s_openapi::api::core::v1::{Pod, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use volcano_api::k8s_openapi;

use crate::conf::Arguments;
use crate::plugins::label_selector::selector_matches;

/// `whenUnsatisfiable` of the constraints the filter enforces.
pub(crate) const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
/// `whenUnsatisfiable` of the constraints the score prefers.
pub(crate) const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";
/// The node label kube-scheduler scores node by node.
pub(crate) const HOSTNAME: &str = "kubernetes.io/hostname";

/// Which pods a constraint counts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Selector {
    /// No `labelSelector`: it matches no pod, the pod itself included.
    Nothing,
    /// An empty selector: it matches every pod, but kube-scheduler counts no pod with it.
    Everything,
    /// A selector with requirements.
    Match(LabelSelector),
}

impl Selector {
    /// Whether a pod with these labels matches.
    pub(crate) fn matches(
        &self,
        labels: Option<&std::collections::BTreeMap<String, String>>,
    ) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::Everything => true,
            Selector::Match(s) => selector_matches(s, labels),
        }
    }
}

/// One constraint, ready to check.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Constraint {
    pub(crate) max_skew: i32,
    pub(crate) topology_key: String,
    pub(crate) selector: Selector,
    /// `minDomains`, 1 when unset.
    pub(crate) min_domains: i32,
    /// `nodeAffinityPolicy: Honor` (the default): only nodes passing the pod's node selector
    /// and required node affinity count.
    pub(crate) honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor` (not the default): only nodes whose taints the pod tolerates
    /// count.
    pub(crate) honor_taints: bool,
}

/// The cluster's default constraints (kube-scheduler's `PodTopologySpreadArgs`), for pods
/// that declare none.
#[derive(Debug, Clone, Default)]
pub(crate) struct Defaults {
    constraints: Vec<TopologySpreadConstraint>,
}

/// Argument naming how default constraints are chosen: `System` (the default) or `List`.
pub(crate) const DEFAULTING_TYPE_ARG: &str = "podtopologyspread.defaultingType";
/// Argument listing the default constraints when the defaulting type is `List`.
pub(crate) const DEFAULT_CONSTRAINTS_ARG: &str = "podtopologyspread.defaultConstraints";

impl Defaults {
    /// Reads [`DEFAULTING_TYPE_ARG`] and [`DEFAULT_CONSTRAINTS_ARG`]. Under `System`,
    /// kube-scheduler's defaults select pods by the Services, ReplicaSets and StatefulSets
    /// that select them; volcano-rs sees none of those, so no default applies, exactly as
    /// kube-scheduler does for a pod no such object selects. Under `List`, each listed
    /// constraint applies with its own `labelSelector` (if any) merged with the pod's values
    /// of its `matchLabelKeys`; one that ends up with neither selects nothing and is left out.
    /// A list that does not parse is ignored with a warning.
    pub(crate) fn from_args(args: &Arguments) -> Self {
        if args.str(DEFAULTING_TYPE_ARG).as_deref() != Some("List") {
            return Defaults::default();
        }
        let Some(value) = args.0.get(DEFAULT_CONSTRAINTS_ARG) else {
            return Defaults::default();
        };
        match serde_yaml_ng::from_value::<Vec<TopologySpreadConstraint>>(value.clone()) {
            Ok(constraints) => Defaults { constraints },
            Err(e) => {
                tracing::warn!(
                    argument = DEFAULT_CONSTRAINTS_ARG,
                    error = %e,
                    "default topology spread constraints ignored: they do not parse"
                );
                Defaults::default()
            }
        }
    }

    /// Whether no default constraint is configured.
    pub(crate) fn is_empty(&self) -> bool {
        self.constraints.is_empty()
    }
}

/// Whether the pod declares any spread constraint.
pub(crate) fn declares_constraints(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_ref())
        .is_some_and(|c| !c.is_empty())
}

/// The pod's constraints with `whenUnsatisfiable: action`, or the defaults with that action
/// when the pod declares none at all.
pub(crate) fn constraints_of(pod: &Pod, action: &str, defaults: &Defaults) -> Vec<Constraint> {
    let labels = pod.metadata.labels.as_ref();
    if declares_constraints(pod) {
        let declared = pod
            .spec
            .as_ref()
            .and_then(|s| s.topology_spread_constraints.as_deref())
            .unwrap_or(&[]);
        return declared
            .iter()
            .filter(|c| c.when_unsatisfiable == action)
            .map(|c| constraint(c, c.label_selector.as_ref(), labels))
            .collect();
    }
    defaults
        .constraints
        .iter()
        .filter(|c| c.when_unsatisfiable == action)
        .map(|c| {
            let empty = LabelSelector::default();
            constraint(c, Some(c.label_selector.as_ref().unwrap_or(&empty)), labels)
        })
        .filter(|c| matches!(c.selector, Selector::Match(_)))
        .collect()
}

fn constraint(
    c: &TopologySpreadConstraint,
    selector: Option<&LabelSelector>,
    labels: Option<&std::collections::BTreeMap<String, String>>,
) -> Constraint {
    Constraint {
        max_skew: c.max_skew,
        topology_key: c.topology_key.clone(),
        selector: merged_selector(selector, c.match_label_keys.as_deref(), labels),
        min_domains: c.min_domains.unwrap_or(1),
        honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
        honor_taints: c.node_taints_policy.as_deref() == Some("Honor"),
    }
}

/// The selector with `key In [pod's value]` added for each of `match_label_keys` the pod
/// carries (a requirement each, so a key the selector already constrains must satisfy both).
fn merged_selector(
    selector: Option<&LabelSelector>,
    match_label_keys: Option<&[String]>,
    labels: Option<&std::collections::BTreeMap<String, String>>,
) -> Selector {
    let extra: Vec<LabelSelectorRequirement> = match_label_keys
        .unwrap_or(&[])
        .iter()
        .filter_map(|k| {
            let v = labels?.get(k)?;
            Some(LabelSelectorRequirement {
                key: k.clone(),
                operator: "In".into(),
                values: Some(vec![v.clone()]),
            })
        })
        .collect();
    let Some(selector) = selector else {
        // A missing selector matches nothing whatever is added to it.
        return Selector::Nothing;
    };
    let mut merged = selector.clone();
    if !extra.is_empty() {
        merged
            .match_expressions
            .get_or_insert_with(Vec::new)
            .extend(extra);
    }
    let empty = merged.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && merged
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty());
    if empty {
        Selector::Everything
    } else {
        Selector::Match(merged)
    }
}
