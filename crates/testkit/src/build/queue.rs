//! Queues: weight, capability, guarantee, priority.

use volcano_api::Objects;
use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::scheduling::{Guarantee, Queue, QueueSpec, QueueStatus, ResourceList};

use super::{AddTo, GPU, bytes, count, milli};

/// A queue: weight, capability, guarantee.
#[derive(Debug, Clone)]
pub struct QueueBuilder {
    name: String,
    spec: QueueSpec,
}

/// An open queue named `name` with weight 1 and no capability.
pub fn queue(name: &str) -> QueueBuilder {
    QueueBuilder {
        name: name.to_string(),
        spec: QueueSpec::default(),
    }
}

impl QueueBuilder {
    /// Share weight.
    pub fn weight(mut self, w: i32) -> Self {
        self.spec.weight = w;
        self
    }

    fn capability(mut self, name: &str, q: Quantity) -> Self {
        self.spec
            .capability
            .get_or_insert_with(ResourceList::new)
            .insert(name.to_string(), q);
        self
    }

    /// Capability on CPU, in milli-cores.
    pub fn capability_cpu(self, m: i64) -> Self {
        self.capability("cpu", milli(m))
    }

    /// Capability on memory, in bytes.
    pub fn capability_mem(self, b: i64) -> Self {
        self.capability("memory", bytes(b))
    }

    /// Capability on GPUs.
    pub fn capability_gpu(self, n: i64) -> Self {
        self.capability(GPU, count(n))
    }

    /// Guarantee on CPU (milli-cores) and memory (bytes): what the queue keeps whatever others
    /// want.
    pub fn guarantee(mut self, cpu_milli: i64, mem_bytes: i64) -> Self {
        let list = ResourceList::from([
            ("cpu".to_string(), milli(cpu_milli)),
            ("memory".to_string(), bytes(mem_bytes)),
        ]);
        self.spec.guarantee = Some(Guarantee {
            resource: Some(list),
        });
        self
    }

    /// Queue priority (higher first).
    pub fn priority(mut self, p: i32) -> Self {
        self.spec.priority = p;
        self
    }

    /// The Queue object, state Open.
    pub fn build(self) -> Queue {
        let mut q = Queue::new(&self.name, self.spec);
        q.status = Some(QueueStatus {
            state: "Open".to_string(),
            ..QueueStatus::default()
        });
        q
    }
}

impl AddTo for QueueBuilder {
    fn add_to(self, objs: &mut Objects) {
        objs.queues.push(self.build());
    }
}
