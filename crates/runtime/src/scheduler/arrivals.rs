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

use volcano_api::NamespacedName;
use volcano_scheduler::framework::Decisions;

use super::withhold::Withheld;

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

    /// Holds back (in `withheld`) all `d` would tell the gangs still arriving at `now`, unless
    /// it writes a new phase (news, written with all it says). `holds_phase` says whether the
    /// mirror holds a PodGroup in that phase already (written, or assumed by an earlier
    /// session).
    pub fn withhold(
        &mut self,
        d: &Decisions,
        now: Instant,
        holds_phase: impl Fn(&NamespacedName, &str) -> bool,
        withheld: &mut Withheld,
    ) {
        if self.latest.is_empty() {
            return;
        }
        let mut held = self.arriving(now);
        for u in d.pod_groups.iter().filter(|u| u.changed) {
            if !holds_phase(&u.key, &u.status.phase) {
                held.remove(&u.key);
            }
        }
        for gang in held {
            withheld.gang(gang);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::withhold::tests::{decisions, gang_of, key, told};
    use super::*;

    const GRACE: Duration = Duration::from_secs(1);

    /// Gangs `a` and `b`, both short of pods and still Inqueue; gang `a`'s status written
    /// with phase `a_phase`.
    fn two_gangs(a_phase: &str) -> Decisions {
        decisions(&[("a", a_phase), ("b", "Inqueue")])
    }

    fn hold(gangs: &mut ArrivingGangs, d: &mut Decisions, now: Instant) {
        let inqueue = |_: &NamespacedName, phase: &str| phase == "Inqueue";
        let mut withheld = Withheld::default();
        gangs.withhold(d, now, inqueue, &mut withheld);
        withheld.take_out(d, gang_of);
    }

    #[test]
    fn a_gang_whose_pods_are_still_arriving_is_not_told_it_is_short_until_they_stop() {
        let start = Instant::now();
        let mut gangs = ArrivingGangs::new(GRACE);
        gangs.pod_arrived(key("a"), true, start);

        let mut d = two_gangs("Inqueue");
        hold(&mut gangs, &mut d, start + Duration::from_millis(300));
        assert_eq!(
            told(&d),
            [
                "status b",
                "queue default",
                "condition b-0",
                "Unschedulable b",
                "FailedScheduling b-0",
                "Scheduled a-1",
            ],
            "gang a's pods are still coming: nothing tells it it is short"
        );

        let mut d = two_gangs("Inqueue");
        hold(&mut gangs, &mut d, start + GRACE);
        assert_eq!(
            told(&d).len(),
            10,
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
        let mut d = two_gangs("Running");
        hold(&mut gangs, &mut d, soon);
        assert_eq!(
            told(&d).len(),
            10,
            "a new phase is written, with the event and conditions that explain it: {:?}",
            told(&d)
        );

        gangs.pod_arrived(key("a"), false, start);
        let mut d = two_gangs("Inqueue");
        hold(&mut gangs, &mut d, soon);
        assert_eq!(told(&d).len(), 10, "the gang is whole: {:?}", told(&d));
    }
}
