//! The HyperNode controller's configuration, read where Volcano reads it: the
//! `volcano-controller.conf` key of the `<release>-controller-configmap` ConfigMap in the
//! controllers' namespace, looked at again every few seconds so an edit takes effect without a
//! restart.

use std::time::Duration;

use kube::Client;
use kube::api::Api;
use volcano_api::k8s_openapi::api::core::v1::ConfigMap;
use volcano_controllers::hypernode::config::CONFIG_KEY;
use volcano_controllers::hypernode::{LabelDiscovery, NetworkTopologyConfig};

/// How often the ConfigMap is read again.
pub const CONFIG_PERIOD: Duration = Duration::from_secs(3);

/// Volcano's environment variable naming the controllers' namespace.
const NAMESPACE_ENV: &str = "KUBE_POD_NAMESPACE";
/// Volcano's environment variable naming the Helm release (the ConfigMap's prefix).
const RELEASE_ENV: &str = "HELM_RELEASE_NAME";

/// Where the configuration is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfigMap {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl ControllerConfigMap {
    /// Volcano's: `volcano-controller-configmap` in `volcano-system`, or as
    /// `$KUBE_POD_NAMESPACE` and `$HELM_RELEASE_NAME` say.
    pub fn from_env() -> Self {
        let var = |k: &str, default: &str| {
            std::env::var(k)
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_string())
        };
        ControllerConfigMap {
            namespace: var(NAMESPACE_ENV, "volcano-system"),
            name: format!("{}-controller-configmap", var(RELEASE_ENV, "volcano")),
        }
    }

    /// The `volcano-controller.conf` text, if the ConfigMap and the key exist.
    pub async fn read(&self, client: &Client) -> Result<Option<String>, kube::Error> {
        let cm = Api::<ConfigMap>::namespaced(client.clone(), &self.namespace)
            .get_opt(&self.name)
            .await?;
        Ok(cm
            .and_then(|c| c.data)
            .and_then(|mut d| d.remove(CONFIG_KEY)))
    }
}

/// The label source a `volcano-controller.conf` text configures, if any; an error names the
/// field.
pub fn parse(text: &str) -> Result<Option<LabelDiscovery>, String> {
    let config: NetworkTopologyConfig = if text.trim().is_empty() {
        NetworkTopologyConfig::default()
    } else {
        serde_yaml_ng::from_str(text).map_err(|e| format!("{CONFIG_KEY}: {e}"))?
    };
    LabelDiscovery::from_config(&config).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volcano_s_documented_configuration_turns_label_discovery_on() {
        let text = "networkTopologyDiscovery:\n\
            - source: ufm\n  enabled: false\n  interval: 10m\n\
            - source: label\n  enabled: true\n  config:\n    networkTopologyTypes:\n      \
            topologyA2:\n        - nodeLabel: \"volcano.sh/tor\"\n        \
            - nodeLabel: \"kubernetes.io/hostname\"\n";
        let d = parse(text).unwrap().unwrap();
        assert_eq!(d.types[0].name, "topologyA2");
        assert_eq!(d.types[0].tiers, ["volcano.sh/tor"]);
        assert_eq!(parse("").unwrap(), None);
        let err = parse("networkTopologyDiscovery: 3\n").unwrap_err();
        assert!(err.starts_with("volcano-controller.conf: "), "{err}");
        assert!(err.contains("networkTopologyDiscovery"), "{err}");
    }
}
