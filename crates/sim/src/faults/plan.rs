//! Which faults a run injects and how often, parsed from a `key=value,...` spec such as
//! `seed=7,conflict=10%,bind-failure=5%,controller-crash=1%,node-vanish=2`.

use std::time::Duration;

use volcano_api::lifecycle::duration;

/// A probability, in parts per million (so plans compare exactly and runs repeat).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate(pub u32);

impl Rate {
    /// Parts per million in one.
    pub const ONE: u32 = 1_000_000;

    /// `5%`, `0.05` or `0`; at most one.
    pub fn parse(text: &str) -> Option<Rate> {
        let (number, scale) = match text.strip_suffix('%') {
            Some(n) => (n, 10_000.0),
            None => (text, f64::from(Rate::ONE)),
        };
        let v: f64 = number.trim().parse().ok()?;
        let ppm = (v * scale).round();
        (v.is_finite() && (0.0..=f64::from(Rate::ONE)).contains(&ppm)).then_some(Rate(ppm as u32))
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}%", f64::from(self.0) / 10_000.0)
    }
}

/// How often each fault happens. Faults fall in the first `window` of virtual time; after it
/// the cluster heals (vanished nodes return, shrunk ones get their allocatable back) and the
/// run must still bring every Job to a final phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultPlan {
    /// Seed of every random choice: the same plan and input give the same run.
    pub seed: u64,
    /// Per controller write: the controllers crash just before it and restart from a list.
    pub controller_crash: Rate,
    /// Per session: the scheduler crashes part-way through writing its decisions.
    pub scheduler_crash: Rate,
    /// Per controller write: refused with a conflict (409).
    pub conflict: Rate,
    /// Per bind: refused.
    pub bind_failure: Rate,
    /// Per PodGroup status and queue `allocated` write of the scheduler: refused.
    pub status_failure: Rate,
    /// Per watch event: delivered twice.
    pub duplicate_watch: Rate,
    /// Whether each batch of watch events arrives in random order (each object's own events
    /// stay in order, as one watch stream keeps them).
    pub reorder_watch: bool,
    /// Nodes deleted at random times in the window (their pods lost), back after it.
    pub node_vanish: u32,
    /// Nodes whose allocatable drops to half their pods' requests, restored after the window.
    pub node_shrink: u32,
    /// Pods bound straight to a random node by another scheduler, each using half the node.
    pub foreign_pods: u32,
    /// When faults stop.
    pub window: Duration,
}

impl Default for FaultPlan {
    /// Every fault at a rate that keeps a small cluster busy, over ten minutes.
    fn default() -> Self {
        FaultPlan {
            seed: 0,
            controller_crash: Rate(10_000),
            scheduler_crash: Rate(50_000),
            conflict: Rate(100_000),
            bind_failure: Rate(50_000),
            status_failure: Rate(50_000),
            duplicate_watch: Rate(100_000),
            reorder_watch: true,
            node_vanish: 2,
            node_shrink: 2,
            foreign_pods: 4,
            window: Duration::from_secs(600),
        }
    }
}

/// A fault spec that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultPlanError {
    /// An item without `=`.
    #[error("faults: `{0}` is not key=value")]
    NotKeyValue(String),
    /// A key this spec does not have.
    #[error("faults: unknown key `{0}` (keys: {KEYS})")]
    UnknownKey(String),
    /// A value of the wrong shape.
    #[error("faults: `{key}={value}`: {expected}")]
    BadValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
}

/// Every key, for error messages and `--help`.
pub const KEYS: &str = "seed, controller-crash, scheduler-crash, conflict, bind-failure, \
    status-failure, duplicate-watch, reorder-watch, node-vanish, node-shrink, foreign-pods, \
    window, none";

impl FaultPlan {
    /// A plan from `key=value,...` over the defaults; `none` first turns every fault off.
    pub fn parse(text: &str) -> Result<FaultPlan, FaultPlanError> {
        let mut plan = FaultPlan::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            if item == "none" {
                plan = FaultPlan {
                    seed: plan.seed,
                    window: plan.window,
                    ..FaultPlan::none()
                };
                continue;
            }
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| FaultPlanError::NotKeyValue(item.to_string()))?;
            let (key, value) = (key.trim(), value.trim());
            let bad = |expected| FaultPlanError::BadValue {
                key: key.to_string(),
                value: value.to_string(),
                expected,
            };
            let rate = || Rate::parse(value).ok_or_else(|| bad("a rate such as 5% or 0.05"));
            let count = || value.parse::<u32>().map_err(|_| bad("a whole number"));
            match key {
                "seed" => plan.seed = value.parse().map_err(|_| bad("a whole number"))?,
                "controller-crash" => plan.controller_crash = rate()?,
                "scheduler-crash" => plan.scheduler_crash = rate()?,
                "conflict" => plan.conflict = rate()?,
                "bind-failure" => plan.bind_failure = rate()?,
                "status-failure" => plan.status_failure = rate()?,
                "duplicate-watch" => plan.duplicate_watch = rate()?,
                "reorder-watch" => {
                    plan.reorder_watch = match value {
                        "on" | "true" => true,
                        "off" | "false" => false,
                        _ => return Err(bad("on or off")),
                    }
                }
                "node-vanish" => plan.node_vanish = count()?,
                "node-shrink" => plan.node_shrink = count()?,
                "foreign-pods" => plan.foreign_pods = count()?,
                "window" => {
                    plan.window = duration::parse(value)
                        .ok()
                        .filter(|d| !d.is_zero())
                        .ok_or_else(|| bad("a duration such as 10m"))?
                }
                _ => return Err(FaultPlanError::UnknownKey(key.to_string())),
            }
        }
        Ok(plan)
    }

    /// No fault at all (the window stays, for plans built on it).
    pub fn none() -> FaultPlan {
        FaultPlan {
            seed: 0,
            controller_crash: Rate(0),
            scheduler_crash: Rate(0),
            conflict: Rate(0),
            bind_failure: Rate(0),
            status_failure: Rate(0),
            duplicate_watch: Rate(0),
            reorder_watch: false,
            node_vanish: 0,
            node_shrink: 0,
            foreign_pods: 0,
            window: FaultPlan::default().window,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_as_percentages_or_fractions_and_never_above_one() {
        assert_eq!(Rate::parse("5%"), Some(Rate(50_000)));
        assert_eq!(Rate::parse("0.05"), Some(Rate(50_000)));
        assert_eq!(Rate::parse("100%"), Some(Rate(Rate::ONE)));
        assert_eq!(Rate::parse("0"), Some(Rate(0)));
        for bad in ["101%", "-1%", "1.5", "NaN", "inf", "five", ""] {
            assert_eq!(Rate::parse(bad), None, "{bad}");
        }
        assert_eq!(Rate(12_500).to_string(), "1.25%");
    }

    #[test]
    fn a_spec_overrides_the_defaults_key_by_key() {
        let p =
            FaultPlan::parse("seed=7, conflict=20%, reorder-watch=off, node-vanish=0, window=2m")
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.seed, 7);
        assert_eq!(p.conflict, Rate(200_000));
        assert!(!p.reorder_watch);
        assert_eq!(p.node_vanish, 0);
        assert_eq!(p.window, Duration::from_secs(120));
        assert_eq!(p.bind_failure, FaultPlan::default().bind_failure);

        let only =
            FaultPlan::parse("seed=3,none,bind-failure=50%").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            only,
            FaultPlan {
                seed: 3,
                bind_failure: Rate(500_000),
                ..FaultPlan::none()
            }
        );
    }

    #[test]
    fn a_bad_spec_names_the_key_and_what_it_should_be() {
        let e = |s: &str| {
            FaultPlan::parse(s)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(e("conflict=lots").contains("`conflict=lots`: a rate such as 5%"));
        assert!(e("crash=1%").contains("unknown key `crash`"));
        assert!(e("seed").contains("`seed` is not key=value"));
        assert!(e("window=0s").contains("a duration such as 10m"));
        assert!(e("reorder-watch=maybe").contains("on or off"));
    }
}
