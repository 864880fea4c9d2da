//! What must hold whatever a run's faults: checked on every session's decisions against the
//! objects it started from, on every event recorded, and on the objects at the end.
//!
//! The session checks read what the scheduler *decided*, before faults cut its writes: a
//! decision is wrong or right on its own, and a write that failed only removes from it.

use std::collections::HashMap;

use volcano_api::batch::job_phase;
use volcano_api::event::{Event, ObjectPath};
use volcano_api::{NamespacedName, ObjectKind, ObjectRef, Objects};
use volcano_scheduler::framework::Decisions;
use volcano_scheduler::invariants::{self, accounting::key};

/// A broken invariant: one of a session's decisions, as the scheduler's oracle names it, or
/// one of what the oracle does not see (events over a run, the run's end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A session's decisions broke an invariant of the scheduler's oracle.
    Session(invariants::Violation),
    /// The same event twice for one object with no change of the object in between.
    EventRepeated {
        /// The object.
        object: ObjectRef,
        /// Reason.
        reason: String,
        /// Message.
        message: String,
    },
    /// A Job not in a final phase at the end of the run.
    JobNotFinished {
        /// `ns/name`.
        job: String,
        /// Its phase.
        phase: String,
    },
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::Session(v) => write!(f, "{v}"),
            Violation::EventRepeated {
                object,
                reason,
                message,
            } => write!(
                f,
                "event {reason} on {} recorded twice for one transition: {message}",
                ObjectPath(object)
            ),
            Violation::JobNotFinished { job, phase } => {
                write!(
                    f,
                    "Job {job} ended the run in phase {phase}, not a final one"
                )
            }
        }
    }
}

/// The checker of one run.
#[derive(Debug, Default)]
pub struct Invariants {
    violations: Vec<Violation>,
    /// What each object looks like, as far as events are concerned, and how many times that
    /// changed: an event may repeat only after a change.
    states: HashMap<ObjectRef, (String, u64)>,
    /// The last event on each object, with the object's change count when it was recorded.
    last_event: HashMap<ObjectRef, (String, String, u64)>,
    events_seen: usize,
}

impl Invariants {
    /// A checker that has seen nothing.
    pub fn new() -> Self {
        Invariants::default()
    }

    /// What broke so far.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Checks a session's decisions against the objects it started from, with the scheduler's
    /// own oracle ([`volcano_scheduler::invariants`]).
    pub fn session(&mut self, before: &Objects, d: &Decisions) {
        self.violations.extend(
            invariants::check(before, d)
                .into_iter()
                .map(Violation::Session),
        );
    }

    /// Notes what each object looks like now, as events see it: a PodGroup's phase and newest
    /// condition (also under its Job's name, whose `PodGroupPending` events report them), a
    /// pod's incarnation. Call after every step, before [`Invariants::events`].
    pub fn observe(&mut self, objs: &Objects) {
        let mut note = |object: ObjectRef, state: String| match self.states.get_mut(&object) {
            Some((s, changes)) if *s != state => {
                *s = state;
                *changes += 1;
            }
            Some(_) => {}
            None => {
                self.states.insert(object, (state, 0));
            }
        };
        for pg in &objs.pod_groups {
            let status = pg.status.as_ref();
            let newest = status
                .and_then(|s| s.newest_true_condition())
                .map(|c| format!("{}:{}", c.type_, c.message))
                .unwrap_or_default();
            let state = format!(
                "{}|{newest}",
                status.map(|s| s.phase.as_str()).unwrap_or_default()
            );
            let pg_ref = ObjectRef::of(ObjectKind::PodGroup, &pg.metadata);
            for owner in pg.metadata.owner_references.iter().flatten() {
                if owner.kind == "Job" {
                    let job =
                        NamespacedName::new(pg_ref.key.namespace.as_str(), owner.name.as_str());
                    note(ObjectRef::new(ObjectKind::Job, job), state.clone());
                }
            }
            note(pg_ref, state);
        }
        for p in &objs.pods {
            let uid = p.metadata.uid.clone().unwrap_or_default();
            note(ObjectRef::of(ObjectKind::Pod, &p.metadata), uid);
        }
    }

    /// Checks the events recorded since the last call (`all` is every event of the run).
    pub fn events(&mut self, all: &[Event]) {
        for e in all.iter().skip(self.events_seen) {
            let changes = self.states.get(&e.object).map_or(0, |(_, c)| *c);
            let repeat = self
                .last_event
                .get(&e.object)
                .is_some_and(|(r, m, c)| *r == e.reason && *m == e.message && *c == changes);
            if repeat {
                self.violations.push(Violation::EventRepeated {
                    object: e.object.clone(),
                    reason: e.reason.clone(),
                    message: e.message.clone(),
                });
            }
            self.last_event.insert(
                e.object.clone(),
                (e.reason.clone(), e.message.clone(), changes),
            );
        }
        self.events_seen = all.len();
    }

    /// Checks the objects at the end of a run: every Job in a final phase.
    pub fn end(&mut self, objs: &Objects) {
        for j in &objs.jobs {
            let phase = j
                .status
                .as_ref()
                .map(|s| s.state.phase.as_str())
                .unwrap_or_default();
            if !(job_phase::is_finished(phase) || phase == job_phase::ABORTED) {
                self.violations.push(Violation::JobNotFinished {
                    job: key(&j.metadata),
                    phase: phase.to_string(),
                });
            }
        }
    }
}
