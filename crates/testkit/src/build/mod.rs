//! Builders of the objects a test cluster holds, so a test reads like the cluster it
//! describes:
//!
//! ```
//! use volcano_testkit::build::{GI, cluster, gang, node, pod, queue};
//!
//! let objs = cluster()
//!     .with(node("n1").cpu(4).mem_gi(8).gpu(2))
//!     .with(queue("q1").weight(2))
//!     .with(gang("ns", "pg1").queue("q1").min(3).pods(3, 1000, GI))
//!     .with(pod("ns", "web-0").cpu_milli(500).on("n1").running())
//!     .objects();
//! assert_eq!(objs.pods.len(), 4);
//! ```
//!
//! Each builder makes the Kubernetes or Volcano object a user would apply, through `build()`,
//! and adds itself to a [`Cluster`] (a [`volcano_api::Objects`] under construction).

mod job;
mod node;
mod pod;
mod pod_group;
mod priority_class;
mod queue;

pub use job::{JobBuilder, job};
pub use node::{NodeBuilder, node};
pub use pod::{PodBuilder, Template, pod, template};
pub use pod_group::{GangBuilder, gang, pod_group};
pub use priority_class::{PriorityClassBuilder, priority_class};
pub use queue::{QueueBuilder, queue};

use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::{NamespacedName, ObjectKind, ObjectRef, Objects};

/// One mebibyte, in bytes.
pub const MI: i64 = 1 << 20;
/// One gibibyte, in bytes.
pub const GI: i64 = 1 << 30;
/// The extended resource name used for GPUs.
pub const GPU: &str = "nvidia.com/gpu";

/// The identity of the namespaced object `namespace/name`, as decisions name it.
pub fn key(namespace: &str, name: &str) -> NamespacedName {
    NamespacedName::new(namespace, name)
}

/// The pod `namespace/name`, as events name it.
pub fn pod_ref(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new(ObjectKind::Pod, key(namespace, name))
}

/// The PodGroup `namespace/name`, as events name it.
pub fn pod_group_ref(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new(ObjectKind::PodGroup, key(namespace, name))
}

/// The Volcano Job `namespace/name`, as events name it.
pub fn job_ref(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new(ObjectKind::Job, key(namespace, name))
}

/// `m` thousandths (CPU in milli-cores).
pub(crate) fn milli(m: i64) -> Quantity {
    Quantity(format!("{m}m"))
}

/// `b` bytes.
pub(crate) fn bytes(b: i64) -> Quantity {
    Quantity(b.to_string())
}

/// `n` whole units (GPUs, pods).
pub(crate) fn count(n: i64) -> Quantity {
    Quantity(n.to_string())
}

/// Anything that can be added to a cluster under construction.
pub trait AddTo {
    /// Adds the object(s) this builder describes to `objs`.
    fn add_to(self, objs: &mut Objects);
}

/// A cluster under construction: a thin wrapper over [`Objects`].
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    objs: Objects,
}

/// An empty cluster.
pub fn cluster() -> Cluster {
    Cluster::default()
}

impl Cluster {
    /// Adds a node, queue, gang, pod, Job or priority class.
    pub fn with(mut self, item: impl AddTo) -> Self {
        item.add_to(&mut self.objs);
        self
    }

    /// Adds every item of an iterator.
    pub fn with_all<T: AddTo>(mut self, items: impl IntoIterator<Item = T>) -> Self {
        for item in items {
            item.add_to(&mut self.objs);
        }
        self
    }

    /// The objects built so far.
    pub fn objects(self) -> Objects {
        self.objs
    }
}
