//! Server-side printing: `meta.k8s.io/v1` Tables, what `kubectl get` asks for.
//!
//! Columns follow what the Kubernetes server prints for built-in kinds and the
//! `additionalPrinterColumns` of Volcano's CRDs; columns with priority 1 show with `-o wide`.
//! A kind without its own columns gets NAME and AGE.

use serde_json::{Value, json};

use crate::kinds::KindInfo;
use crate::store::selector::field_value;
use crate::time::{human_duration, parse_rfc3339};

/// What each row carries besides its cells (`?includeObject=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    /// Nothing.
    None,
    /// The object's metadata as a `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl Include {
    /// From the `includeObject` query parameter.
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            _ => Include::Metadata,
        }
    }
}

/// Whether an `Accept` header asks for a Table.
pub fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}

type Cell = fn(&Value, i64) -> Value;

struct Column {
    name: &'static str,
    ty: &'static str,
    priority: u8,
    cell: Cell,
}

const fn col(name: &'static str, ty: &'static str, priority: u8, cell: Cell) -> Column {
    Column {
        name,
        ty,
        priority,
        cell,
    }
}

fn string_or_none(v: &Value, path: &str) -> Value {
    let s = field_value(v, path);
    if s.is_empty() { Value::Null } else { json!(s) }
}

fn name(v: &Value, _: i64) -> Value {
    json!(field_value(v, "metadata.name"))
}

fn age(v: &Value, now: i64) -> Value {
    match parse_rfc3339(&field_value(v, "metadata.creationTimestamp")) {
        Some(created) => json!(human_duration(now - created)),
        None => json!("<unknown>"),
    }
}

fn or_none(v: &Value, path: &str) -> Value {
    let s = field_value(v, path);
    json!(if s.is_empty() {
        "<none>".to_string()
    } else {
        s
    })
}

fn container_statuses(v: &Value) -> &[Value] {
    v.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn pod_ready(v: &Value, _: i64) -> Value {
    let total = v
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let ready = container_statuses(v)
        .iter()
        .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    json!(format!("{ready}/{total}"))
}

/// The STATUS column of `kubectl get pods`: a container's waiting or terminated reason wins over
/// the phase, and a deleting pod is Terminating.
fn pod_status(v: &Value, _: i64) -> Value {
    let mut reason = field_value(v, "status.reason");
    if reason.is_empty() {
        reason = field_value(v, "status.phase");
    }
    for c in container_statuses(v) {
        if let Some(r) = c.pointer("/state/waiting/reason").and_then(Value::as_str) {
            reason = r.to_string();
        } else if let Some(t) = c.pointer("/state/terminated") {
            reason = match t.get("reason").and_then(Value::as_str) {
                Some(r) => r.to_string(),
                None => format!(
                    "ExitCode:{}",
                    t.get("exitCode").and_then(Value::as_i64).unwrap_or(0)
                ),
            };
        }
    }
    if !field_value(v, "metadata.deletionTimestamp").is_empty() {
        reason = "Terminating".to_string();
    }
    json!(reason)
}

fn pod_restarts(v: &Value, _: i64) -> Value {
    let n: i64 = container_statuses(v)
        .iter()
        .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
        .sum();
    json!(n)
}

fn node_status(v: &Value, _: i64) -> Value {
    let ready = v
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .map(|c| match c["status"].as_str() {
            Some("True") => "Ready",
            Some("False") => "NotReady",
            _ => "Unknown",
        })
        .unwrap_or("Unknown");
    let mut s = ready.to_string();
    if v.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        s.push_str(",SchedulingDisabled");
    }
    json!(s)
}

fn node_roles(v: &Value, _: i64) -> Value {
    let roles: Vec<&str> = v
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|l| {
            l.keys()
                .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                .collect()
        })
        .unwrap_or_default();
    json!(if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.join(",")
    })
}

fn node_address(v: &Value, ty: &str) -> Value {
    let addr = v
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|x| x["type"] == ty))
        .and_then(|x| x["address"].as_str());
    json!(addr.unwrap_or("<none>"))
}

fn event_object(v: &Value, _: i64) -> Value {
    let kind = field_value(v, "involvedObject.kind").to_lowercase();
    json!(format!("{kind}/{}", field_value(v, "involvedObject.name")))
}

fn event_last_seen(v: &Value, now: i64) -> Value {
    let ts = ["lastTimestamp", "eventTime", "metadata.creationTimestamp"]
        .iter()
        .map(|p| field_value(v, p))
        .find(|s| !s.is_empty())
        .unwrap_or_default();
    match parse_rfc3339(&ts) {
        Some(t) => json!(human_duration(now - t)),
        None => json!("<unknown>"),
    }
}

fn count_data(v: &Value, _: i64) -> Value {
    let n = ["data", "binaryData"]
        .iter()
        .filter_map(|f| v.get(*f).and_then(Value::as_object))
        .map(|m| m.len())
        .sum::<usize>();
    json!(n)
}

/// Access modes as kubectl abbreviates them (`RWO,ROX`), at `path`.
fn access_modes(v: &Value, path: &str) -> Value {
    let modes: Vec<&str> = v
        .pointer(path)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|m| match m {
            "ReadWriteOnce" => "RWO",
            "ReadOnlyMany" => "ROX",
            "ReadWriteMany" => "RWX",
            "ReadWriteOncePod" => "RWOP",
            other => other,
        })
        .collect();
    json!(modes.join(","))
}

fn volume_claim(v: &Value, _: i64) -> Value {
    let name = field_value(v, "spec.claimRef.name");
    if name.is_empty() {
        return json!("");
    }
    json!(format!(
        "{}/{name}",
        field_value(v, "spec.claimRef.namespace")
    ))
}

fn volume_attributes_class(v: &Value, _: i64) -> Value {
    let class = field_value(v, "spec.volumeAttributesClassName");
    json!(if class.is_empty() {
        "<unset>".to_string()
    } else {
        class
    })
}

/// A claim shows capacity and access modes only once bound to a volume.
fn bound_claim(v: &Value) -> bool {
    !field_value(v, "spec.volumeName").is_empty()
}

fn claim_status(v: &Value, _: i64) -> Value {
    if v.pointer("/metadata/deletionTimestamp").is_some() {
        return json!("Terminating");
    }
    json!(field_value(v, "status.phase"))
}

fn storage_class_name(v: &Value, _: i64) -> Value {
    let name = field_value(v, "metadata.name");
    let default = v
        .pointer("/metadata/annotations/storageclass.kubernetes.io~1is-default-class")
        .and_then(Value::as_str)
        == Some("true");
    json!(if default {
        format!("{name} (default)")
    } else {
        name
    })
}

fn count_drivers(v: &Value, _: i64) -> Value {
    json!(
        v.pointer("/spec/drivers")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    )
}

macro_rules! path_cell {
    ($path:literal) => {{
        fn cell(v: &Value, _: i64) -> Value {
            string_or_none(v, $path)
        }
        cell
    }};
    ($path:literal, none) => {{
        fn cell(v: &Value, _: i64) -> Value {
            or_none(v, $path)
        }
        cell
    }};
    ($path:literal, int) => {{
        fn cell(v: &Value, _: i64) -> Value {
            let mut cur = v;
            for seg in $path.split('.') {
                match cur.get(seg) {
                    Some(x) => cur = x,
                    None => return Value::Null,
                }
            }
            cur.clone()
        }
        cell
    }};
}

fn columns(kind: &KindInfo) -> Vec<Column> {
    let (n, a) = (col("Name", "string", 0, name), col("Age", "string", 0, age));
    match (kind.group, kind.resource) {
        ("", "pods") => vec![
            n,
            col("Ready", "string", 0, pod_ready),
            col("Status", "string", 0, pod_status),
            col("Restarts", "string", 0, pod_restarts),
            a,
            col("IP", "string", 1, path_cell!("status.podIP", none)),
            col("Node", "string", 1, path_cell!("spec.nodeName", none)),
            col(
                "Nominated Node",
                "string",
                1,
                path_cell!("status.nominatedNodeName", none),
            ),
            col("Readiness Gates", "string", 1, |_, _| json!("<none>")),
        ],
        ("", "nodes") => vec![
            n,
            col("Status", "string", 0, node_status),
            col("Roles", "string", 0, node_roles),
            a,
            col(
                "Version",
                "string",
                0,
                path_cell!("status.nodeInfo.kubeletVersion"),
            ),
            col("Internal-IP", "string", 1, |v, _| {
                node_address(v, "InternalIP")
            }),
            col("External-IP", "string", 1, |v, _| {
                node_address(v, "ExternalIP")
            }),
            col(
                "OS-Image",
                "string",
                1,
                path_cell!("status.nodeInfo.osImage", none),
            ),
            col(
                "Kernel-Version",
                "string",
                1,
                path_cell!("status.nodeInfo.kernelVersion", none),
            ),
            col(
                "Container-Runtime",
                "string",
                1,
                path_cell!("status.nodeInfo.containerRuntimeVersion", none),
            ),
        ],
        ("", "namespaces") => vec![n, col("Status", "string", 0, path_cell!("status.phase")), a],
        ("", "events") => vec![
            col("Last Seen", "string", 0, event_last_seen),
            col("Type", "string", 0, path_cell!("type")),
            col("Reason", "string", 0, path_cell!("reason")),
            col("Object", "string", 0, event_object),
            col("Message", "string", 0, path_cell!("message")),
        ],
        ("", "configmaps") | ("", "secrets") => {
            vec![n, col("Data", "integer", 0, count_data), a]
        }
        ("", "persistentvolumes") => vec![
            n,
            col("Capacity", "string", 0, path_cell!("spec.capacity.storage")),
            col("Access Modes", "string", 0, |v, _| {
                access_modes(v, "/spec/accessModes")
            }),
            col(
                "Reclaim Policy",
                "string",
                0,
                path_cell!("spec.persistentVolumeReclaimPolicy"),
            ),
            col("Status", "string", 0, path_cell!("status.phase")),
            col("Claim", "string", 0, volume_claim),
            col(
                "StorageClass",
                "string",
                0,
                path_cell!("spec.storageClassName"),
            ),
            col(
                "VolumeAttributesClass",
                "string",
                0,
                volume_attributes_class,
            ),
            col("Reason", "string", 0, path_cell!("status.reason")),
            a,
            col("VolumeMode", "string", 1, path_cell!("spec.volumeMode")),
        ],
        ("", "persistentvolumeclaims") => vec![
            n,
            col("Status", "string", 0, claim_status),
            col("Volume", "string", 0, path_cell!("spec.volumeName")),
            col("Capacity", "string", 0, |v, _| {
                json!(if bound_claim(v) {
                    field_value(v, "status.capacity.storage")
                } else {
                    String::new()
                })
            }),
            col("Access Modes", "string", 0, |v, _| {
                if bound_claim(v) {
                    access_modes(v, "/status/accessModes")
                } else {
                    json!("")
                }
            }),
            col(
                "StorageClass",
                "string",
                0,
                path_cell!("spec.storageClassName"),
            ),
            col(
                "VolumeAttributesClass",
                "string",
                0,
                volume_attributes_class,
            ),
            a,
            col("VolumeMode", "string", 1, path_cell!("spec.volumeMode")),
        ],
        ("storage.k8s.io", "storageclasses") => vec![
            col("Name", "string", 0, storage_class_name),
            col("Provisioner", "string", 0, path_cell!("provisioner")),
            col("ReclaimPolicy", "string", 0, path_cell!("reclaimPolicy")),
            col(
                "VolumeBindingMode",
                "string",
                0,
                path_cell!("volumeBindingMode"),
            ),
            col("AllowVolumeExpansion", "string", 0, |v, _| {
                json!(
                    v.get("allowVolumeExpansion")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                )
            }),
            a,
        ],
        ("storage.k8s.io", "csinodes") => vec![n, col("Drivers", "integer", 0, count_drivers), a],
        ("coordination.k8s.io", "leases") => {
            vec![
                n,
                col("Holder", "string", 0, path_cell!("spec.holderIdentity")),
                a,
            ]
        }
        ("scheduling.k8s.io", "priorityclasses") => vec![
            n,
            col("Value", "integer", 0, path_cell!("value", int)),
            col("Global-Default", "boolean", 0, |v, _| {
                json!(
                    v.get("globalDefault")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                )
            }),
            a,
        ],
        // The HyperNode CRD's printer columns.
        ("topology.volcano.sh", "hypernodes") => vec![
            n,
            col("Tier", "string", 0, path_cell!("spec.tier", int)),
            col("TierName", "string", 0, path_cell!("spec.tierName", int)),
            col(
                "NodeCount",
                "integer",
                0,
                path_cell!("status.nodeCount", int),
            ),
            col("Age", "date", 0, age),
        ],
        ("flow.volcano.sh", "jobflows") => vec![
            n,
            col("Status", "string", 0, path_cell!("status.state.phase")),
            col("Age", "date", 0, age),
        ],
        ("batch.volcano.sh", "jobs") => vec![
            n,
            col("STATUS", "string", 0, path_cell!("status.state.phase")),
            col(
                "minAvailable",
                "integer",
                0,
                path_cell!("status.minAvailable", int),
            ),
            col("RUNNINGS", "integer", 0, path_cell!("status.running", int)),
            col("AGE", "date", 0, age),
            col("QUEUE", "string", 1, path_cell!("spec.queue")),
        ],
        ("scheduling.volcano.sh", "podgroups") => vec![
            n,
            col("STATUS", "string", 0, path_cell!("status.phase")),
            col("minMember", "integer", 0, path_cell!("spec.minMember", int)),
            col("RUNNINGS", "integer", 0, path_cell!("status.running", int)),
            col("AGE", "date", 0, age),
            col("QUEUE", "string", 1, path_cell!("spec.queue")),
        ],
        ("scheduling.volcano.sh", "queues") => vec![
            n,
            col("AGE", "date", 0, age),
            col("PARENT", "string", 1, path_cell!("spec.parent")),
        ],
        _ => vec![n, a],
    }
}

fn row(object: &Value, cols: &[Column], include: Include, now: i64) -> Value {
    let cells: Vec<Value> = cols.iter().map(|c| (c.cell)(object, now)).collect();
    let mut row = json!({"cells": cells});
    match include {
        Include::None => {}
        Include::Metadata => {
            row["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": object.get("metadata").cloned().unwrap_or(json!({})),
            });
        }
        Include::Object => row["object"] = object.clone(),
    }
    row
}

/// A Table of `objects` of one kind. `rv` is the list's resourceVersion, if any.
pub fn table<'a>(
    kind: &KindInfo,
    objects: impl IntoIterator<Item = &'a Value>,
    rv: Option<u64>,
    include: Include,
    now: i64,
) -> Value {
    let cols = columns(kind);
    let definitions: Vec<Value> = cols
        .iter()
        .map(|c| {
            let format = if c.name == "Name" { "name" } else { "" };
            json!({"name": c.name, "type": c.ty, "format": format, "description": "", "priority": c.priority})
        })
        .collect();
    let rows: Vec<Value> = objects
        .into_iter()
        .map(|o| row(o, &cols, include, now))
        .collect();
    let mut metadata = json!({});
    if let Some(rv) = rv {
        metadata["resourceVersion"] = json!(rv.to_string());
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;

    #[test]
    fn pods_print_like_kubectl() {
        let pod = json!({"metadata": {"name": "p", "creationTimestamp": "2024-05-01T12:00:00Z"},
            "spec": {"containers": [{"name": "c"}], "nodeName": "n1"},
            "status": {"phase": "Succeeded", "podIP": "10.244.0.2", "containerStatuses": [
                {"ready": false, "restartCount": 1, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}});
        let t = table(
            kinds::pods(),
            [&pod],
            Some(5),
            Include::Metadata,
            1_714_564_800 + 65,
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "p",
                "0/1",
                "Completed",
                1,
                "65s",
                "10.244.0.2",
                "n1",
                "<none>",
                "<none>"
            ])
        );
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["metadata"]["resourceVersion"], "5");
    }

    #[test]
    fn volcano_jobs_use_the_crd_columns() {
        let job = json!({"metadata": {"name": "j"}, "spec": {"queue": "q"},
            "status": {"state": {"phase": "Running"}, "minAvailable": 2, "running": 2}});
        let t = table(kinds::find("jobs").unwrap(), [&job], None, Include::None, 0);
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["j", "Running", 2, 2, "<unknown>", "q"])
        );
        assert!(t["rows"][0].get("object").is_none());
    }

    #[test]
    fn job_flows_show_their_phase_as_volcanos_crd_does() {
        let flow = json!({"metadata": {"name": "f"}, "status": {"state": {"phase": "Running"}}});
        let t = table(
            kinds::find("jobflows").unwrap(),
            [&flow],
            None,
            Include::None,
            0,
        );
        assert_eq!(t["rows"][0]["cells"], json!(["f", "Running", "<unknown>"]));
    }

    #[test]
    fn hyper_nodes_show_tier_tier_name_and_node_count_as_the_crd_does() {
        let hn = json!({"metadata": {"name": "leaf"},
            "spec": {"tier": 1, "tierName": "volcano.sh/tor", "members": []},
            "status": {"nodeCount": 3}});
        let t = table(
            kinds::find("hypernodes").unwrap(),
            [&hn],
            None,
            Include::None,
            0,
        );
        let names: Vec<&Value> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["name"])
            .collect();
        assert_eq!(names, ["Name", "Tier", "TierName", "NodeCount", "Age"]);
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["leaf", 1, "volcano.sh/tor", 3, "<unknown>"])
        );
    }

    #[test]
    fn volumes_and_claims_print_like_kubectl() {
        let pv = json!({"metadata": {"name": "pv1"},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "local",
                     "claimRef": {"namespace": "team", "name": "data"}, "volumeMode": "Filesystem"},
            "status": {"phase": "Bound"}});
        let t = table(
            kinds::find("persistentvolumes").unwrap_or(kinds::pods()),
            [&pv],
            None,
            Include::None,
            0,
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "pv1",
                "10Gi",
                "RWO,ROX",
                "Retain",
                "Bound",
                "team/data",
                "local",
                "<unset>",
                null,
                "<unknown>",
                "Filesystem"
            ])
        );
        let pending = json!({"metadata": {"name": "data"}, "spec": {"storageClassName": "local"},
            "status": {"phase": "Pending", "capacity": {"storage": "1Gi"}}});
        let claims = kinds::find("persistentvolumeclaims").unwrap_or(kinds::pods());
        let t = table(claims, [&pending], None, Include::None, 0);
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "data",
                "Pending",
                null,
                "",
                "",
                "local",
                "<unset>",
                "<unknown>",
                null
            ]),
            "an unbound claim shows no capacity"
        );
        let sc = json!({"metadata": {"name": "local", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "kubernetes.io/no-provisioner", "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer"});
        let t = table(
            kinds::find("storageclasses").unwrap_or(kinds::pods()),
            [&sc],
            None,
            Include::None,
            0,
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "local (default)",
                "kubernetes.io/no-provisioner",
                "Delete",
                "WaitForFirstConsumer",
                false,
                "<unknown>"
            ])
        );
    }

    #[test]
    fn accept_header_detection() {
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
    }
}
