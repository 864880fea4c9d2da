//! VolumeZone: a volume labelled with a zone or region can only be used from nodes of that
//! zone or region. A node with no topology label at all passes (a single-zone cluster).

use volcano_api::k8s_openapi::api::core::v1::Node;

use crate::fit::FitReason;
use crate::model::storage::StorageCatalog;

/// Why a node fails VolumeZone.
pub(super) const ZONE_CONFLICT: &str = "node(s) had no available volume zone";

/// The topology labels compared, beta names first, as kube-scheduler lists them.
const TOPOLOGY_LABELS: [&str; 4] = [
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

/// The GA name of a beta topology label; others unchanged.
fn ga_label(key: &str) -> &str {
    match key {
        "failure-domain.beta.kubernetes.io/zone" => "topology.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region" => "topology.kubernetes.io/region",
        other => other,
    }
}

/// VolumeZone's verdict on `node` for the volumes named `volumes` (missing ones were told
/// at PreFilter and are skipped here).
pub(super) fn check(
    cat: &StorageCatalog,
    volumes: &[String],
    node: &Node,
) -> Result<(), FitReason> {
    let Some(node_labels) = node.metadata.labels.as_ref() else {
        return Ok(());
    };
    if !TOPOLOGY_LABELS.iter().any(|k| node_labels.contains_key(*k)) {
        return Ok(());
    }
    for pv in volumes.iter().filter_map(|v| cat.volume(v)) {
        let Some(pv_labels) = pv.metadata.labels.as_ref() else {
            continue;
        };
        for key in TOPOLOGY_LABELS {
            let Some(value) = pv_labels.get(key) else {
                continue;
            };
            let on_node = node_labels
                .get(key)
                .or_else(|| node_labels.get(ga_label(key)));
            // A volume may list several zones, joined by "__".
            if !on_node.is_some_and(|n| value.split("__").any(|z| z == n)) {
                // Tasks of one role may use different claims: never cached per role.
                return Err(FitReason::unresolvable(ZONE_CONFLICT).depending_on_pods());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use volcano_api::Objects;
    use volcano_api::k8s_openapi::api::core::v1::PersistentVolume;
    use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn labelled(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn catalog(pv_labels: &[(&str, &str)]) -> StorageCatalog {
        StorageCatalog::of(&Objects {
            persistent_volumes: vec![PersistentVolume {
                metadata: ObjectMeta {
                    name: Some("pv".into()),
                    labels: labelled(pv_labels),
                    ..Default::default()
                },
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    fn node(labels: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some("n".into()),
                labels: labelled(labels),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn fits(pv: &[(&str, &str)], n: &[(&str, &str)]) -> bool {
        check(&catalog(pv), &["pv".to_string()], &node(n)).is_ok()
    }

    #[test]
    fn a_zoned_volume_fits_only_nodes_of_its_zone() {
        let zone = "topology.kubernetes.io/zone";
        assert!(fits(&[(zone, "a")], &[(zone, "a")]));
        assert!(!fits(&[(zone, "a")], &[(zone, "b")]));
        // A volume listing several zones fits a node in any of them.
        assert!(fits(&[(zone, "a__b")], &[(zone, "b")]));
        // A node with no topology label at all is a single-zone cluster's node.
        assert!(fits(&[(zone, "a")], &[("other", "x")]));
        // A node labelled with a region but not the volume's zone key does not fit.
        assert!(!fits(
            &[(zone, "a")],
            &[("topology.kubernetes.io/region", "r")]
        ));
    }

    #[test]
    fn a_beta_zone_label_on_the_volume_matches_the_ga_label_on_the_node() {
        assert!(fits(
            &[("failure-domain.beta.kubernetes.io/zone", "a")],
            &[("topology.kubernetes.io/zone", "a")]
        ));
        assert!(!fits(
            &[("failure-domain.beta.kubernetes.io/zone", "a")],
            &[("topology.kubernetes.io/zone", "b")]
        ));
    }
}
