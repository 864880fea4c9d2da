//! Gangs whose pods are still arriving. A Volcano Job's controller creates a gang's pods side
//! by side, and they reach the scheduler over a few hundred milliseconds on a busy API server:
//! a session in between sees the gang short of pods. Telling it so (a PodGroup condition, the
//! job controller's event echoing it, each pod's condition and event) would be contradicted a
//! moment later, at a cost of several writes per gang, which under load slowed the API server
//! for everyone. So while a gang short of pods got a pod within the grace (the schedule
//! period), what a session would tell it waits; a gang still short once its pods stop coming
//! is told at the next session, as before.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::time::Instant;

use volcano_api::{NamespacedName, ObjectKind};
use volcano_scheduler::framework::{Decisions, FAILED_SCHEDULING};

/// The gangs short of pods, each with when its latest pod arrived.
#[derive(Debug)]
pub struct ArrivingGangs {
    grace: Duration,
    latest: HashMap<NamespacedName, Instant>,
}

impl ArrivingGangs {
    /// Gangs count as arriving for `grace` after their latest pod.
    pub fn new(grace: Duration) -> Self {
        ArrivingGangs {
            grace,
            latest: HashMap::new(),
        }
    }

    /// A new pod of gang `key` was followed at `now`; `short` says whether the gang, that
    /// pod taken in, still lacks pods. A gang made whole is forgotten: what a session tells
    /// it then (room it lacks, say) is news.
    pub fn pod_arrived(&mut self, key: NamespacedName, short: bool, now: Instant) {
        if short {
            self.latest.insert(key, now);
        } else {
            self.latest.remove(&key);
        }
    }

    /// Whether any gang short of pods is remembered.
    pub fn any(&self) -> bool {
        !self.latest.is_empty()
    }

    /// The gangs whose pods are still arriving at `now`; the others are forgotten.
    fn arriving(&mut self, now: Instant) -> HashSet<NamespacedName> {
        let grace = self.grace;
        self.latest
            .retain(|_, at| now.saturating_duration_since(*at) < grace);
        self.latest.keys().cloned().collect()
    }

    /// Holds back what `d` would tell the gangs still arriving at `now`, unless it writes a
    /// new phase (news, written with all it says): their PodGroup status writes and events,
    /// and their pods' conditions and `FailedScheduling` events. `persisted_phase` gives a
    /// PodGroup's phase as the mirror holds it (written, or assumed by an earlier session);
    /// `gang_of` a pod's PodGroup.
    pub fn hold(
        &mut self,
        d: &mut Decisions,
        now: Instant,
        persisted_phase: impl Fn(&NamespacedName) -> Option<String>,
        gang_of: impl Fn(&NamespacedName) -> Option<NamespacedName>,
    ) {
        if self.latest.is_empty() {
            return;
        }
        let mut held = self.arriving(now);
        for u in d.pod_groups.iter().filter(|u| u.changed) {
            if persisted_phase(&u.key).is_none_or(|p| p != u.status.phase) {
                held.remove(&u.key);
            }
        }
        if held.is_empty() {
            return;
        }
        for u in d.pod_groups.iter_mut() {
            if held.contains(&u.key) {
                u.changed = false;
            }
        }
        let held_pod = |pod: &NamespacedName| gang_of(pod).is_some_and(|g| held.contains(&g));
        d.pod_conditions.retain(|c| !held_pod(&c.key));
        d.events.retain(|e| match e.object.kind {
            ObjectKind::PodGroup => !held.contains(&e.object.key),
            ObjectKind::Pod => e.reason != FAILED_SCHEDULING || !held_pod(&e.object.key),
            _ => true,
        });
    }
}

#[cfg(test)]
mod tests {
    use volcano_api::ObjectRef;
    use volcano_api::scheduling::PodGroupStatus;
    use volcano_scheduler::framework::close::PodGroupUpdate;
    use volcano_scheduler::framework::conditions::PodUnschedulable;
    use volcano_scheduler::framework::{Event, EventType};

    use super::*;

    const GRACE: Duration = Duration::from_secs(1);

    fn key(name: &str) -> NamespacedName {
        NamespacedName::new("ns", name)
    }

    fn event(kind: ObjectKind, name: &str, reason: &str) -> Event {
        Event {
            object: ObjectRef::new(kind, key(name)),
            type_: EventType::Warning,
            reason: reason.into(),
            message: "not enough pods".into(),
        }
    }

    /// What a session decides for gangs `a` (pod `a-0`) and `b` (pod `b-0`), both short of
    /// pods and still Inqueue, gang `a`'s condition written with a new phase when `a_phase`
    /// says so.
    fn decisions(a_phase: &str) -> Decisions {
        let update = |name: &str, phase: &str| PodGroupUpdate {
            key: key(name),
            status: PodGroupStatus {
                phase: phase.into(),
                ..PodGroupStatus::default()
            },
            changed: true,
        };
        let condition = |pod: &str| PodUnschedulable {
            key: key(pod),
            reason: "Unschedulable".into(),
            message: "not enough pods".into(),
        };
        Decisions {
            pod_groups: vec![update("a", a_phase), update("b", "Inqueue")],
            pod_conditions: vec![condition("a-0"), condition("b-0")],
            events: vec![
                event(ObjectKind::PodGroup, "a", "Unschedulable"),
                event(ObjectKind::PodGroup, "b", "Unschedulable"),
                event(ObjectKind::Pod, "a-0", FAILED_SCHEDULING),
                event(ObjectKind::Pod, "b-0", FAILED_SCHEDULING),
                event(ObjectKind::Pod, "a-1", "Scheduled"),
            ],
            ..Decisions::default()
        }
    }

    fn hold(gangs: &mut ArrivingGangs, d: &mut Decisions, now: Instant) {
        let inqueue = |_: &NamespacedName| Some("Inqueue".to_string());
        let gang_of = |pod: &NamespacedName| {
            pod.name
                .split_once('-')
                .map(|(gang, _)| NamespacedName::new("ns", gang))
        };
        gangs.hold(d, now, inqueue, gang_of);
    }

    /// What is still to be told, object by object.
    fn told(d: &Decisions) -> Vec<String> {
        let groups = d
            .pod_groups
            .iter()
            .filter(|u| u.changed)
            .map(|u| format!("status {}", u.key.name));
        let conditions = d
            .pod_conditions
            .iter()
            .map(|c| format!("condition {}", c.key.name));
        let events = d
            .events
            .iter()
            .map(|e| format!("{} {}", e.reason, e.object.key.name));
        groups.chain(conditions).chain(events).collect()
    }

    #[test]
    fn a_gang_whose_pods_are_still_arriving_is_not_told_it_is_short_until_they_stop() {
        let start = Instant::now();
        let mut gangs = ArrivingGangs::new(GRACE);
        gangs.pod_arrived(key("a"), true, start);

        let mut d = decisions("Inqueue");
        hold(&mut gangs, &mut d, start + Duration::from_millis(300));
        assert_eq!(
            told(&d),
            [
                "status b",
                "condition b-0",
                "Unschedulable b",
                "FailedScheduling b-0",
                "Scheduled a-1",
            ],
            "gang a's pods are still coming: nothing tells it it is short"
        );

        let mut d = decisions("Inqueue");
        hold(&mut gangs, &mut d, start + GRACE);
        assert_eq!(
            told(&d).len(),
            9,
            "no pod for a whole period: the gang is told: {:?}",
            told(&d)
        );
    }

    #[test]
    fn a_gang_made_whole_or_changing_phase_is_told_at_once() {
        let start = Instant::now();
        let soon = start + Duration::from_millis(100);
        let mut gangs = ArrivingGangs::new(GRACE);
        gangs.pod_arrived(key("a"), true, start);
        let mut d = decisions("Running");
        hold(&mut gangs, &mut d, soon);
        assert_eq!(
            told(&d).len(),
            9,
            "a new phase is written, with the event and conditions that explain it: {:?}",
            told(&d)
        );

        gangs.pod_arrived(key("a"), false, start);
        let mut d = decisions("Inqueue");
        hold(&mut gangs, &mut d, soon);
        assert_eq!(told(&d).len(), 9, "the gang is whole: {:?}", told(&d));
    }
}
