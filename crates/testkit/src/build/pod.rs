//! Pods, and the templates gangs and Jobs make theirs from.

use std::collections::BTreeMap;

use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{
    Container, Pod, PodSpec, PodStatus, ResourceRequirements, Toleration,
};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::keys;
use volcano_api::scheduling::ResourceList;

use super::{AddTo, GI, GPU, bytes, count, milli};

/// What a pod asks for and where it may go: requests, node selector, tolerations, priority.
/// A template with no requests makes BestEffort pods.
#[derive(Debug, Clone, Default)]
pub struct Template {
    pub(crate) cpu_milli: i64,
    pub(crate) mem_bytes: i64,
    pub(crate) gpu: i64,
    node_selector: BTreeMap<String, String>,
    tolerations: Vec<Toleration>,
    priority: Option<i32>,
}

/// An empty template: a BestEffort pod that goes anywhere.
pub fn template() -> Template {
    Template::default()
}

impl Template {
    /// CPU request in milli-cores.
    pub fn cpu_milli(mut self, m: i64) -> Self {
        self.cpu_milli = m;
        self
    }

    /// CPU request in cores.
    pub fn cpu(self, cores: i64) -> Self {
        self.cpu_milli(cores * 1000)
    }

    /// Memory request in bytes.
    pub fn mem(mut self, b: i64) -> Self {
        self.mem_bytes = b;
        self
    }

    /// Memory request in GiB.
    pub fn mem_gi(self, g: i64) -> Self {
        self.mem(g * GI)
    }

    /// GPU request.
    pub fn gpu(mut self, n: i64) -> Self {
        self.gpu = n;
        self
    }

    /// A `nodeSelector` entry.
    pub fn node_selector(mut self, key: &str, value: &str) -> Self {
        self.node_selector
            .insert(key.to_string(), value.to_string());
        self
    }

    /// Tolerates the taint `key=value` with `effect`.
    pub fn toleration(mut self, key: &str, value: &str, effect: &str) -> Self {
        self.tolerations.push(Toleration {
            key: Some(key.to_string()),
            operator: Some("Equal".to_string()),
            value: Some(value.to_string()),
            effect: Some(effect.to_string()),
            toleration_seconds: None,
        });
        self
    }

    /// `spec.priority`.
    pub fn priority(mut self, p: i32) -> Self {
        self.priority = Some(p);
        self
    }

    /// Whether pods of this template are BestEffort (request nothing).
    pub fn is_best_effort(&self) -> bool {
        self.cpu_milli == 0 && self.mem_bytes == 0 && self.gpu == 0
    }

    /// The request list of the pod's single container.
    pub fn requests(&self) -> ResourceList {
        let mut r = ResourceList::new();
        if self.cpu_milli > 0 {
            r.insert("cpu".into(), milli(self.cpu_milli));
        }
        if self.mem_bytes > 0 {
            r.insert("memory".into(), bytes(self.mem_bytes));
        }
        if self.gpu > 0 {
            r.insert(GPU.into(), count(self.gpu));
        }
        r
    }

    /// The spec of a pod made from this template: one container, for `scheduler`, bound to
    /// `node_name` if any.
    pub fn spec(&self, scheduler: &str, node_name: Option<String>) -> PodSpec {
        let requests = self.requests();
        PodSpec {
            containers: vec![Container {
                name: "main".to_string(),
                image: Some("busybox".to_string()),
                resources: Some(ResourceRequirements {
                    requests: (!requests.is_empty()).then_some(requests),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            scheduler_name: Some(scheduler.to_string()),
            node_name,
            node_selector: (!self.node_selector.is_empty()).then(|| self.node_selector.clone()),
            tolerations: (!self.tolerations.is_empty()).then(|| self.tolerations.clone()),
            priority: self.priority,
            ..Default::default()
        }
    }
}

/// A single pod, outside any gang unless `.group(..)` says otherwise: typically one already
/// bound or running on a node.
#[derive(Debug, Clone)]
pub struct PodBuilder {
    namespace: String,
    name: String,
    template: Template,
    scheduler: String,
    node: Option<String>,
    phase: String,
    group: Option<String>,
}

/// A pending pod for the volcano scheduler, with no requests yet.
pub fn pod(namespace: &str, name: &str) -> PodBuilder {
    PodBuilder {
        namespace: namespace.to_string(),
        name: name.to_string(),
        template: Template::default(),
        scheduler: keys::DEFAULT_SCHEDULER_NAME.to_string(),
        node: None,
        phase: "Pending".to_string(),
        group: None,
    }
}

impl PodBuilder {
    /// Requests and placement constraints.
    pub fn template(mut self, t: Template) -> Self {
        self.template = t;
        self
    }

    /// CPU request in milli-cores.
    pub fn cpu_milli(mut self, m: i64) -> Self {
        self.template = self.template.cpu_milli(m);
        self
    }

    /// Memory request in bytes.
    pub fn mem(mut self, b: i64) -> Self {
        self.template = self.template.mem(b);
        self
    }

    /// GPU request.
    pub fn gpu(mut self, n: i64) -> Self {
        self.template = self.template.gpu(n);
        self
    }

    /// Bound to `node` (phase stays Pending until `.running()`).
    pub fn on(mut self, node: &str) -> Self {
        self.node = Some(node.to_string());
        self
    }

    /// Phase Running.
    pub fn running(mut self) -> Self {
        self.phase = "Running".to_string();
        self
    }

    /// Scheduled by another scheduler (`schedulerName`).
    pub fn scheduler(mut self, name: &str) -> Self {
        self.scheduler = name.to_string();
        self
    }

    /// Member of the PodGroup `name` in the pod's namespace.
    pub fn group(mut self, name: &str) -> Self {
        self.group = Some(name.to_string());
        self
    }

    /// The Pod object.
    pub fn build(self) -> Pod {
        let annotations = self
            .group
            .map(|g| BTreeMap::from([(keys::GROUP_NAME.to_string(), g)]));
        Pod {
            metadata: ObjectMeta {
                namespace: Some(self.namespace.clone()),
                name: Some(self.name.clone()),
                uid: Some(format!("{}-{}", self.namespace, self.name)),
                annotations,
                ..Default::default()
            },
            spec: Some(self.template.spec(&self.scheduler, self.node)),
            status: Some(PodStatus {
                phase: Some(self.phase),
                ..Default::default()
            }),
        }
    }
}

impl AddTo for PodBuilder {
    fn add_to(self, objs: &mut Objects) {
        objs.pods.push(self.build().into());
    }
}
