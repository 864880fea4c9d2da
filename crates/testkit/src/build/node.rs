//! Nodes: allocatable resources, labels, taints.

use std::collections::BTreeMap;

use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus, Taint};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use volcano_api::scheduling::ResourceList;

use super::{AddTo, GI, GPU, bytes, count, milli};

/// A node: allocatable resources, labels, taints.
#[derive(Debug, Clone)]
pub struct NodeBuilder {
    name: String,
    cpu_milli: i64,
    mem_bytes: i64,
    gpu: i64,
    max_pods: Option<i64>,
    labels: BTreeMap<String, String>,
    taints: Vec<Taint>,
    unschedulable: bool,
}

/// A node named `name` with nothing allocatable yet (add `.cpu(..)`, `.mem_gi(..)` ...). Without
/// `.max_pods(..)` it declares no `pods` quantity, so the kubelet default of 110 applies.
pub fn node(name: &str) -> NodeBuilder {
    NodeBuilder {
        name: name.to_string(),
        cpu_milli: 0,
        mem_bytes: 0,
        gpu: 0,
        max_pods: None,
        labels: BTreeMap::new(),
        taints: Vec::new(),
        unschedulable: false,
    }
}

impl NodeBuilder {
    /// Allocatable CPU in cores.
    pub fn cpu(self, cores: i64) -> Self {
        self.cpu_milli(cores * 1000)
    }

    /// Allocatable CPU in milli-cores.
    pub fn cpu_milli(mut self, m: i64) -> Self {
        self.cpu_milli = m;
        self
    }

    /// Allocatable memory in GiB.
    pub fn mem_gi(self, g: i64) -> Self {
        self.mem(g * GI)
    }

    /// Allocatable memory in bytes.
    pub fn mem(mut self, b: i64) -> Self {
        self.mem_bytes = b;
        self
    }

    /// Allocatable GPUs (`nvidia.com/gpu`); zero declares none.
    pub fn gpu(mut self, n: i64) -> Self {
        self.gpu = n;
        self
    }

    /// The `pods` allocatable quantity.
    pub fn max_pods(mut self, n: i64) -> Self {
        self.max_pods = Some(n);
        self
    }

    /// A label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.to_string(), value.to_string());
        self
    }

    /// A taint `key=value:effect` (effect `NoSchedule`, `NoExecute` or `PreferNoSchedule`).
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        self.taints.push(Taint {
            key: key.to_string(),
            value: Some(value.to_string()),
            effect: effect.to_string(),
            time_added: None,
        });
        self
    }

    /// Marks the node unschedulable (cordoned).
    pub fn cordoned(mut self) -> Self {
        self.unschedulable = true;
        self
    }

    /// The allocatable list as the Node object carries it.
    pub fn allocatable(&self) -> ResourceList {
        let mut a = ResourceList::new();
        a.insert("cpu".into(), milli(self.cpu_milli));
        a.insert("memory".into(), bytes(self.mem_bytes));
        if self.gpu > 0 {
            a.insert(GPU.into(), count(self.gpu));
        }
        if let Some(p) = self.max_pods {
            a.insert("pods".into(), count(p));
        }
        a
    }

    /// The Node object.
    pub fn build(self) -> Node {
        let allocatable = self.allocatable();
        Node {
            metadata: ObjectMeta {
                name: Some(self.name),
                labels: (!self.labels.is_empty()).then_some(self.labels),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: (!self.taints.is_empty()).then_some(self.taints),
                unschedulable: self.unschedulable.then_some(true),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                capacity: Some(allocatable.clone()),
                allocatable: Some(allocatable),
                ..Default::default()
            }),
        }
    }
}

impl AddTo for NodeBuilder {
    fn add_to(self, objs: &mut Objects) {
        objs.nodes.push(self.build());
    }
}
