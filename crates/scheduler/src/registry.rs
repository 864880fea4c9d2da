//! The registry: the one module that knows every plugin and action volcano-rs implements,
//! turning the kinds the configuration was parsed into ([`PluginKind`], [`ActionKind`]) into
//! their code.
//!
//! It sits above the framework, the plugins and the actions, so none of those needs another's
//! names: the framework is handed its plugins when a session opens, and actions reach the
//! plugins only through the framework's extension points. Opening a session and running its
//! actions are therefore defined here, as methods of [`Session`].

use crate::actions;
use crate::conf::{ActionKind, PluginKind, PluginOption, SchedulerConf};
use crate::framework::{Plugin, Session, SessionOptions};
use crate::model::Snapshot;
use crate::plugins;

/// Builds the plugin `opt` configures, with its arguments, over the session's snapshot.
pub fn build_plugin(opt: &PluginOption, s: &Snapshot) -> Box<dyn Plugin> {
    let args = &opt.arguments;
    match opt.name {
        PluginKind::Priority => Box::new(plugins::Priority),
        PluginKind::Gang => Box::new(plugins::Gang),
        PluginKind::Conformance => Box::new(plugins::Conformance),
        PluginKind::Drf => Box::new(plugins::Drf::new(s)),
        PluginKind::Proportion => Box::new(plugins::Proportion::new(s)),
        PluginKind::Capacity => Box::new(plugins::Capacity::new(opt, s)),
        PluginKind::Predicates => Box::new(plugins::Predicates::new(args)),
        PluginKind::NodeOrder => Box::new(plugins::NodeOrder::new(args)),
        PluginKind::Binpack => Box::new(plugins::Binpack::new(args, s)),
        PluginKind::Overcommit => Box::new(plugins::Overcommit::new(args, s)),
        PluginKind::DeviceShare => Box::new(plugins::DeviceShare::new(args)),
        PluginKind::Fgd => Box::new(plugins::Fgd::new(args, s)),
    }
}

/// Runs one action over the session.
pub fn run_action(kind: ActionKind, ssn: &mut Session) {
    actions::run(&kind, ssn);
}

/// Watches each action of a session run, so a runtime can time them: the scheduler reads no
/// clock. Any `FnMut(ActionKind, &mut dyn FnMut())` is one.
pub trait ActionObserver {
    /// Runs the action `action` by calling `run` exactly once.
    fn around(&mut self, action: ActionKind, run: &mut dyn FnMut());
}

impl<F: FnMut(ActionKind, &mut dyn FnMut())> ActionObserver for F {
    fn around(&mut self, action: ActionKind, run: &mut dyn FnMut()) {
        self(action, run)
    }
}

impl Session {
    /// Opens a session: builds every configured plugin over the snapshot.
    pub fn open(snap: Snapshot, conf: &SchedulerConf, opts: SessionOptions) -> Session {
        Self::open_observed(snap, conf, opts, &mut |_, build| build())
    }

    /// [`Session::open`], building each plugin inside `around(plugin name, build)`, so the
    /// caller can time it (the scheduler reads no clock).
    pub fn open_observed(
        snap: Snapshot,
        conf: &SchedulerConf,
        opts: SessionOptions,
        around: &mut dyn FnMut(&str, &mut dyn FnMut()),
    ) -> Session {
        Session::with_plugins(snap, conf, opts, &mut |opt, snap| {
            let mut built = None;
            around(opt.name.name(), &mut || {
                built = Some(build_plugin(opt, snap))
            });
            built
        })
    }

    /// Runs the configured actions in order.
    pub fn run_actions(&mut self) {
        self.run_actions_observed(&mut |_, run: &mut dyn FnMut()| run());
    }

    /// [`Session::run_actions`], running each action inside `observer.around(action, run)`.
    pub fn run_actions_observed(&mut self, observer: &mut dyn ActionObserver) {
        let actions = self.conf.actions.clone();
        for kind in actions {
            observer.around(kind, &mut || run_action(kind, self));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{CacheOptions, build_snapshot};

    fn empty_snapshot() -> Snapshot {
        build_snapshot(&volcano_api::Objects::default(), &CacheOptions::default()).unwrap()
    }

    #[test]
    fn plugins_are_built_and_actions_run_inside_their_observers_in_order() {
        let text = "actions: enqueue, allocate, backfill, preempt, reclaim\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n- plugins:\n  - name: drf\n";
        let (conf, _) = SchedulerConf::parse(text).unwrap();
        let mut built = Vec::new();
        let mut ssn = Session::open_observed(
            empty_snapshot(),
            &conf,
            SessionOptions::default(),
            &mut |name, build| {
                build();
                built.push(name.to_string());
            },
        );
        assert_eq!(built, ["priority", "gang", "drf"]);
        let mut ran = Vec::new();
        ssn.run_actions_observed(&mut |action: ActionKind, run: &mut dyn FnMut()| {
            run();
            ran.push(action);
        });
        assert_eq!(ran, ActionKind::ALL);
        assert_eq!(ssn.action, Some(ActionKind::Reclaim));
    }
}
