//! What a session decided that is not written yet. Three rules hold parts of a session's
//! decisions back, each for its own reason (stated where it is decided: a session that is not
//! the period's tick, [`super::arrivals::ArrivingGangs`], `SchedulerRuntime::settling`); this
//! is the one place that takes what they name out of the decisions, so a PodGroup whose status
//! waits never has its events told without it, and a pod never has its `FailedScheduling`
//! event told without its condition.

use std::collections::HashSet;

use volcano_api::{NamespacedName, ObjectKind};
use volcano_scheduler::framework::{Decisions, FAILED_SCHEDULING};

/// The parts of a session's decisions held back from writing.
#[derive(Debug, Default)]
pub struct Withheld {
    /// PodGroups whose status write and events wait.
    pod_groups: HashSet<NamespacedName>,
    /// Gangs whose waiting pods are not told why they wait.
    waiting_pods_of: HashSet<NamespacedName>,
    /// No waiting pod is told why it waits, and no queue's `allocated` is written.
    until_tick: bool,
}

impl Withheld {
    /// Holds back, until the period's tick, every waiting pod's condition and
    /// `FailedScheduling` event and every queue's `allocated`.
    pub fn until_tick(&mut self) {
        self.until_tick = true;
    }

    /// Holds back PodGroup `key`'s status write and its events.
    pub fn pod_group(&mut self, key: NamespacedName) {
        self.pod_groups.insert(key);
    }

    /// Holds back all a session tells gang `key`: its PodGroup's status write and events, and
    /// its waiting pods' conditions and `FailedScheduling` events.
    pub fn gang(&mut self, key: NamespacedName) {
        self.waiting_pods_of.insert(key.clone());
        self.pod_groups.insert(key);
    }

    /// Whether PodGroup `key`'s status write is held back already.
    pub fn holds_pod_group(&self, key: &NamespacedName) -> bool {
        self.pod_groups.contains(key)
    }

    /// Takes what is held back out of `d`; `gang_of` gives a pod's PodGroup, asked only of
    /// waiting pods while some gang's are held back.
    pub fn take_out(
        &self,
        d: &mut Decisions,
        gang_of: impl Fn(&NamespacedName) -> Option<NamespacedName>,
    ) {
        for u in &mut d.pod_groups {
            if self.pod_groups.contains(&u.key) {
                u.changed = false;
            }
        }
        if self.until_tick {
            for q in &mut d.queues {
                q.changed = false;
            }
        }
        let pod_held = |pod: &NamespacedName| {
            self.until_tick
                || (!self.waiting_pods_of.is_empty()
                    && gang_of(pod).is_some_and(|g| self.waiting_pods_of.contains(&g)))
        };
        d.pod_conditions.retain(|c| !pod_held(&c.key));
        d.events.retain(|e| match e.object.kind {
            ObjectKind::PodGroup => !self.pod_groups.contains(&e.object.key),
            ObjectKind::Pod => e.reason != FAILED_SCHEDULING || !pod_held(&e.object.key),
            _ => true,
        });
    }
}

#[cfg(test)]
pub(super) mod tests {
    use volcano_api::ObjectRef;
    use volcano_api::scheduling::PodGroupStatus;
    use volcano_scheduler::framework::close::{PodGroupUpdate, QueueAllocated};
    use volcano_scheduler::framework::conditions::PodUnschedulable;
    use volcano_scheduler::framework::{Event, EventType};

    use super::*;

    pub fn key(name: &str) -> NamespacedName {
        NamespacedName::new("ns", name)
    }

    /// Pod `a-0` is of gang `a`.
    pub fn gang_of(pod: &NamespacedName) -> Option<NamespacedName> {
        pod.name.split_once('-').map(|(gang, _)| key(gang))
    }

    fn event(kind: ObjectKind, name: &str, reason: &str) -> Event {
        Event {
            object: ObjectRef::new(kind, key(name)),
            type_: EventType::Warning,
            reason: reason.into(),
            message: "not enough pods".into(),
        }
    }

    /// What a session decides for `gangs` (name, phase written): each gang's PodGroup status
    /// changed, its `Unschedulable` event, and its waiting pod `<name>-0`'s condition and
    /// `FailedScheduling` event; besides, pod `a-1` bound and queue `default`'s `allocated`.
    pub fn decisions(gangs: &[(&str, &str)]) -> Decisions {
        let mut d = Decisions {
            queues: vec![QueueAllocated {
                name: "default".into(),
                state: "Open".into(),
                allocated: Default::default(),
                changed: true,
            }],
            ..Decisions::default()
        };
        for (name, phase) in gangs {
            let pod = format!("{name}-0");
            d.pod_groups.push(PodGroupUpdate {
                key: key(name),
                status: PodGroupStatus {
                    phase: (*phase).into(),
                    ..PodGroupStatus::default()
                },
                changed: true,
            });
            d.pod_conditions.push(PodUnschedulable {
                key: key(&pod),
                reason: "Unschedulable".into(),
                message: "not enough pods".into(),
            });
            d.events
                .push(event(ObjectKind::PodGroup, name, "Unschedulable"));
            d.events
                .push(event(ObjectKind::Pod, &pod, FAILED_SCHEDULING));
        }
        d.events.push(event(ObjectKind::Pod, "a-1", "Scheduled"));
        d
    }

    /// What is still to be told, object by object.
    pub fn told(d: &Decisions) -> Vec<String> {
        let groups = d
            .pod_groups
            .iter()
            .filter(|u| u.changed)
            .map(|u| format!("status {}", u.key.name));
        let queues = d
            .queues
            .iter()
            .filter(|q| q.changed)
            .map(|q| format!("queue {}", q.name));
        let conditions = d
            .pod_conditions
            .iter()
            .map(|c| format!("condition {}", c.key.name));
        let events = d
            .events
            .iter()
            .map(|e| format!("{} {}", e.reason, e.object.key.name));
        groups
            .chain(queues)
            .chain(conditions)
            .chain(events)
            .collect()
    }

    const INQUEUE: [(&str, &str); 3] = [("a", "Inqueue"), ("b", "Inqueue"), ("c", "Inqueue")];

    #[test]
    fn a_gang_held_back_keeps_its_status_events_and_pods_notices_and_nothing_else() {
        let mut withheld = Withheld::default();
        withheld.gang(key("a"));
        withheld.pod_group(key("b"));
        let mut d = decisions(&INQUEUE);
        withheld.take_out(&mut d, gang_of);
        assert_eq!(
            told(&d),
            [
                "status c",
                "queue default",
                "condition b-0",
                "condition c-0",
                "FailedScheduling b-0",
                "Unschedulable c",
                "FailedScheduling c-0",
                "Scheduled a-1",
            ],
            "gang a is told nothing of why it waits; gang b only what its pods are told"
        );
    }

    #[test]
    fn until_the_tick_no_waiting_pod_is_told_why_and_no_queue_is_written() {
        let mut withheld = Withheld::default();
        withheld.until_tick();
        let mut d = decisions(&INQUEUE);
        withheld.take_out(&mut d, |_| None);
        assert_eq!(
            told(&d),
            [
                "status a",
                "status b",
                "status c",
                "Unschedulable a",
                "Unschedulable b",
                "Unschedulable c",
                "Scheduled a-1",
            ]
        );
    }

    #[test]
    fn nothing_held_back_leaves_the_decisions_whole() {
        let mut d = decisions(&INQUEUE);
        Withheld::default().take_out(&mut d, |_| panic!("no gang is held back: none is asked"));
        assert_eq!(told(&d).len(), 14, "{:?}", told(&d));
    }
}
