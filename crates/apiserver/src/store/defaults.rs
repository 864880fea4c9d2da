//! What the Kubernetes API server adds to an object on create: defaults, admission, reset
//! status.
//!
//! Only the parts the scheduler, controllers and kubectl look at: a pod gets its phase, QoS
//! class, scheduler name, restart policy, requests defaulted from limits and its priority
//! resolved from its PriorityClass (the Priority admission plugin); a namespace gets phase
//! `Active`; a PersistentVolume or claim starts `Pending` in `Filesystem` mode (a volume kept
//! on release), a StorageClass binds `Immediate`ly and deletes on release; a CRD is
//! immediately `Established`; a custom resource with a status subresource
//! loses the status it was created with, as in Kubernetes.

use serde_json::{Map, Value, json};

use super::meta::ensure_object;
use crate::error::{ApiError, Reason};
use crate::kinds::KindInfo;

/// Priority of the built-in classes every cluster has.
pub fn builtin_priority(class: &str) -> Option<i64> {
    match class {
        "system-node-critical" => Some(2_000_001_000),
        "system-cluster-critical" => Some(2_000_000_000),
        _ => None,
    }
}

/// The PriorityClasses a pod's priority is resolved against.
pub struct Priorities<'a> {
    /// Value of a class by name, if it exists.
    pub lookup: &'a dyn Fn(&str) -> Option<i64>,
    /// The class marked `globalDefault`, if any: its name and value.
    pub global_default: Option<(String, i64)>,
}

/// Fills in what Kubernetes fills in on create.
pub fn on_create(
    kind: &KindInfo,
    object: &mut Value,
    priorities: &Priorities<'_>,
) -> Result<(), ApiError> {
    match (kind.group, kind.resource) {
        ("", "pods") => pod(kind, object, priorities),
        ("", "namespaces") => {
            let name = object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let labels = ensure_object(
                super::meta::meta_mut(object)
                    .entry("labels")
                    .or_insert(Value::Null),
            );
            labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            let root = ensure_object(object);
            let spec = ensure_object(root.entry("spec").or_insert(Value::Null));
            spec.entry("finalizers").or_insert(json!(["kubernetes"]));
            root.insert("status".into(), json!({"phase": "Active"}));
            Ok(())
        }
        ("", "persistentvolumes") => {
            volume_defaults(
                object,
                &[("persistentVolumeReclaimPolicy", json!("Retain"))],
            );
            Ok(())
        }
        ("", "persistentvolumeclaims") => {
            volume_defaults(object, &[]);
            Ok(())
        }
        ("storage.k8s.io", "storageclasses") => {
            let root = ensure_object(object);
            root.entry("reclaimPolicy").or_insert(json!("Delete"));
            root.entry("volumeBindingMode")
                .or_insert(json!("Immediate"));
            Ok(())
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            let names = object.pointer("/spec/names").cloned().unwrap_or(json!({}));
            let stored: Vec<Value> = object
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                        .filter_map(|v| v.get("name").cloned())
                        .collect()
                })
                .unwrap_or_default();
            object["status"] = json!({
                "acceptedNames": names,
                "storedVersions": stored,
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                     "message": "no conflicts found"},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                     "message": "the initial names have been accepted"}
                ]
            });
            Ok(())
        }
        // Custom resources with a status subresource start without status.
        (g, _) if g.ends_with("volcano.sh") && kind.status_subresource => {
            ensure_object(object).remove("status");
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A volume or claim starts `Pending` whatever status it was sent with (binding is what moves
/// it on), in `Filesystem` mode unless it asks for a block device, with `more` spec defaults.
fn volume_defaults(object: &mut Value, more: &[(&str, Value)]) {
    let root = ensure_object(object);
    let spec = ensure_object(root.entry("spec").or_insert(Value::Null));
    spec.entry("volumeMode").or_insert(json!("Filesystem"));
    for (field, value) in more {
        spec.entry(*field).or_insert(value.clone());
    }
    root.insert("status".into(), json!({"phase": "Pending"}));
}

fn pod(kind: &KindInfo, object: &mut Value, priorities: &Priorities<'_>) -> Result<(), ApiError> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let root = ensure_object(object);
    let spec = ensure_object(root.entry("spec").or_insert(Value::Null));
    for (field, value) in [
        ("restartPolicy", json!("Always")),
        ("dnsPolicy", json!("ClusterFirst")),
        ("schedulerName", json!("default-scheduler")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("securityContext", json!({})),
        ("enableServiceLinks", json!(true)),
        ("preemptionPolicy", json!("PreemptLowerPriority")),
    ] {
        spec.entry(field).or_insert(value);
    }
    for list in ["initContainers", "containers"] {
        if let Some(Value::Array(containers)) = spec.get_mut(list) {
            containers.iter_mut().for_each(container);
        }
    }
    if !spec.get("priority").is_some_and(Value::is_i64) {
        let class = spec
            .get("priorityClassName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let priority = if class.is_empty() {
            match &priorities.global_default {
                Some((default_class, value)) => {
                    spec.insert("priorityClassName".into(), json!(default_class));
                    *value
                }
                None => 0,
            }
        } else {
            builtin_priority(&class)
                .or_else(|| (priorities.lookup)(&class))
                .ok_or_else(|| {
                    ApiError::new(
                        Reason::Forbidden,
                        format!(
                            "{} \"{name}\" is forbidden: no PriorityClass with name {class} was found",
                            kind.resource
                        ),
                    )
                })?
        };
        spec.insert("priority".into(), json!(priority));
    }
    let qos = qos_class(spec);
    root.insert(
        "status".into(),
        json!({"phase": "Pending", "qosClass": qos}),
    );
    Ok(())
}

fn container(c: &mut Value) {
    let Some(c) = c.as_object_mut() else {
        return;
    };
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let last = image.rsplit('/').next().unwrap_or(image);
    let policy = if image.contains('@') || (last.contains(':') && !last.ends_with(":latest")) {
        "IfNotPresent"
    } else {
        "Always"
    };
    c.entry("imagePullPolicy").or_insert(json!(policy));
    c.entry("terminationMessagePath")
        .or_insert(json!("/dev/termination-log"));
    c.entry("terminationMessagePolicy").or_insert(json!("File"));
    let resources = ensure_object(c.entry("resources").or_insert(Value::Null));
    // Kubernetes defaults a missing request to the limit of the same resource.
    if let Some(Value::Object(limits)) = resources.get("limits").cloned() {
        let requests = ensure_object(resources.entry("requests").or_insert(Value::Null));
        for (res, qty) in limits {
            requests.entry(res).or_insert(qty);
        }
    }
}

/// BestEffort without any request or limit, Guaranteed when every container limits CPU and
/// memory to exactly its requests, Burstable otherwise.
fn qos_class(spec: &Map<String, Value>) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|l| spec.get(*l).and_then(Value::as_array))
        .flatten()
        .collect();
    let section = |c: &Value, which: &str| c.pointer(&format!("/resources/{which}")).cloned();
    let empty = |v: &Option<Value>| {
        v.as_ref()
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
    };
    if containers
        .iter()
        .all(|c| empty(&section(c, "requests")) && empty(&section(c, "limits")))
    {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let (req, lim) = (section(c, "requests"), section(c, "limits"));
        ["cpu", "memory"].iter().all(|r| {
            let l = lim.as_ref().and_then(|l| l.get(*r));
            l.is_some()
                && req
                    .as_ref()
                    .and_then(|q| q.get(*r))
                    .is_none_or(|q| Some(q) == l)
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;

    fn none(_: &str) -> Option<i64> {
        None
    }

    #[test]
    fn pods_get_defaults_priority_and_qos() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "image": "busybox:1.36", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}
        ], "priorityClassName": "system-node-critical"}, "status": {"phase": "Running"}});
        let pr = Priorities {
            lookup: &none,
            global_default: None,
        };
        on_create(kinds::pods(), &mut pod, &pr).unwrap();
        assert_eq!(
            pod["status"],
            json!({"phase": "Pending", "qosClass": "Guaranteed"})
        );
        assert_eq!(pod["spec"]["priority"], 2_000_001_000);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "1"
        );
        assert_eq!(
            pod["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert_eq!(pod["spec"]["schedulerName"], "default-scheduler");
    }

    #[test]
    fn unknown_priority_class_is_forbidden_and_global_default_applies() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "nope"}});
        let pr = Priorities {
            lookup: &none,
            global_default: None,
        };
        let err = on_create(kinds::pods(), &mut pod, &pr).unwrap_err();
        assert_eq!(err.code(), 403);
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {}});
        let pr = Priorities {
            lookup: &none,
            global_default: Some(("low".into(), 10)),
        };
        on_create(kinds::pods(), &mut pod, &pr).unwrap();
        assert_eq!(pod["spec"]["priority"], 10);
        assert_eq!(pod["spec"]["priorityClassName"], "low");
        assert_eq!(pod["status"]["qosClass"], "BestEffort");
    }

    #[test]
    fn volcano_kinds_lose_status_on_create() {
        let mut q = json!({"metadata": {"name": "q"}, "status": {"state": "Open"}});
        let pr = Priorities {
            lookup: &none,
            global_default: None,
        };
        on_create(kinds::find("queues").unwrap(), &mut q, &pr).unwrap();
        assert!(q.get("status").is_none());
    }
}
