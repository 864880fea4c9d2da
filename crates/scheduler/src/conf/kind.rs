//! The actions and plugins volcano-rs implements, as the kinds configuration parsing turns
//! their Volcano names into: a misspelt name is refused once, when the configuration is read,
//! and everything after matches on a closed set.

use std::fmt;

/// Declares a kind: the enum, its Volcano names, and the comparisons with text that let
/// callers keep writing `conf.actions == ["enqueue", "allocate"]`.
macro_rules! kinds {
    ($(#[$doc:meta])* $kind:ident { $($(#[$vdoc:meta])* $variant:ident = $name:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $kind {
            $($(#[$vdoc])* $variant,)*
        }

        impl $kind {
            /// Every kind, in the order Volcano's documentation lists them.
            pub const ALL: &[$kind] = &[$($kind::$variant,)*];

            /// The name Volcano's configuration uses.
            pub fn name(self) -> &'static str {
                match self {
                    $($kind::$variant => $name,)*
                }
            }

            /// The kind named `name`, when volcano-rs implements it.
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|k| k.name() == name)
            }
        }

        impl fmt::Display for $kind {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl PartialEq<str> for $kind {
            fn eq(&self, other: &str) -> bool {
                self.name() == other
            }
        }

        impl PartialEq<&str> for $kind {
            fn eq(&self, other: &&str) -> bool {
                self.name() == *other
            }
        }

        impl From<$kind> for String {
            fn from(k: $kind) -> String {
                k.name().to_string()
            }
        }
    };
}

kinds! {
    /// An action a session runs.
    ActionKind {
        /// `enqueue`: admission of PodGroups into their queues.
        Enqueue = "enqueue",
        /// `allocate`: placing the tasks of admitted jobs, a gang as one unit.
        Allocate = "allocate",
        /// `backfill`: placing tasks that ask for nothing.
        Backfill = "backfill",
        /// `preempt`: evicting lower-priority pods within a queue.
        Preempt = "preempt",
        /// `reclaim`: taking back resources from queues above their deserved share.
        Reclaim = "reclaim",
    }
}

kinds! {
    /// A plugin a tier consults.
    PluginKind {
        /// `priority`: job and task order by priority; preemption by priority.
        Priority = "priority",
        /// `gang`: all of `minMember` or nothing.
        Gang = "gang",
        /// `conformance`: critical pods are never victims.
        Conformance = "conformance",
        /// `drf`: dominant resource fairness between jobs.
        Drf = "drf",
        /// `proportion`: queues' deserved shares by weight.
        Proportion = "proportion",
        /// `predicates`: kube-scheduler's node filters.
        Predicates = "predicates",
        /// `nodeorder`: kube-scheduler's node scores.
        NodeOrder = "nodeorder",
        /// `binpack`: scores that fill nodes before opening new ones.
        Binpack = "binpack",
        /// `overcommit`: admission against an overcommitted cluster.
        Overcommit = "overcommit",
        /// `capacity`: queues' deserved, guaranteed and capped resources.
        Capacity = "capacity",
        /// `deviceshare`: GPUs as separate, shareable devices.
        DeviceShare = "deviceshare",
        /// `fgd`: fragmentation-aware GPU packing.
        Fgd = "fgd",
        /// `network-topology-aware`: scores network domains (HyperNodes) for gangs.
        NetworkTopologyAware = "network-topology-aware",
    }
}
