//! The HyperNode controller's configuration, as Volcano reads it from the `volcano-controller.conf`
//! key of its controller ConfigMap: a `networkTopologyDiscovery` list of sources, of which
//! volcano-rs runs `label`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use thiserror::Error;

/// The ConfigMap key Volcano reads the configuration from.
pub const CONFIG_KEY: &str = "volcano-controller.conf";
/// The discovery source that reads node labels.
pub const LABEL_SOURCE: &str = "label";
/// Volcano's limit on a topology type's name (it goes into HyperNode names).
pub const MAX_TYPE_NAME: usize = 20;

/// The whole `volcano-controller.conf` document; fields other than the discovery list are
/// other controllers' and are not read here.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkTopologyConfig {
    /// One entry per discovery source.
    #[serde(default)]
    pub network_topology_discovery: Vec<DiscoveryConfig>,
}

/// One discovery source's entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryConfig {
    /// `label`, `ufm` or `roce`.
    #[serde(default)]
    pub source: String,
    /// Whether the source runs (off unless set, as in Volcano).
    #[serde(default)]
    pub enabled: bool,
    /// The source's own settings.
    #[serde(default)]
    pub config: serde_json::Value,
}

/// One level of a topology type: the node label whose value names the domain.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeLabel {
    #[serde(default)]
    node_label: String,
}

/// The `label` source's settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LabelConfig {
    #[serde(default)]
    network_topology_types: BTreeMap<String, Vec<NodeLabel>>,
}

/// A configuration the controller cannot run with; names the field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{CONFIG_KEY}: {field}: {message}")]
pub struct ConfigError {
    /// The field's path (`networkTopologyDiscovery[0].config.networkTopologyTypes.a2`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.into(),
        message: message.into(),
    }
}

/// One topology type of the label source: its name and its node labels, tier 1 first (the
/// label above the hostname), the hostname level left out: a node is its own member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyType {
    /// The type's name (`topologyA2`).
    pub name: String,
    /// The label of each tier, tier 1 first.
    pub tiers: Vec<String>,
}

/// The label discovery source, configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelDiscovery {
    /// The topology types, by name.
    pub types: Vec<TopologyType>,
}

impl LabelDiscovery {
    /// The label source of `config`, if it is listed and enabled.
    pub fn from_config(config: &NetworkTopologyConfig) -> Result<Option<Self>, ConfigError> {
        let Some((i, entry)) = config
            .network_topology_discovery
            .iter()
            .enumerate()
            .find(|(_, d)| d.source == LABEL_SOURCE && d.enabled)
        else {
            return Ok(None);
        };
        let at = format!("networkTopologyDiscovery[{i}].config");
        let parsed: LabelConfig = if entry.config.is_null() {
            LabelConfig::default()
        } else {
            serde_json::from_value(entry.config.clone())
                .map_err(|e| invalid(&at, format!("not the label source's settings: {e}")))?
        };
        if parsed.network_topology_types.is_empty() {
            return Err(invalid(
                format!("{at}.networkTopologyTypes"),
                "the label source needs at least one topology type",
            ));
        }
        let mut types = Vec::new();
        for (name, labels) in parsed.network_topology_types {
            let field = format!("{at}.networkTopologyTypes.{name}");
            if name.chars().count() > MAX_TYPE_NAME {
                return Err(invalid(
                    field,
                    format!("the length of topologyTypeName exceeds {MAX_TYPE_NAME}"),
                ));
            }
            if labels.is_empty() {
                return Err(invalid(field, "needs at least one nodeLabel"));
            }
            let mut seen = BTreeSet::new();
            for (j, l) in labels.iter().enumerate() {
                if l.node_label.is_empty() {
                    return Err(invalid(
                        format!("{field}[{j}].nodeLabel"),
                        "required; got an empty label",
                    ));
                }
                if !seen.insert(l.node_label.as_str()) {
                    return Err(invalid(
                        format!("{field}[{j}].nodeLabel"),
                        format!("there are duplicate labels: {}", l.node_label),
                    ));
                }
            }
            // Highest level first, the node's own label (the hostname) last: tiers count up
            // from the label just above it, as Volcano's parseCfg does.
            let tiers = labels
                .iter()
                .rev()
                .skip(1)
                .map(|l| l.node_label.clone())
                .collect();
            types.push(TopologyType { name, tiers });
        }
        Ok(Some(LabelDiscovery { types }))
    }

    /// Every label any type reads.
    pub fn labels(&self) -> BTreeSet<&str> {
        self.types
            .iter()
            .flat_map(|t| t.tiers.iter().map(String::as_str))
            .collect()
    }
}
