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
use crate::framework::{Plugin, Session, SessionObserver, SessionOptions, Unobserved};
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
        PluginKind::Predicates => Box::new(plugins::Predicates::new(args, s)),
        PluginKind::NodeOrder => Box::new(plugins::NodeOrder::new(args, s)),
        PluginKind::Binpack => Box::new(plugins::Binpack::new(args, s)),
        PluginKind::Overcommit => Box::new(plugins::Overcommit::new(args, s)),
        PluginKind::DeviceShare => Box::new(plugins::DeviceShare::new(args)),
        PluginKind::Fgd => Box::new(plugins::Fgd::new(args, s)),
        PluginKind::NetworkTopologyAware => Box::new(plugins::NetworkTopologyAware::new(args, s)),
    }
}

/// Runs one action over the session.
pub fn run_action(kind: ActionKind, ssn: &mut Session) {
    actions::run(&kind, ssn);
}

impl Session {
    /// Opens a session: builds every configured plugin over the snapshot.
    pub fn open(snap: Snapshot, conf: &SchedulerConf, opts: SessionOptions) -> Session {
        Self::open_observed(snap, conf, opts, &mut Unobserved)
    }

    /// [`Session::open`], building each plugin inside `observer.plugin_open`, so the caller
    /// can time it (the scheduler reads no clock).
    pub fn open_observed(
        snap: Snapshot,
        conf: &SchedulerConf,
        opts: SessionOptions,
        observer: &mut dyn SessionObserver,
    ) -> Session {
        Session::with_plugins(snap, conf, opts, &mut |opt, snap| {
            let mut built = None;
            observer.plugin_open(opt.name.name(), &mut || {
                built = Some(build_plugin(opt, snap))
            });
            built
        })
    }

    /// Runs the configured actions in order.
    pub fn run_actions(&mut self) {
        self.run_actions_observed(&mut Unobserved);
    }

    /// [`Session::run_actions`], running each action inside `observer.action`.
    pub fn run_actions_observed(&mut self, observer: &mut dyn SessionObserver) {
        let actions = self.conf.actions.clone();
        for kind in actions {
            observer.action(kind, &mut || run_action(kind, self));
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

    /// Writes down each step it sees, once the step has run.
    #[derive(Default)]
    struct Steps(Vec<String>);

    impl SessionObserver for Steps {
        fn plugin_open(&mut self, plugin: &str, run: &mut dyn FnMut()) {
            run();
            self.0.push(format!("open {plugin}"));
        }
        fn action(&mut self, action: ActionKind, run: &mut dyn FnMut()) {
            run();
            self.0.push(action.name().to_string());
        }
        fn plugin_close(&mut self, plugin: &str, run: &mut dyn FnMut()) {
            run();
            self.0.push(format!("close {plugin}"));
        }
    }

    #[test]
    fn plugins_are_built_actions_run_and_plugins_closed_inside_one_observer_in_order() {
        let text = "actions: enqueue, allocate, backfill, preempt, reclaim\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n- plugins:\n  - name: drf\n";
        let (conf, _) = SchedulerConf::parse(text).unwrap();
        let mut steps = Steps::default();
        let mut ssn = Session::open_observed(
            empty_snapshot(),
            &conf,
            SessionOptions::default(),
            &mut steps,
        );
        assert_eq!(steps.0, ["open priority", "open gang", "open drf"]);
        steps.0.clear();
        ssn.run_actions_observed(&mut steps);
        let names: Vec<_> = ActionKind::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(steps.0, names);
        assert_eq!(ssn.action, Some(ActionKind::Reclaim));
        steps.0.clear();
        ssn.close_observed(&mut steps);
        assert_eq!(steps.0, ["close priority", "close gang", "close drf"]);
    }
}
