//! Why a task fits on no node: a histogram of per-node reasons, with the numbers a person needs
//! to act (how much was asked, the most any node had free).

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::resource::{Dims, Resource};

/// A reason a node rejected a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitReason {
    /// Human text, e.g. `node(s) had untolerated taint {gpu: reserved}`; borrowed when fixed,
    /// so rejecting a node allocates nothing.
    pub reason: Cow<'static, str>,
    /// Whether preemption cannot help on this node (Kubernetes' UnschedulableAndUnresolvable).
    pub unresolvable: bool,
    /// Whether the answer depends on where other pods are, so a later placement or an undone
    /// one may change it: no predicate cache may keep it.
    pub depends_on_pods: bool,
}

impl FitReason {
    /// A reason preemption might resolve.
    pub fn resolvable(reason: impl Into<Cow<'static, str>>) -> Self {
        FitReason {
            reason: reason.into(),
            unresolvable: false,
            depends_on_pods: false,
        }
    }

    /// A reason preemption cannot resolve.
    pub fn unresolvable(reason: impl Into<Cow<'static, str>>) -> Self {
        FitReason {
            reason: reason.into(),
            unresolvable: true,
            depends_on_pods: false,
        }
    }

    /// The same reason, marked as depending on where other pods are (inter-pod affinity,
    /// topology spread, host ports, volume limits).
    pub fn depending_on_pods(mut self) -> Self {
        self.depends_on_pods = true;
        self
    }
}

/// The reasons one task fits on no node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FitErrors {
    /// Nodes considered.
    pub total_nodes: usize,
    /// Reason → number of nodes.
    pub reasons: BTreeMap<String, u32>,
    /// Resource name → (asked, largest free on any node), for `Insufficient` reasons.
    pub insufficient: BTreeMap<String, (i64, i64)>,
    /// A reason that applies to the task rather than to nodes.
    pub error: Option<String>,
}

impl FitErrors {
    /// An empty record over `total_nodes` nodes.
    pub fn new(total_nodes: usize) -> Self {
        FitErrors {
            total_nodes,
            ..Default::default()
        }
    }

    /// A task-level reason (no node was even considered).
    pub fn task_error(total_nodes: usize, error: impl Into<String>) -> Self {
        FitErrors {
            total_nodes,
            error: Some(error.into()),
            ..Default::default()
        }
    }

    /// Records one node's reason.
    pub fn add(&mut self, reason: &str) {
        // Most nodes repeat a reason already seen: count it without copying the text.
        match self.reasons.get_mut(reason) {
            Some(n) => *n += 1,
            None => {
                self.reasons.insert(reason.to_string(), 1);
            }
        }
    }

    /// Records that a node lacked resources on the dimensions `short`.
    pub fn add_insufficient(
        &mut self,
        dims: &Dims,
        req: &Resource,
        free: &Resource,
        short: impl Iterator<Item = usize>,
    ) {
        for d in short {
            let name = dims.name(d).to_string();
            let entry = self
                .insufficient
                .entry(name.clone())
                .or_insert((req.get(d), i64::MIN));
            entry.1 = entry.1.max(free.get(d));
            self.add(&format!("Insufficient {name}"));
        }
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.reasons.is_empty() && self.error.is_none()
    }

    /// `0/12 nodes are available: 8 Insufficient nvidia.com/gpu (task asks 4, largest free 2),
    /// 4 node(s) had untolerated taint {gpu: reserved}`.
    pub fn message(&self, dims: &Dims) -> String {
        if let Some(err) = &self.error {
            return err.clone();
        }
        let head = format!("0/{} nodes are available", self.total_nodes);
        if self.reasons.is_empty() {
            return head;
        }
        let mut parts: Vec<String> = self
            .reasons
            .iter()
            .map(|(reason, n)| {
                let detail = reason
                    .strip_prefix("Insufficient ")
                    .and_then(|name| self.insufficient.get(name).map(|d| (name, d)))
                    .map(|(name, (asked, free))| {
                        let i = dims.index(name).unwrap_or(usize::MAX);
                        format!(
                            " (task asks {}, largest free {})",
                            dims.format(i, *asked),
                            dims.format(i, (*free).max(0))
                        )
                    })
                    .unwrap_or_default();
                format!("{n} {reason}{detail}")
            })
            .collect();
        // Volcano sorts the histogram lines as strings; keep that order for familiarity.
        parts.sort();
        format!("{head}: {}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_resource_amounts_and_counts() {
        let dims = Dims::new(["nvidia.com/gpu"]);
        let mut fe = FitErrors::new(12);
        let req = dims.resource([("nvidia.com/gpu", 4000)]);
        for free in [0, 2000, 1000, 0, 0, 0, 0, 0] {
            let f = dims.resource([("nvidia.com/gpu", free)]);
            let short: Vec<usize> = req.insufficient(&f).collect();
            fe.add_insufficient(&dims, &req, &f, short.into_iter());
        }
        for _ in 0..4 {
            fe.add("node(s) had untolerated taint {gpu: reserved}");
        }
        assert_eq!(
            fe.message(&dims),
            "0/12 nodes are available: 4 node(s) had untolerated taint {gpu: reserved}, \
             8 Insufficient nvidia.com/gpu (task asks 4, largest free 2)"
        );
    }
}
