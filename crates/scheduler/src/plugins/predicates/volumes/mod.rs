//! The volume filters, in kube-scheduler's order: NodeVolumeLimits (CSI attach limits),
//! VolumeBinding (bound volumes' node affinity, claims still to bind) and VolumeZone; and the
//! claim bindings the session's placements assume, handed to the session's decisions.
//!
//! A pod without claims costs one look at its volume list per node.

mod binding;
mod claims;
mod limits;
mod zone;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use super::Filter;
use crate::fit::FitReason;
use crate::model::{NodeId, Snapshot, TaskId, TaskStatus};
use binding::Assumed;
use claims::{PodVolumes, pod_volumes, uses_claims};
use limits::Attachments;

/// Which volume filters are on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Enabled {
    /// NodeVolumeLimits.
    pub limits: bool,
    /// VolumeBinding.
    pub binding: bool,
    /// VolumeZone.
    pub zone: bool,
}

impl Enabled {
    /// Whether any volume filter is on.
    pub fn any(self) -> bool {
        self.limits || self.binding || self.zone
    }
}

/// The volume filters with their session state.
pub(super) struct Volumes {
    enabled: Enabled,
    /// Each task's volumes, read once from the catalog (which a session does not change).
    pods: RefCell<HashMap<TaskId, Arc<PodVolumes>>>,
    /// Claim bindings the session's placements assumed.
    assumed: Assumed,
    /// Volumes attached per node; `None` when no CSINode limits any driver.
    attachments: Option<Attachments>,
}

impl Volumes {
    /// Builds the enabled filters over the snapshot: counts the CSI volumes of the pods on
    /// each node when some node limits them.
    pub(super) fn new(enabled: Enabled, s: &Snapshot) -> Self {
        let mut v = Volumes {
            enabled,
            pods: RefCell::new(HashMap::new()),
            assumed: Assumed::default(),
            attachments: None,
        };
        if enabled.limits && s.cluster.storage.has_attach_limits() {
            let mut a = Attachments::default();
            for (i, task) in s.tasks.iter().enumerate() {
                let on_node = !matches!(task.status, TaskStatus::Succeeded | TaskStatus::Failed);
                if let (Some(n), true) = (task.node, on_node)
                    && uses_claims(&task.pod)
                {
                    let t = TaskId(i as u32);
                    a.add(t, n, &v.volumes_of(s, t).attachable);
                }
            }
            v.attachments = Some(a);
        }
        v
    }

    /// Task `t`'s volumes.
    fn volumes_of(&self, s: &Snapshot, t: TaskId) -> Arc<PodVolumes> {
        if let Some(v) = self.pods.borrow().get(&t) {
            return v.clone();
        }
        let v = Arc::new(pod_volumes(
            &s.cluster.storage,
            &s.task(t).pod,
            self.enabled,
        ));
        self.pods.borrow_mut().insert(t, v.clone());
        v
    }
}

impl Filter for Volumes {
    fn pre_filter(&self, s: &Snapshot, t: TaskId) -> Result<(), FitReason> {
        if !uses_claims(&s.task(t).pod) {
            return Ok(());
        }
        match &self.volumes_of(s, t).pre {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn concerns(&self, s: &Snapshot, t: TaskId) -> bool {
        uses_claims(&s.task(t).pod)
    }

    fn filter(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Result<(), FitReason> {
        if !uses_claims(&s.task(t).pod) {
            return Ok(());
        }
        let vols = self.volumes_of(s, t);
        if let Some(e) = &vols.pre {
            return Err(e.clone());
        }
        if let Some(a) = &self.attachments {
            a.check(s, n, &vols.attachable)?;
        }
        if self.enabled.binding {
            self.assumed.check(s, &vols, n)?;
        }
        if self.enabled.zone {
            zone::check(&s.cluster.storage, &vols.named, &s.node(n).node)?;
        }
        Ok(())
    }

    fn on_allocate(&mut self, s: &Snapshot, t: TaskId) {
        let task = s.task(t);
        let Some(n) = task.node else {
            return;
        };
        if !uses_claims(&task.pod) {
            return;
        }
        let vols = self.volumes_of(s, t);
        if self.enabled.binding {
            self.assumed.assume(s, &vols, t, n);
        }
        if let Some(a) = &mut self.attachments {
            a.add(t, n, &vols.attachable);
        }
    }

    fn on_deallocate(&mut self, s: &Snapshot, t: TaskId) {
        if !uses_claims(&s.task(t).pod) {
            return;
        }
        self.assumed.release(t);
        if self.attachments.is_some() {
            let vols = self.volumes_of(s, t);
            if let Some(a) = &mut self.attachments {
                a.remove(t, &vols.attachable);
            }
        }
    }

    fn on_session_close(&mut self, s: &mut Snapshot) {
        let bindings = self.assumed.bindings(s);
        if !bindings.is_empty() {
            Arc::make_mut(&mut s.cluster).assumed_bindings = bindings;
        }
    }
}
