//! `volcano-scheduler.conf`: actions, tiers of plugins with their `enable…` flags and
//! `arguments`, and per-action `configurations`, parsed exactly as Volcano parses them.
//!
//! Flags left unset default to true (Volcano's `ApplyPluginConfDefaults`), except
//! `enableHierarchy` and `enabledClusterOrder`. Unlike Volcano, an unknown action, an unknown
//! plugin or an unknown key is an error rather than a log line: a typo should not silently
//! change how a cluster is scheduled.

mod kind;

use std::collections::BTreeMap;

use serde::Deserialize;
use thiserror::Error;

pub use kind::{ActionKind, PluginKind};

/// The built-in configuration, used when the scenario and the command line give none.
pub const DEFAULT_SCHEDULER_CONF: &str = r#"actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"#;

/// Actions volcano-rs runs.
pub const SUPPORTED_ACTIONS: &[&str] = &["enqueue", "allocate", "backfill", "preempt", "reclaim"];
/// Actions Volcano knows that volcano-rs accepts but does not run yet.
pub const PENDING_ACTIONS: &[&str] = &["shuffle", "gangpreempt", "gangreclaim"];
/// Plugins volcano-rs implements.
pub const SUPPORTED_PLUGINS: &[&str] = &[
    "priority",
    "gang",
    "conformance",
    "drf",
    "proportion",
    "predicates",
    "nodeorder",
    "binpack",
    "overcommit",
    "capacity",
    "deviceshare",
    "fgd",
    "network-topology-aware",
];
/// Plugins Volcano knows that volcano-rs skips for now.
pub const PENDING_PLUGINS: &[&str] = &[
    "resource-strategy-fit",
    "tdm",
    "sla",
    "task-topology",
    "numa-aware",
    "cdp",
    "rescheduling",
    "usage",
    "pdb",
    "nodegroup",
    "extender",
    "resourcequota",
];

/// Why a configuration was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfError {
    /// Not valid YAML, or a field of the wrong type or name.
    #[error("invalid volcano-scheduler.conf: {0}")]
    Syntax(String),
    /// An action name Volcano does not know.
    #[error("field actions: unknown action {name:?}; known actions: {known}")]
    UnknownAction {
        /// The name given.
        name: String,
        /// The names accepted.
        known: String,
    },
    /// A plugin name Volcano does not know.
    #[error(
        "field tiers[{tier}].plugins[{index}].name: unknown plugin {name:?}; known plugins: {known}"
    )]
    UnknownPlugin {
        /// Tier index.
        tier: usize,
        /// Plugin index within the tier.
        index: usize,
        /// The name given.
        name: String,
        /// The names accepted.
        known: String,
    },
    /// A combination Volcano rejects.
    #[error("{0}")]
    Invalid(String),
}

/// Arguments of a plugin or action: string keys, values as YAML gave them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Arguments(pub BTreeMap<String, serde_yaml_ng::Value>);

impl Arguments {
    fn number(&self, key: &str) -> Option<f64> {
        match self.0.get(key)? {
            serde_yaml_ng::Value::Number(n) => n.as_f64(),
            serde_yaml_ng::Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// A numeric argument (numbers or numeric strings), or `default`.
    pub fn f64_or(&self, key: &str, default: f64) -> f64 {
        self.number(key).unwrap_or(default)
    }

    /// An integer argument, or `default`.
    pub fn i64_or(&self, key: &str, default: i64) -> i64 {
        self.number(key).map(|v| v as i64).unwrap_or(default)
    }

    /// A boolean argument (`true`/`false` or their strings), or `default`.
    pub fn bool_or(&self, key: &str, default: bool) -> bool {
        match self.0.get(key) {
            Some(serde_yaml_ng::Value::Bool(b)) => *b,
            Some(serde_yaml_ng::Value::String(s)) => s.trim().parse().unwrap_or(default),
            _ => default,
        }
    }

    /// A string argument.
    pub fn str(&self, key: &str) -> Option<String> {
        match self.0.get(key)? {
            serde_yaml_ng::Value::String(s) => Some(s.clone()),
            serde_yaml_ng::Value::Number(n) => Some(n.to_string()),
            serde_yaml_ng::Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    /// The keys, for plugins that read families of arguments (`binpack.resources.<name>`).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

/// The extension points a plugin may have switched off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PluginFlags {
    /// enableJobOrder.
    pub job_order: bool,
    /// enableHierarchy.
    pub hierarchy: bool,
    /// enableJobReady.
    pub job_ready: bool,
    /// enableJobPipelined.
    pub job_pipelined: bool,
    /// enableTaskOrder.
    pub task_order: bool,
    /// enablePreemptable.
    pub preemptable: bool,
    /// enableReclaimable.
    pub reclaimable: bool,
    /// enablePreemptive.
    pub preemptive: bool,
    /// enableQueueOrder.
    pub queue_order: bool,
    /// enabledClusterOrder.
    pub cluster_order: bool,
    /// enablePredicate.
    pub predicate: bool,
    /// enableBestNode.
    pub best_node: bool,
    /// enableNodeOrder.
    pub node_order: bool,
    /// enableTargetJob.
    pub target_job: bool,
    /// enableReservedNodes.
    pub reserved_nodes: bool,
    /// enableJobEnqueued (gates JobEnqueueable and JobEnqueued).
    pub job_enqueued: bool,
    /// enabledVictim.
    pub victim: bool,
    /// enableJobStarving.
    pub job_starving: bool,
    /// enabledOverused.
    pub overused: bool,
    /// enabledAllocatable.
    pub allocatable: bool,
    /// enabledHyperNodeOrder.
    pub hyper_node_order: bool,
    /// enabledHyperNodeGradient.
    pub hyper_node_gradient: bool,
}

/// One plugin of a tier.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginOption {
    /// The plugin (compares equal to its Volcano name).
    pub name: PluginKind,
    /// Which extension points are on.
    pub flags: PluginFlags,
    /// Plugin arguments.
    pub arguments: Arguments,
}

/// A tier: plugins consulted together.
#[derive(Debug, Clone, PartialEq)]
pub struct Tier {
    /// The plugins, in order.
    pub plugins: Vec<PluginOption>,
}

/// A parsed, checked scheduler configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerConf {
    /// Actions in execution order (each compares equal to its Volcano name).
    pub actions: Vec<ActionKind>,
    /// Tiers in order.
    pub tiers: Vec<Tier>,
    /// Per-action arguments.
    pub configurations: BTreeMap<String, Arguments>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConf {
    #[serde(default)]
    actions: String,
    #[serde(default)]
    tiers: Vec<RawTier>,
    #[serde(default)]
    configurations: Vec<RawConfiguration>,
    #[serde(default)]
    metrics: Option<serde_yaml_ng::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTier {
    #[serde(default)]
    plugins: Vec<RawPlugin>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfiguration {
    name: String,
    #[serde(default)]
    arguments: BTreeMap<String, serde_yaml_ng::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawPlugin {
    name: String,
    #[serde(default)]
    arguments: Option<BTreeMap<String, serde_yaml_ng::Value>>,
    enable_job_order: Option<bool>,
    enable_hierarchy: Option<bool>,
    enable_job_ready: Option<bool>,
    enable_job_pipelined: Option<bool>,
    enable_task_order: Option<bool>,
    enable_preemptable: Option<bool>,
    enable_reclaimable: Option<bool>,
    enable_preemptive: Option<bool>,
    enable_queue_order: Option<bool>,
    #[serde(rename = "enabledClusterOrder")]
    enabled_cluster_order: Option<bool>,
    enable_predicate: Option<bool>,
    enable_best_node: Option<bool>,
    enable_node_order: Option<bool>,
    enable_target_job: Option<bool>,
    enable_reserved_nodes: Option<bool>,
    enable_job_enqueued: Option<bool>,
    #[serde(rename = "enabledVictim")]
    enabled_victim: Option<bool>,
    enable_job_starving: Option<bool>,
    #[serde(rename = "enabledOverused")]
    enabled_overused: Option<bool>,
    #[serde(rename = "enabledAllocatable")]
    enabled_allocatable: Option<bool>,
    #[serde(rename = "enabledHyperNodeOrder")]
    enabled_hyper_node_order: Option<bool>,
    #[serde(rename = "enabledSubJobReady")]
    _enabled_sub_job_ready: Option<bool>,
    #[serde(rename = "enabledSubJobPipelined")]
    _enabled_sub_job_pipelined: Option<bool>,
    #[serde(rename = "enabledSubJobOrder")]
    _enabled_sub_job_order: Option<bool>,
    #[serde(rename = "enabledHyperNodeGradient")]
    enabled_hyper_node_gradient: Option<bool>,
}

impl RawPlugin {
    fn flags(&self) -> PluginFlags {
        let on = |f: Option<bool>| f.unwrap_or(true);
        PluginFlags {
            job_order: on(self.enable_job_order),
            hierarchy: self.enable_hierarchy.unwrap_or(false),
            job_ready: on(self.enable_job_ready),
            job_pipelined: on(self.enable_job_pipelined),
            task_order: on(self.enable_task_order),
            preemptable: on(self.enable_preemptable),
            reclaimable: on(self.enable_reclaimable),
            preemptive: on(self.enable_preemptive),
            queue_order: on(self.enable_queue_order),
            cluster_order: self.enabled_cluster_order.unwrap_or(false),
            predicate: on(self.enable_predicate),
            best_node: on(self.enable_best_node),
            node_order: on(self.enable_node_order),
            target_job: on(self.enable_target_job),
            reserved_nodes: on(self.enable_reserved_nodes),
            job_enqueued: on(self.enable_job_enqueued),
            victim: on(self.enabled_victim),
            job_starving: on(self.enable_job_starving),
            overused: on(self.enabled_overused),
            allocatable: on(self.enabled_allocatable),
            hyper_node_order: on(self.enabled_hyper_node_order),
            hyper_node_gradient: on(self.enabled_hyper_node_gradient),
        }
    }
}

/// Which configured names volcano-rs will skip, for the caller to warn about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Known Volcano actions not run yet.
    pub actions: Vec<String>,
    /// Known Volcano plugins not run yet.
    pub plugins: Vec<String>,
}

impl SchedulerConf {
    /// The built-in default configuration.
    pub fn default_conf() -> SchedulerConf {
        match SchedulerConf::parse(DEFAULT_SCHEDULER_CONF) {
            Ok((conf, _)) => conf,
            // The built-in text is covered by a unit test; an empty conf is the safe fallback.
            Err(_) => SchedulerConf {
                actions: Vec::new(),
                tiers: Vec::new(),
                configurations: BTreeMap::new(),
            },
        }
    }

    /// Parses and checks a configuration text. Also returns what will be skipped.
    pub fn parse(text: &str) -> Result<(SchedulerConf, Skipped), ConfError> {
        let raw: RawConf =
            serde_yaml_ng::from_str(text).map_err(|e| ConfError::Syntax(e.to_string()))?;
        let _ = raw.metrics;
        let mut skipped = Skipped::default();
        let mut actions = Vec::new();
        for name in raw
            .actions
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            if let Some(kind) = ActionKind::from_name(name) {
                actions.push(kind);
            } else if PENDING_ACTIONS.contains(&name) {
                skipped.actions.push(name.to_string());
            } else {
                let known: Vec<&str> = SUPPORTED_ACTIONS
                    .iter()
                    .chain(PENDING_ACTIONS)
                    .copied()
                    .collect();
                return Err(ConfError::UnknownAction {
                    name: name.to_string(),
                    known: known.join(", "),
                });
            }
        }
        let mut tiers = Vec::new();
        for (t, raw_tier) in raw.tiers.iter().enumerate() {
            let mut plugins = Vec::new();
            for (i, p) in raw_tier.plugins.iter().enumerate() {
                let name = p.name.trim();
                if PENDING_PLUGINS.contains(&name) {
                    skipped.plugins.push(name.to_string());
                    continue;
                }
                let Some(kind) = PluginKind::from_name(name) else {
                    let known: Vec<&str> = SUPPORTED_PLUGINS
                        .iter()
                        .chain(PENDING_PLUGINS)
                        .copied()
                        .collect();
                    return Err(ConfError::UnknownPlugin {
                        tier: t,
                        index: i,
                        name: name.to_string(),
                        known: known.join(", "),
                    });
                };
                plugins.push(PluginOption {
                    name: kind,
                    flags: p.flags(),
                    arguments: Arguments(p.arguments.clone().unwrap_or_default()),
                });
            }
            let hdrf = plugins
                .iter()
                .any(|p| p.name == PluginKind::Drf && p.flags.hierarchy);
            let proportion = plugins.iter().any(|p| p.name == PluginKind::Proportion);
            if hdrf && proportion {
                return Err(ConfError::Invalid(format!(
                    "field tiers[{t}]: drf with enableHierarchy: true cannot be combined with proportion in one tier"
                )));
            }
            if hdrf {
                return Err(ConfError::Invalid(format!(
                    "field tiers[{t}]: drf with enableHierarchy: true (hierarchical DRF) is not supported by volcano-rs yet"
                )));
            }
            tiers.push(Tier { plugins });
        }
        let configurations = raw
            .configurations
            .into_iter()
            .map(|c| (c.name, Arguments(c.arguments)))
            .collect();
        Ok((
            SchedulerConf {
                actions,
                tiers,
                configurations,
            },
            skipped,
        ))
    }

    /// Arguments of an action (empty when not configured).
    pub fn action_arguments(&self, action: &str) -> Arguments {
        self.configurations.get(action).cloned().unwrap_or_default()
    }

    /// Whether an action is configured.
    pub fn has_action(&self, action: &str) -> bool {
        self.actions.iter().any(|a| *a == action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_conf_parses_with_flags_on() {
        let (conf, skipped) = SchedulerConf::parse(DEFAULT_SCHEDULER_CONF).unwrap();
        assert_eq!(conf.actions, ["enqueue", "allocate", "backfill"]);
        assert_eq!(conf.tiers.len(), 2);
        let gang = &conf.tiers[0].plugins[1];
        assert_eq!(gang.name, "gang");
        assert!(gang.flags.job_ready && gang.flags.job_enqueued && gang.flags.preemptable);
        assert!(!gang.flags.hierarchy && !gang.flags.cluster_order);
        assert_eq!(skipped, Skipped::default());
    }

    #[test]
    fn explicit_false_and_arguments_are_kept() {
        let text = "actions: allocate\ntiers:\n- plugins:\n  - name: binpack\n    enableNodeOrder: false\n    arguments:\n      binpack.weight: 10\n      binpack.cpu: \"2\"\n";
        let (conf, _) = SchedulerConf::parse(text).unwrap();
        let p = &conf.tiers[0].plugins[0];
        assert!(!p.flags.node_order);
        assert_eq!(p.arguments.f64_or("binpack.weight", 1.0), 10.0);
        assert_eq!(p.arguments.f64_or("binpack.cpu", 1.0), 2.0);
    }

    #[test]
    fn unknown_names_are_errors() {
        let e = SchedulerConf::parse("actions: allocate, alocate\n").unwrap_err();
        assert!(e.to_string().contains("unknown action \"alocate\""), "{e}");
        let e = SchedulerConf::parse("actions: allocate\ntiers:\n- plugins:\n  - name: gnag\n")
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("tiers[0].plugins[0].name: unknown plugin \"gnag\""),
            "{e}"
        );
        let e = SchedulerConf::parse(
            "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrdr: true\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("enableJobOrdr"), "{e}");
    }

    #[test]
    fn kinds_are_the_supported_names() {
        let actions: Vec<&str> = ActionKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(actions, SUPPORTED_ACTIONS);
        let plugins: Vec<&str> = PluginKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(plugins, SUPPORTED_PLUGINS);
        assert_eq!(
            PluginKind::from_name("nodeorder"),
            Some(PluginKind::NodeOrder)
        );
        assert_eq!(ActionKind::Reclaim.to_string(), "reclaim");
        assert_eq!(String::from(ActionKind::Backfill), "backfill");
    }

    #[test]
    fn pending_names_are_skipped_not_rejected() {
        let (conf, skipped) = SchedulerConf::parse("actions: enqueue, allocate, shuffle\ntiers:\n- plugins:\n  - name: sla\n  - name: gang\n").unwrap();
        assert_eq!(conf.actions, ["enqueue", "allocate"]);
        assert_eq!(skipped.actions, ["shuffle"]);
        assert_eq!(skipped.plugins, ["sla"]);
        assert_eq!(conf.tiers[0].plugins.len(), 1);
    }
}
