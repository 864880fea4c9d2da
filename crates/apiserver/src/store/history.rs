//! The bounded history of changes that watches resume from.
//!
//! Every write is one [`Change`] with the resourceVersion it produced. The history keeps the
//! newest `capacity` of them; a watch from a resourceVersion older than what the history still
//! covers gets 410 Gone and must relist, exactly as against a compacted etcd.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::Value;

use crate::error::ApiError;
use crate::kinds::KindInfo;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    /// Created.
    Added,
    /// Updated or patched.
    Modified,
    /// Deleted.
    Deleted,
}

impl ChangeType {
    /// The watch event type: `ADDED`, `MODIFIED`, `DELETED`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeType::Added => "ADDED",
            ChangeType::Modified => "MODIFIED",
            ChangeType::Deleted => "DELETED",
        }
    }
}

/// One write to the store.
#[derive(Debug, Clone)]
pub struct Change {
    /// The resourceVersion the write produced.
    pub rv: u64,
    /// The kind of the object.
    pub kind: &'static KindInfo,
    /// What happened.
    pub change: ChangeType,
    /// The object after the write; for a deletion, the last state stamped with `rv`.
    pub object: Arc<Value>,
    /// The object before the write, for modifications (watches with selectors need it to tell
    /// an object that left the selection from one that never was in it).
    pub old: Option<Arc<Value>>,
}

impl Change {
    /// `metadata.namespace` of the object, empty for cluster-scoped ones.
    pub fn namespace(&self) -> &str {
        self.object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// The newest changes, oldest first.
#[derive(Debug)]
pub struct History {
    changes: VecDeque<Arc<Change>>,
    capacity: usize,
    /// resourceVersion of the newest change dropped; watches from before it are expired.
    compacted: u64,
}

impl History {
    /// An empty history keeping at most `capacity` changes (at least one).
    pub fn new(capacity: usize) -> Self {
        History {
            changes: VecDeque::new(),
            capacity: capacity.max(1),
            compacted: 0,
        }
    }

    /// Records a change, dropping the oldest when full.
    pub fn push(&mut self, change: Arc<Change>) {
        if self.changes.len() == self.capacity
            && let Some(old) = self.changes.pop_front()
        {
            self.compacted = old.rv;
        }
        self.changes.push_back(change);
    }

    /// Every change after `rv`, or Gone when some of them were already dropped.
    pub fn since(&self, rv: u64) -> Result<Vec<Arc<Change>>, ApiError> {
        if rv < self.compacted {
            let oldest = self.changes.front().map_or(self.compacted, |c| c.rv);
            return Err(ApiError::expired(rv, oldest));
        }
        // Changes are in rv order, so skip the prefix at or before rv.
        let start = self.changes.partition_point(|c| c.rv <= rv);
        Ok(self.changes.iter().skip(start).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;

    fn change(rv: u64) -> Arc<Change> {
        Arc::new(Change {
            rv,
            kind: kinds::pods(),
            change: ChangeType::Added,
            object: Arc::new(Value::Null),
            old: None,
        })
    }

    #[test]
    fn keeps_the_newest_and_expires_the_rest() {
        let mut h = History::new(3);
        for rv in 1..=5 {
            h.push(change(rv));
        }
        assert_eq!(
            h.since(2).unwrap().iter().map(|c| c.rv).collect::<Vec<_>>(),
            vec![3, 4, 5]
        );
        assert_eq!(h.since(5).unwrap().len(), 0);
        assert_eq!(h.since(9).unwrap().len(), 0);
        let gone = h.since(1).unwrap_err();
        assert_eq!(gone.code(), 410);
        assert_eq!(gone.message, "too old resource version: 1 (3)");
    }
}
