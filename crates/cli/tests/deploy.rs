//! The manifests of `deploy/`: they parse, hang together (names, labels, ports), run the
//! commands the runtime defines, grant exactly the permissions it uses, and carry the CRDs and
//! the scheduler configuration this build has.

// A test that cannot read its fixtures should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_json::Value;
use volcano_controllers::admission::{REPLICA_LABELS, UNREVIEWED_NAMESPACES};
use volcano_scheduler::conf::{DEFAULT_SCHEDULER_CONF, SchedulerConf};

/// What the scheduler Deployment runs (after the `volcano` entry point).
const SCHEDULER_ARGS: &[&str] = &[
    "scheduler",
    "--scheduler-conf",
    "/etc/volcano/volcano-scheduler.conf",
    "--scheduler-name",
    "volcano",
    "--schedule-period",
    "1s",
    "--default-queue",
    "default",
    "--listen-address",
    "0.0.0.0:8080",
    "--leader-elect",
    "--lock-object-namespace",
    "volcano-system",
];

/// What the controller-manager Deployment runs.
const CONTROLLER_MANAGER_ARGS: &[&str] = &[
    "controller-manager",
    "--scheduler-name",
    "volcano",
    "--listen-address",
    "0.0.0.0:8081",
    "--leader-elect",
    "--lock-object-namespace",
    "volcano-system",
];

const IMAGE: &str = "ghcr.io/volcano-rs/volcano:0.1.0";
const NAMESPACE: &str = "volcano-system";

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// The documents of one file, empty ones (a trailing `---`) left out.
fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .enumerate()
        .map(|(i, doc)| {
            Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{} document {i}: {e}", path.display()))
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// Every object that `kubectl apply -f deploy/` applies (not recursive: the examples stay out).
fn applied() -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files.iter().flat_map(|f| documents(f)).collect()
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in deploy/"))
}

#[test]
fn every_document_is_a_kubernetes_object() {
    let mut files = Vec::new();
    yaml_files(&deploy_dir(), &mut files);
    assert!(files.len() >= 7, "{files:?}");
    for file in &files {
        let docs = documents(file);
        assert!(!docs.is_empty(), "{}: no document", file.display());
        for (i, doc) in docs.iter().enumerate() {
            let at = format!("{} document {i}", file.display());
            let api = doc["apiVersion"].as_str().unwrap_or_default();
            assert!(!api.is_empty(), "{at}: no apiVersion");
            assert!(
                doc["kind"].as_str().is_some_and(|k| !k.is_empty()),
                "{at}: no kind"
            );
            let name = doc["metadata"]["name"].as_str().unwrap_or_default();
            assert!(!name.is_empty(), "{at}: no metadata.name");
        }
    }
}

#[test]
fn files_apply_in_dependency_order() {
    // kubectl applies files in name order: the namespace and the CRDs before what uses them.
    let names: Vec<String> = std::fs::read_dir(deploy_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(
        names,
        [
            "00-namespace.yaml",
            "10-crds.yaml",
            "15-queue-protection.yaml",
            "20-rbac.yaml",
            "30-scheduler-configmap.yaml",
            "40-scheduler.yaml",
            "50-controller-manager.yaml",
            "60-admission.yaml",
            "65-admission-webhooks.yaml",
        ]
    );
}

#[test]
fn namespaced_objects_live_in_volcano_system() {
    let cluster_scoped = [
        "Namespace",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ];
    for o in applied() {
        let kind = o["kind"].as_str().unwrap_or_default();
        let ns = o["metadata"]["namespace"].as_str();
        if cluster_scoped.contains(&kind) {
            assert_eq!(
                ns, None,
                "{kind} {} is cluster-scoped",
                o["metadata"]["name"]
            );
        } else {
            assert_eq!(ns, Some(NAMESPACE), "{kind} {}", o["metadata"]["name"]);
        }
    }
}

#[test]
fn crds_file_is_what_volcano_crds_prints() {
    let out = Command::new(env!("CARGO_BIN_EXE_volcano"))
        .arg("crds")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    let file = std::fs::read_to_string(deploy_dir().join("10-crds.yaml")).unwrap();
    assert!(
        printed == file,
        "deploy/10-crds.yaml differs from `volcano crds`; regenerate it with\n  \
         cargo run -p volcano-cli -- crds > deploy/10-crds.yaml"
    );
}

#[test]
fn crds_print_as_json_too() {
    let out = Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(["crds", "-o", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    let kinds: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["spec"]["names"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "Job",
            "PodGroup",
            "Queue",
            "Command",
            "CronJob",
            "JobFlow",
            "JobTemplate",
            "HyperNode"
        ]
    );
}

#[test]
fn configmap_holds_the_built_in_scheduler_conf() {
    let objects = applied();
    let cm = find(&objects, "ConfigMap", "volcano-scheduler-configmap");
    let text = cm["data"]["volcano-scheduler.conf"].as_str().unwrap();
    let (conf, skipped) = SchedulerConf::parse(text).unwrap();
    assert!(
        skipped.actions.is_empty() && skipped.plugins.is_empty(),
        "{skipped:?}"
    );
    let (built_in, _) = SchedulerConf::parse(DEFAULT_SCHEDULER_CONF).unwrap();
    assert_eq!(conf, built_in);
}

/// The one container of a Deployment's pods.
fn container<'a>(objects: &'a [Value], deployment: &str) -> &'a Value {
    let d = find(objects, "Deployment", deployment);
    let containers = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 1, "{deployment}");
    &containers[0]
}

#[test]
fn deployments_run_the_runtime_commands() {
    let objects = applied();
    for (deployment, args, port) in [
        ("volcano-scheduler", SCHEDULER_ARGS, 8080),
        ("volcano-controllers", CONTROLLER_MANAGER_ARGS, 8081),
    ] {
        let d = find(&objects, "Deployment", deployment);
        assert_eq!(d["spec"]["replicas"], 1, "{deployment}");
        let c = container(&objects, deployment);
        let got: Vec<&str> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(got, args, "{deployment}");
        assert_eq!(
            c["command"],
            Value::Null,
            "{deployment}: the image's entry point runs"
        );
        assert_eq!(c["image"], IMAGE, "{deployment}");
        assert_eq!(c["imagePullPolicy"], "IfNotPresent", "{deployment}");
        assert_eq!(c["ports"][0]["containerPort"], port, "{deployment}");
        assert_eq!(c["ports"][0]["name"], "metrics", "{deployment}");
        assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
        assert_eq!(c["livenessProbe"]["httpGet"]["port"], "metrics");
        assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
        assert_eq!(c["readinessProbe"]["httpGet"]["port"], "metrics");
        let sc = &c["securityContext"];
        assert_eq!(sc["readOnlyRootFilesystem"], true, "{deployment}");
        assert_eq!(sc["allowPrivilegeEscalation"], false, "{deployment}");
        let pod_sc = &d["spec"]["template"]["spec"]["securityContext"];
        assert_eq!(pod_sc["runAsNonRoot"], true, "{deployment}");
        assert!(
            c["resources"]["requests"]["cpu"].is_string(),
            "{deployment}"
        );
        assert!(
            c["resources"]["requests"]["memory"].is_string(),
            "{deployment}"
        );
    }
}

#[test]
fn deployments_hang_together() {
    let objects = applied();
    for (deployment, account) in [
        ("volcano-scheduler", "volcano-scheduler"),
        ("volcano-controllers", "volcano-controllers"),
    ] {
        let d = find(&objects, "Deployment", deployment);
        let selector = d["spec"]["selector"]["matchLabels"].as_object().unwrap();
        let labels = &d["spec"]["template"]["metadata"]["labels"];
        for (k, v) in selector {
            assert_eq!(&labels[k], v, "{deployment}: the selector matches the pods");
        }
        let spec = &d["spec"]["template"]["spec"];
        assert_eq!(spec["serviceAccountName"], account, "{deployment}");
        find(&objects, "ServiceAccount", account);
        // Every mounted volume exists, and every ConfigMap volume names one in deploy/.
        let volumes = spec["volumes"].as_array().cloned().unwrap_or_default();
        for m in container(&objects, deployment)["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let v = volumes
                .iter()
                .find(|v| v["name"] == m["name"])
                .unwrap_or_else(|| panic!("{deployment}: no volume {}", m["name"]));
            if let Some(cm) = v["configMap"]["name"].as_str() {
                find(&objects, "ConfigMap", cm);
            }
        }
        // Its metrics Service selects its pods.
        let service = objects
            .iter()
            .find(|o| o["kind"] == "Service" && o["spec"]["selector"].as_object() == Some(selector))
            .unwrap_or_else(|| panic!("{deployment}: no Service selects it"));
        assert_eq!(service["spec"]["ports"][0]["targetPort"], "metrics");
    }
    let scheduler = container(&objects, "volcano-scheduler");
    let conf_mount = scheduler["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mountPath"] == "/etc/volcano")
        .expect("the configuration is mounted at /etc/volcano");
    assert_eq!(conf_mount["readOnly"], true);
}

/// `(apiGroup, resource, verb)` of every rule of a role.
fn grants(role: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for rule in role["rules"].as_array().unwrap() {
        let strings = |key: &str| -> Vec<String> {
            rule[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        };
        for g in strings("apiGroups") {
            for r in strings("resources") {
                for v in strings("verbs") {
                    assert_ne!(v, "*", "no wildcard verbs");
                    assert_ne!(r, "*", "no wildcard resources");
                    out.insert((g.clone(), r.clone(), v));
                }
            }
        }
    }
    out
}

/// `(group, resources, verbs)` expanded the way `grants` expands rules.
fn expected(table: &[(&str, &[&str], &[&str])]) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for (group, resources, verbs) in table {
        for r in *resources {
            for v in *verbs {
                out.insert((group.to_string(), r.to_string(), v.to_string()));
            }
        }
    }
    out
}

const WATCH: &[&str] = &["get", "list", "watch"];
const EVENTS: &[&str] = &["create", "patch", "update"];
const LEASES: &[&str] = &["get", "create", "update"];

#[test]
fn scheduler_gets_exactly_what_it_uses() {
    let objects = applied();
    let cluster = grants(find(&objects, "ClusterRole", "volcano-scheduler"));
    assert_eq!(
        cluster,
        expected(&[
            ("", &["pods"], &["get", "list", "watch", "patch"]),
            ("", &["pods/binding", "pods/eviction"], &["create"]),
            ("", &["pods/status"], &["patch", "update"]),
            ("", &["nodes", "namespaces"], WATCH),
            ("scheduling.k8s.io", &["priorityclasses"], WATCH),
            ("storage.k8s.io", &["storageclasses", "csinodes"], WATCH),
            ("topology.volcano.sh", &["hypernodes"], WATCH),
            (
                "",
                &["persistentvolumes", "persistentvolumeclaims"],
                &["get", "list", "watch", "patch", "update"]
            ),
            (
                "scheduling.volcano.sh",
                &["podgroups"],
                &["get", "list", "watch", "patch", "update"]
            ),
            (
                "scheduling.volcano.sh",
                &["podgroups/status"],
                &["get", "patch", "update"]
            ),
            (
                "scheduling.volcano.sh",
                &["queues"],
                &["get", "list", "watch", "create"]
            ),
            (
                "scheduling.volcano.sh",
                &["queues/status"],
                &["get", "patch", "update"]
            ),
            ("", &["events"], EVENTS),
            ("events.k8s.io", &["events"], EVENTS),
        ])
    );
    let local = grants(find(&objects, "Role", "volcano-scheduler"));
    assert_eq!(
        local,
        expected(&[
            ("", &["configmaps"], WATCH),
            ("coordination.k8s.io", &["leases"], LEASES),
        ])
    );
}

#[test]
fn controllers_get_exactly_what_they_use() {
    let objects = applied();
    let cluster = grants(find(&objects, "ClusterRole", "volcano-controllers"));
    let owned = &["create", "patch", "delete"][..];
    let read = &["list", "watch"][..];
    assert_eq!(
        cluster,
        expected(&[
            (
                "batch.volcano.sh",
                &["jobs"],
                &["list", "watch", "create", "delete"]
            ),
            ("batch.volcano.sh", &["jobs/status"], &["patch"]),
            ("batch.volcano.sh", &["cronjobs"], &["list", "watch"]),
            ("batch.volcano.sh", &["cronjobs/status"], &["patch"]),
            (
                "flow.volcano.sh",
                &["jobflows", "jobtemplates"],
                &["list", "watch"]
            ),
            (
                "flow.volcano.sh",
                &["jobflows/status", "jobtemplates/status"],
                &["patch"]
            ),
            (
                "",
                &["pods"],
                &["list", "watch", "create", "patch", "delete"]
            ),
            (
                "scheduling.volcano.sh",
                &["podgroups"],
                &["list", "watch", "create", "patch", "delete"]
            ),
            (
                "scheduling.volcano.sh",
                &["queues"],
                &["list", "watch", "patch"]
            ),
            ("scheduling.volcano.sh", &["queues/status"], &["patch"]),
            (
                "bus.volcano.sh",
                &["commands"],
                &["list", "watch", "delete"]
            ),
            ("", &["services", "configmaps", "secrets"], owned),
            ("networking.k8s.io", &["networkpolicies"], owned),
            ("", &["persistentvolumeclaims"], &["create"]),
            ("scheduling.k8s.io", &["priorityclasses"], read),
            ("apps", &["replicasets", "statefulsets"], read),
            ("", &["nodes"], read),
            (
                "topology.volcano.sh",
                &["hypernodes"],
                &[
                    "create", "get", "list", "watch", "update", "patch", "delete"
                ]
            ),
            (
                "topology.volcano.sh",
                &["hypernodes/status"],
                &["get", "update", "patch"]
            ),
            ("", &["events"], EVENTS),
            ("events.k8s.io", &["events"], EVENTS),
        ])
    );
    let local = grants(find(&objects, "Role", "volcano-controllers"));
    assert_eq!(
        local,
        expected(&[
            ("", &["configmaps"], &["get"]),
            ("coordination.k8s.io", &["leases"], LEASES),
        ])
    );
}

#[test]
fn bindings_name_existing_roles_and_accounts() {
    let objects = applied();
    for b in objects
        .iter()
        .filter(|o| o["kind"] == "ClusterRoleBinding" || o["kind"] == "RoleBinding")
    {
        let role_kind = b["roleRef"]["kind"].as_str().unwrap();
        let role = b["roleRef"]["name"].as_str().unwrap();
        let r = find(&objects, role_kind, role);
        if b["kind"] == "RoleBinding" {
            assert_eq!(r["metadata"]["namespace"], b["metadata"]["namespace"]);
        }
        for s in b["subjects"].as_array().unwrap() {
            assert_eq!(s["kind"], "ServiceAccount");
            assert_eq!(s["namespace"], NAMESPACE);
            find(&objects, "ServiceAccount", s["name"].as_str().unwrap());
        }
    }
}

#[test]
fn admission_webhooks_reach_the_webhook_server_and_never_block_pods() {
    let objects = applied();
    let c = container(&objects, "volcano-admission");
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "webhook-manager");
    let enabled = args
        .iter()
        .find_map(|a| a.strip_prefix("--enabled-admission="))
        .expect("--enabled-admission");
    let service = find(&objects, "Service", "volcano-admission-service");
    assert_eq!(service["spec"]["ports"][0]["port"], 443);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "webhook");
    assert_eq!(c["ports"][0]["name"], "webhook");
    assert!(args.contains(&"--port=8443"));
    assert_eq!(c["ports"][0]["containerPort"], 8443);
    let d = find(&objects, "Deployment", "volcano-admission");
    assert_eq!(
        d["spec"]["template"]["spec"]["serviceAccountName"],
        "volcano-admission"
    );
    let configurations: Vec<&Value> = objects
        .iter()
        .filter(|o| {
            o["kind"] == "MutatingWebhookConfiguration"
                || o["kind"] == "ValidatingWebhookConfiguration"
        })
        .collect();
    assert_eq!(
        configurations.len(),
        11,
        "one configuration per path served"
    );
    for conf in configurations {
        let name = conf["metadata"]["name"].as_str().unwrap();
        for hook in conf["webhooks"].as_array().unwrap() {
            let target = &hook["clientConfig"]["service"];
            assert_eq!(target["name"], "volcano-admission-service", "{name}");
            assert_eq!(target["namespace"], NAMESPACE, "{name}");
            let path = target["path"].as_str().unwrap();
            assert!(
                enabled.split(',').any(|p| p == path),
                "{name}: {path} not served"
            );
            assert_eq!(
                name,
                format!("volcano-admission-service{}", path.replace('/', "-")),
                "Volcano's configuration names"
            );
            let timeout = hook["timeoutSeconds"].as_i64().unwrap();
            assert!(
                timeout <= 5,
                "{name}: a hung webhook holds writes {timeout}s"
            );
            let resource = hook["rules"][0]["resources"][0].as_str().unwrap();
            let policy = hook["failurePolicy"].as_str().unwrap();
            if resource == "queues" {
                assert_eq!(
                    policy, "Fail",
                    "{name}: queue trees are never written unchecked"
                );
            } else {
                assert_eq!(
                    policy, "Ignore",
                    "{name}: a webhook that is down blocks no {resource}"
                );
            }
            // The API server checks a namespaceSelector on every request in a namespace, each
            // binding and event included, before it looks at the rules.
            assert!(hook["namespaceSelector"].is_null(), "{name}");
            let conditions: Vec<&str> = hook["matchConditions"]
                .as_array()
                .map(|c| c.iter().filter_map(|c| c["expression"].as_str()).collect())
                .unwrap_or_default();
            let unreviewed = format!(
                "!(request.namespace in [{}])",
                UNREVIEWED_NAMESPACES.map(|n| format!("'{n}'")).join(", ")
            );
            assert!(UNREVIEWED_NAMESPACES.contains(&NAMESPACE));
            // Queues and HyperNodes are cluster-scoped: no namespace to leave out.
            let namespaced = !["queues", "hypernodes"].contains(&resource);
            assert_eq!(
                conditions.contains(&unreviewed.as_str()),
                namespaced,
                "{name}: the webhook's own pods must start without it: {conditions:?}"
            );
        }
        if name.contains("-pods-") {
            // Only replicas are sent, one entry per replica label, as the in-process admission
            // of `volcano up` sends them; the entries differ in nothing else.
            let hooks = conf["webhooks"].as_array().unwrap();
            let selected: Vec<&str> = hooks
                .iter()
                .map(|h| {
                    let exprs = h["objectSelector"]["matchExpressions"].as_array().unwrap();
                    assert_eq!(exprs.len(), 1, "{name}");
                    assert_eq!(exprs[0]["operator"], "Exists", "{name}");
                    exprs[0]["key"].as_str().unwrap()
                })
                .collect();
            assert_eq!(selected, REPLICA_LABELS, "{name}");
            let names: BTreeSet<&str> = hooks.iter().map(|h| h["name"].as_str().unwrap()).collect();
            assert_eq!(names.len(), hooks.len(), "{name}: webhook names are unique");
            let rest = |h: &Value| {
                let mut h = h.clone();
                let o = h.as_object_mut().unwrap();
                o.remove("name");
                o.remove("objectSelector");
                h
            };
            for h in &hooks[1..] {
                assert_eq!(rest(h), rest(&hooks[0]), "{name}");
            }
        }
    }
}

#[test]
fn the_webhook_server_gets_exactly_what_it_uses() {
    let objects = applied();
    let role = find(&objects, "ClusterRole", "volcano-admission");
    assert_eq!(
        grants(role),
        expected(&[
            ("scheduling.volcano.sh", &["queues"], &["list", "watch"]),
            (
                "admissionregistration.k8s.io",
                &[
                    "mutatingwebhookconfigurations",
                    "validatingwebhookconfigurations"
                ],
                &["get", "patch"]
            ),
        ])
    );
    // Only its own configurations, each of which exists in deploy/.
    let names: BTreeSet<&str> = role["rules"][1]["resourceNames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let configurations: BTreeSet<&str> = objects
        .iter()
        .filter(|o| {
            o["kind"]
                .as_str()
                .unwrap_or_default()
                .ends_with("WebhookConfiguration")
        })
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, configurations);
}
