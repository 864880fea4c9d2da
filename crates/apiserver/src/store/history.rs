//! The bounded history of revisions that watches resume from.
//!
//! Every write makes one [`Revision`]: the object as the write left it, at the resourceVersion
//! the write produced, as etcd keeps a revision of a key. The history keeps the newest
//! `capacity` of them; a watch from a resourceVersion older than what the history still covers
//! gets 410 Gone and must relist, exactly as against a compacted etcd.
//!
//! This is the API server's side of a watch, in JSON and for every served kind. A client's
//! typed store (`volcano_api::store::ObjectStore`, behind the kube runtime's reflectors) sees
//! these revisions only as the watch events they become on the wire, each turned into a
//! `volcano_api::WatchEvent` when applied there.

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

/// One write to the store: the object at the resourceVersion the write produced.
#[derive(Debug, Clone)]
pub struct Revision {
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

impl Revision {
    /// `metadata.namespace` of the object, empty for cluster-scoped ones.
    pub fn namespace(&self) -> &str {
        self.object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// The newest revisions, oldest first.
#[derive(Debug)]
pub struct History {
    revisions: VecDeque<Arc<Revision>>,
    capacity: usize,
    /// resourceVersion of the newest revision dropped; watches from before it are expired.
    compacted: u64,
}

impl History {
    /// An empty history keeping at most `capacity` revisions (at least one).
    pub fn new(capacity: usize) -> Self {
        History {
            revisions: VecDeque::new(),
            capacity: capacity.max(1),
            compacted: 0,
        }
    }

    /// Records a revision, dropping the oldest when full.
    pub fn push(&mut self, revision: Arc<Revision>) {
        if self.revisions.len() == self.capacity
            && let Some(old) = self.revisions.pop_front()
        {
            self.compacted = old.rv;
        }
        self.revisions.push_back(revision);
    }

    /// Every revision after `rv`, or Gone when some of them were already dropped.
    pub fn since(&self, rv: u64) -> Result<Vec<Arc<Revision>>, ApiError> {
        if rv < self.compacted {
            let oldest = self.revisions.front().map_or(self.compacted, |r| r.rv);
            return Err(ApiError::expired(rv, oldest));
        }
        // Revisions are in rv order, so skip the prefix at or before rv.
        let start = self.revisions.partition_point(|r| r.rv <= rv);
        Ok(self.revisions.iter().skip(start).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;

    fn revision(rv: u64) -> Arc<Revision> {
        Arc::new(Revision {
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
            h.push(revision(rv));
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
