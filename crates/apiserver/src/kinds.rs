//! The table of served kinds: every resource the server knows, in one place.
//!
//! Adding a kind is adding one row to [`KINDS`]; discovery, routing, storage and error messages
//! all read this table. Nothing else in the crate lists kinds, except the printers of
//! `http::table` and the defaults of `store::defaults`, which fall back to generic behaviour for
//! kinds they do not name.

/// One served resource: how it is named in URLs, discovery and error messages.
#[derive(Debug, PartialEq, Eq)]
pub struct KindInfo {
    /// Plural resource name used in URLs (`pods`).
    pub resource: &'static str,
    /// Singular name (`pod`), used by kubectl.
    pub singular: &'static str,
    /// API group, empty for the core group.
    pub group: &'static str,
    /// Served version.
    pub version: &'static str,
    /// Kind of the objects (`Pod`).
    pub kind: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Short names for kubectl (`po`).
    pub short_names: &'static [&'static str],
    /// Whether `{resource}/{name}/status` is a subresource; then a PUT or PATCH of the main
    /// resource leaves `status` alone.
    pub status_subresource: bool,
    /// Discovery categories (`all` makes `kubectl get all` include the kind).
    pub categories: &'static [&'static str],
}

impl KindInfo {
    /// `apiVersion` of the objects: `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The group-qualified resource used in Kubernetes messages: `pods`,
    /// `jobs.batch.volcano.sh`.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    /// Position of this kind in [`KINDS`]; the store indexes its maps by it.
    pub fn index(&'static self) -> usize {
        KINDS
            .iter()
            .position(|k| std::ptr::eq(k, self))
            // Every `&'static KindInfo` handed out by this module points into KINDS.
            .unwrap_or(0)
    }
}

const ALL: &[&str] = &["all"];
const NONE: &[&str] = &[];

macro_rules! kind {
    ($res:literal, $sing:literal, $group:literal, $ver:literal, $kind:literal, $ns:expr,
     [$($short:literal),*], $status:expr, $cats:expr) => {
        KindInfo {
            resource: $res,
            singular: $sing,
            group: $group,
            version: $ver,
            kind: $kind,
            namespaced: $ns,
            short_names: &[$($short),*],
            status_subresource: $status,
            categories: $cats,
        }
    };
}

/// Every served kind. The first entry of a group fixes the group's order in discovery.
pub static KINDS: &[KindInfo] = &[
    kind!("pods", "pod", "", "v1", "Pod", true, ["po"], true, ALL),
    kind!("nodes", "node", "", "v1", "Node", false, ["no"], true, NONE),
    kind!(
        "namespaces",
        "namespace",
        "",
        "v1",
        "Namespace",
        false,
        ["ns"],
        true,
        NONE
    ),
    kind!(
        "events",
        "event",
        "",
        "v1",
        "Event",
        true,
        ["ev"],
        false,
        NONE
    ),
    kind!(
        "services",
        "service",
        "",
        "v1",
        "Service",
        true,
        ["svc"],
        true,
        ALL
    ),
    kind!(
        "configmaps",
        "configmap",
        "",
        "v1",
        "ConfigMap",
        true,
        ["cm"],
        false,
        NONE
    ),
    kind!(
        "secrets",
        "secret",
        "",
        "v1",
        "Secret",
        true,
        [],
        false,
        NONE
    ),
    kind!(
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        "",
        "v1",
        "PersistentVolumeClaim",
        true,
        ["pvc"],
        true,
        NONE
    ),
    kind!(
        "persistentvolumes",
        "persistentvolume",
        "",
        "v1",
        "PersistentVolume",
        false,
        ["pv"],
        true,
        NONE
    ),
    kind!(
        "serviceaccounts",
        "serviceaccount",
        "",
        "v1",
        "ServiceAccount",
        true,
        ["sa"],
        false,
        NONE
    ),
    kind!(
        "events",
        "event",
        "events.k8s.io",
        "v1",
        "Event",
        true,
        ["ev"],
        false,
        NONE
    ),
    kind!(
        "leases",
        "lease",
        "coordination.k8s.io",
        "v1",
        "Lease",
        true,
        [],
        false,
        NONE
    ),
    kind!(
        "priorityclasses",
        "priorityclass",
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        false,
        ["pc"],
        false,
        NONE
    ),
    kind!(
        "networkpolicies",
        "networkpolicy",
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        true,
        ["netpol"],
        false,
        NONE
    ),
    kind!(
        "storageclasses",
        "storageclass",
        "storage.k8s.io",
        "v1",
        "StorageClass",
        false,
        ["sc"],
        false,
        NONE
    ),
    kind!(
        "csinodes",
        "csinode",
        "storage.k8s.io",
        "v1",
        "CSINode",
        false,
        [],
        false,
        NONE
    ),
    kind!(
        "jobs",
        "job",
        "batch.volcano.sh",
        "v1alpha1",
        "Job",
        true,
        ["vcjob", "vj"],
        true,
        ALL
    ),
    kind!(
        "podgroups",
        "podgroup",
        "scheduling.volcano.sh",
        "v1beta1",
        "PodGroup",
        true,
        ["pg", "podgroup-v1beta1"],
        // Volcano's PodGroup CRD has no status subresource: status is written on the object.
        false,
        NONE
    ),
    kind!(
        "queues",
        "queue",
        "scheduling.volcano.sh",
        "v1beta1",
        "Queue",
        false,
        ["q", "queue-v1beta1"],
        true,
        NONE
    ),
    kind!(
        "commands",
        "command",
        "bus.volcano.sh",
        "v1alpha1",
        "Command",
        true,
        [],
        false,
        NONE
    ),
    kind!(
        "customresourcedefinitions",
        "customresourcedefinition",
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        false,
        ["crd", "crds"],
        true,
        NONE
    ),
    // Workloads whose annotations size their pods' PodGroups. Served as objects only: no
    // controller here makes their pods.
    kind!(
        "replicasets",
        "replicaset",
        "apps",
        "v1",
        "ReplicaSet",
        true,
        ["rs"],
        true,
        ALL
    ),
    kind!(
        "statefulsets",
        "statefulset",
        "apps",
        "v1",
        "StatefulSet",
        true,
        ["sts"],
        true,
        ALL
    ),
    kind!(
        "deployments",
        "deployment",
        "apps",
        "v1",
        "Deployment",
        true,
        ["deploy"],
        true,
        ALL
    ), // Volcano CronJobs: the controller-manager creates their Jobs.
    kind!(
        "cronjobs",
        "cronjob",
        "batch.volcano.sh",
        "v1alpha1",
        "CronJob",
        true,
        ["cronvcjob", "cronvj"],
        true,
        NONE
    ),
    kind!(
        "jobflows",
        "jobflow",
        "flow.volcano.sh",
        "v1alpha1",
        "JobFlow",
        true,
        ["jf"],
        true,
        NONE
    ),
    kind!(
        "jobtemplates",
        "jobtemplate",
        "flow.volcano.sh",
        "v1alpha1",
        "JobTemplate",
        true,
        ["jt"],
        true,
        NONE
    ),
    kind!(
        "hypernodes",
        "hypernode",
        "topology.volcano.sh",
        "v1alpha1",
        "HyperNode",
        false,
        ["hn"],
        true,
        NONE
    ),
];

/// The kind served at `group`/`version` under `resource`.
pub fn lookup(group: &str, version: &str, resource: &str) -> Option<&'static KindInfo> {
    KINDS
        .iter()
        .find(|k| k.group == group && k.version == version && k.resource == resource)
}

/// Resolves a resource written as `pods`, `jobs.batch.volcano.sh` or `events.events.k8s.io`.
///
/// A bare plural means the core group if the core group has it, otherwise the only group that
/// does (`jobs`, `queues`); that is how kubectl resolves names too.
pub fn find(resource: &str) -> Option<&'static KindInfo> {
    if let Some(k) = KINDS
        .iter()
        .find(|k| k.group.is_empty() && k.resource == resource)
    {
        return Some(k);
    }
    if let Some(k) = KINDS.iter().find(|k| k.qualified() == resource) {
        return Some(k);
    }
    let mut matching = KINDS.iter().filter(|k| k.resource == resource);
    match (matching.next(), matching.next()) {
        (Some(k), None) => Some(k),
        _ => None,
    }
}

/// The kind for an object's `apiVersion` and `kind`.
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static KindInfo> {
    KINDS
        .iter()
        .find(|k| k.kind == kind && k.api_version() == api_version)
}

/// The served groups other than core, in table order, each once.
pub fn groups() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for k in KINDS.iter().filter(|k| !k.group.is_empty()) {
        if !out.iter().any(|(g, _)| *g == k.group) {
            out.push((k.group, k.version));
        }
    }
    out
}

/// The core `pods` kind, the one with subresources beyond `status`.
pub fn pods() -> &'static KindInfo {
    &KINDS[0]
}

/// The `namespaces` kind.
pub fn namespaces() -> &'static KindInfo {
    &KINDS[2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_resolves_core_first_then_unique_groups() {
        assert_eq!(find("events").map(|k| k.group), Some(""));
        assert_eq!(
            find("events.events.k8s.io").map(|k| k.group),
            Some("events.k8s.io")
        );
        assert_eq!(find("jobs").map(|k| k.group), Some("batch.volcano.sh"));
        assert_eq!(find("jobs.batch.volcano.sh").map(|k| k.kind), Some("Job"));
        assert!(find("daemonsets").is_none());
    }

    #[test]
    fn storage_kinds_are_served_where_kube_apiserver_serves_them() {
        let pv = find("persistentvolumes").map(|k| (k.api_version(), k.namespaced));
        assert_eq!(pv, Some(("v1".to_string(), false)));
        let pvc = find("persistentvolumeclaims").map(|k| (k.api_version(), k.namespaced));
        assert_eq!(pvc, Some(("v1".to_string(), true)));
        for resource in ["storageclasses", "csinodes"] {
            let k = find(resource).map(|k| (k.api_version(), k.namespaced));
            assert_eq!(
                k,
                Some(("storage.k8s.io/v1".to_string(), false)),
                "{resource}"
            );
        }
        assert_eq!(
            by_kind("v1", "Namespace").map(|k| k.namespaced),
            Some(false)
        );
        assert_eq!(
            find("persistentvolumes").map(|k| k.status_subresource),
            Some(true)
        );
        assert_eq!(
            find("storageclasses").map(|k| k.short_names),
            Some(&["sc"][..])
        );
    }

    #[test]
    fn workloads_are_served_in_the_apps_group_with_kubectls_short_names() {
        for (resource, kind, short) in [
            ("replicasets", "ReplicaSet", "rs"),
            ("statefulsets", "StatefulSet", "sts"),
            ("deployments", "Deployment", "deploy"),
        ] {
            let k = find(resource).map(|k| (k.api_version(), k.kind, k.namespaced, k.short_names));
            assert_eq!(
                k,
                Some(("apps/v1".to_string(), kind, true, &[short][..])),
                "{resource}"
            );
            assert_eq!(by_kind("apps/v1", kind).map(|k| k.resource), Some(resource));
        }
    }

    #[test]
    fn fixed_positions_are_right() {
        assert_eq!(pods().resource, "pods");
        assert_eq!(namespaces().resource, "namespaces");
        assert_eq!(find("queues").map(|k| k.index()), Some(18));
    }

    #[test]
    fn groups_are_listed_once() {
        let groups = groups();
        assert_eq!(
            groups
                .iter()
                .filter(|(g, _)| *g == "scheduling.volcano.sh")
                .count(),
            1
        );
        assert_eq!(groups.first(), Some(&("events.k8s.io", "v1")));
    }
}
