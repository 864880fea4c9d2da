//! How a simulated pod's life ends: the `sim.volcano-rs.io/duration` and `fail-after`
//! annotations, where they are read from, their one duration grammar, and the outcome.
//!
//! Both simulated kubelets decide with this module: the simulator's (`volcano sim`, in
//! `volcano-sim`) and the local control plane's (`volcano up`, in `volcano-apiserver`). It
//! lives here, in the crate at the bottom of the layering, because those two crates share no
//! other dependency that could hold it: `volcano-apiserver` depends on `api` and `controllers`
//! only, and the controllers are reconcilers, while this is reading what a user wrote on an
//! object, the job this crate has for every other input. It is sans-IO: it reads annotations
//! through [`Annotated`], typed metadata or JSON objects alike, and returns durations; each
//! kubelet keeps its own clock.
//!
//! The rules, as the README gives them:
//! - each annotation is read from the pod, else from its Volcano Job, else from its PodGroup;
//! - after `duration` the pod Succeeds (exit code 0), after `fail-after` it Fails (exit code
//!   1); the earlier wins and a tie fails;
//! - with neither, a kubelet that reads commands (`volcano up`'s) ends a pod whose command is
//!   `sleep N` after N, Succeeded ([`sleep::command_sleep`]); any other pod runs until
//!   something else ends it.

pub mod duration;
pub mod sleep;

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

pub use duration::DurationError;

/// How long a pod runs once started, then it Succeeds.
pub const DURATION: &str = "sim.volcano-rs.io/duration";
/// How long a pod runs once started, then it Fails with exit code 1.
pub const FAIL_AFTER: &str = "sim.volcano-rs.io/fail-after";

/// A lifecycle annotation whose value does not parse: which annotation, and what was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("annotation {annotation}: {error}")]
pub struct AnnotationError {
    /// The annotation, [`DURATION`] or [`FAIL_AFTER`].
    pub annotation: &'static str,
    /// Why its value is refused; it holds the value.
    pub error: DurationError,
}

/// Something that carries annotations.
pub trait Annotated {
    /// The value of annotation `key`, if set.
    fn annotation(&self, key: &str) -> Option<&str>;
}

impl Annotated for ObjectMeta {
    fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }
}

/// A whole object as JSON, its annotations under `metadata.annotations`.
impl Annotated for Value {
    fn annotation(&self, key: &str) -> Option<&str> {
        self.get("metadata")?.get("annotations")?.get(key)?.as_str()
    }
}

/// How a pod's run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Succeeded, exit code 0.
    Succeed,
    /// Failed, exit code 1.
    Fail,
}

impl Outcome {
    /// The exit code of the pod's containers.
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Succeed => 0,
            Outcome::Fail => 1,
        }
    }
}

/// When a started pod ends, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ending {
    /// How long after it started.
    pub after: Duration,
    /// Succeeded or Failed.
    pub outcome: Outcome,
}

/// What decides a pod's end: its lifecycle annotations, and how long its command sleeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lifecycle {
    /// `sim.volcano-rs.io/duration`.
    pub duration: Option<Duration>,
    /// `sim.volcano-rs.io/fail-after`.
    pub fail_after: Option<Duration>,
    /// How long the pod's command sleeps, for a kubelet that reads commands.
    pub sleep: Option<Duration>,
}

impl Lifecycle {
    /// Reads each annotation from the first of `places` that sets it (the pod, then its Job,
    /// then its PodGroup); a value that does not parse is an error naming it.
    pub fn read(places: &[&dyn Annotated]) -> Result<Lifecycle, AnnotationError> {
        let first = |annotation: &'static str| {
            places
                .iter()
                .find_map(|p| p.annotation(annotation))
                .map(|text| parse(annotation, text))
                .transpose()
        };
        Ok(Lifecycle {
            duration: first(DURATION)?,
            fail_after: first(FAIL_AFTER)?,
            sleep: None,
        })
    }

    /// Reads each annotation from the first of `places` whose value for it parses: a value
    /// that does not is handed to `bad` and read as absent, so one typo does not stop a pod
    /// that something else can end.
    pub fn read_lenient(
        places: &[&dyn Annotated],
        mut bad: impl FnMut(AnnotationError),
    ) -> Lifecycle {
        let mut first = |annotation: &'static str| {
            places
                .iter()
                .filter_map(|p| p.annotation(annotation))
                .find_map(|text| parse(annotation, text).map_err(&mut bad).ok())
        };
        Lifecycle {
            duration: first(DURATION),
            fail_after: first(FAIL_AFTER),
            sleep: None,
        }
    }

    /// The same, with the pod's command line (`command` then `args` of its first container)
    /// read for `sleep N`.
    pub fn with_command<S: AsRef<str>>(self, argv: &[S]) -> Lifecycle {
        Lifecycle {
            sleep: sleep::command_sleep(argv),
            ..self
        }
    }

    /// How the pod ends: the earlier of `duration` (Succeeded) and `fail-after` (Failed; a tie
    /// fails); with neither, after its command's sleep (Succeeded); else never.
    pub fn ending(&self) -> Option<Ending> {
        let (after, outcome) = match (self.duration, self.fail_after) {
            (Some(d), Some(f)) if f <= d => (f, Outcome::Fail),
            (Some(d), _) => (d, Outcome::Succeed),
            (None, Some(f)) => (f, Outcome::Fail),
            (None, None) => (self.sleep?, Outcome::Succeed),
        };
        Some(Ending { after, outcome })
    }
}

fn parse(annotation: &'static str, text: &str) -> Result<Duration, AnnotationError> {
    duration::parse(text).map_err(|error| AnnotationError { annotation, error })
}

#[cfg(test)]
mod tests;
