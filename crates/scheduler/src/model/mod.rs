//! The snapshot model: jobs, tasks, nodes and queues of one scheduling session, in arenas
//! addressed by typed indices.
//!
//! All changes to task status and node accounting go through [`Snapshot`]'s methods, which keep
//! every derived counter (job status counts, node idle/used/releasing/pipelined) consistent.

mod cluster_objects;
mod domain_ledger;
pub mod gpu;
mod job;
mod node;
mod node_set;
pub mod node_table;
mod queue;
mod snapshot;
mod snapshot_state;
pub mod storage;
mod sub_group;
mod task;
pub mod topology;

pub use cluster_objects::{ClusterObjects, NAMESPACE_NAME_LABEL};
pub use domain_ledger::{DomainLedger, DomainTotals};
pub use job::{JobInfo, PgPhase};
pub use node::NodeInfo;
pub use node_set::NodeSet;
pub use queue::{QueueInfo, QueueState};
pub use snapshot::{NodeRequest, Snapshot};
pub use sub_group::{SubGroup, SubGroups, occupied};
pub use task::{TaskInfo, TaskStatus};
pub use topology::{DomainId, Topology};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
            /// The arena index.
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// Index of a task (pod) in the snapshot.
    TaskId
);
id_type!(
    /// Index of a job (PodGroup) in the snapshot.
    JobId
);
id_type!(
    /// Index of a node in the snapshot.
    NodeId
);
id_type!(
    /// Index of a queue in the snapshot.
    QueueId
);
