//! Flags of `volcano scheduler` and `volcano controller-manager`: every flag of Volcano's
//! `cmd/scheduler` and `cmd/controller-manager` options, with Volcano's defaults. Flags with a
//! meaning here are honoured; the others are accepted, and named once at start as ignored.
//!
//! Go's flag syntax: booleans are `--flag` or `--flag=false` (never `--flag false`), other
//! values `--flag=value` or `--flag value`.

use std::path::PathBuf;
use std::time::Duration;

use super::parse_duration;
use super::shared_flags::{GoAddress, SharedArgs, go_bool, parse_go_address};

/// Volcano's namespace of the leader-election lease.
pub const DEFAULT_LEASE_NAMESPACE: &str = "volcano-system";

/// Connection, serving and election flags both components take.
#[derive(clap::Args, Debug, Clone)]
pub struct CommonArgs {
    /// Path to a kubeconfig; without it, `KUBECONFIG`, `~/.kube/config` or the in-cluster
    /// service account are used.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Pods naming one of these schedulers are handled (repeatable).
    #[arg(long = "scheduler-name", default_value = "volcano")]
    pub scheduler_names: Vec<String>,
    /// Also serve `/healthz` and `/readyz` on `--healthz-address`.
    #[arg(long = "enable-healthz", default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub enable_healthz: bool,
    /// Where `/healthz` and `/readyz` are served with `--enable-healthz` (Go's `host:port`).
    #[arg(long = "healthz-address", default_value = ":11251", value_parser = parse_go_address)]
    pub healthz_address: GoAddress,
    /// Accepted: `/metrics` is always served on `--listen-address`.
    #[arg(long = "enable-metrics", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub enable_metrics: Option<bool>,
    /// Elect a leader among replicas through a Lease (`--leader-elect=false` for one replica).
    #[arg(long = "leader-elect", default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub leader_elect: bool,
    /// Namespace of the Lease.
    #[arg(long = "leader-elect-resource-namespace", default_value = DEFAULT_LEASE_NAMESPACE)]
    pub leader_elect_resource_namespace: String,
    /// Namespace of the Lease (Volcano's deprecated name; wins over
    /// `--leader-elect-resource-namespace`, as in Volcano).
    #[arg(long = "lock-object-namespace")]
    pub lock_object_namespace: Option<String>,
    /// Name of the Lease (default: `volcano-scheduler` or `volcano-controllers`).
    #[arg(long = "leader-elect-resource-name")]
    pub leader_elect_resource_name: Option<String>,
    /// Kind of lock; only `leases` is implemented (others are ignored, with a warning).
    #[arg(long = "leader-elect-resource-lock")]
    pub leader_elect_resource_lock: Option<String>,
    /// How long a lease holds without renewal.
    #[arg(long = "leader-elect-lease-duration", default_value = "15s", value_parser = parse_duration)]
    pub lease_duration: Duration,
    /// How long a leader acts without a successful renewal.
    #[arg(long = "leader-elect-renew-deadline", default_value = "10s", value_parser = parse_duration)]
    pub renew_deadline: Duration,
    /// Time between election attempts.
    #[arg(long = "leader-elect-retry-period", default_value = "2s", value_parser = parse_duration)]
    pub retry_period: Duration,
    /// Accepted, ignored (Volcano's TLS for the health server).
    #[arg(long = "ca-cert-file", hide = true)]
    pub ca_cert_file: Option<PathBuf>,
    /// Accepted, ignored.
    #[arg(long = "tls-cert-file", hide = true)]
    pub tls_cert_file: Option<PathBuf>,
    /// Accepted, ignored.
    #[arg(long = "tls-private-key-file", hide = true)]
    pub tls_private_key_file: Option<PathBuf>,
    /// Logging and client flags.
    #[command(flatten)]
    pub shared: SharedArgs,
}

impl CommonArgs {
    /// The Lease's namespace: `--lock-object-namespace` when given, as Volcano does.
    pub fn lease_namespace(&self) -> &str {
        self.lock_object_namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .unwrap_or(&self.leader_elect_resource_namespace)
    }

    /// Where health is served besides `listen`: `--healthz-address` with `--enable-healthz`,
    /// unless that is `listen` itself.
    pub fn healthz_serving(&self, listen: &GoAddress) -> Option<&GoAddress> {
        let h = &self.healthz_address;
        // Port 0 picks a free port for each server: never the same address.
        let same = h.addr == listen.addr && h.addr.is_some_and(|a| a.port() != 0);
        (self.enable_healthz && h.addr.is_some() && !same).then_some(h)
    }

    /// The flags given that have no meaning here, by name.
    pub fn ignored_flags(&self) -> Vec<&'static str> {
        let mut out = self.shared.ignored_flags();
        let lock = self.leader_elect_resource_lock.as_deref();
        let given = [
            ("--enable-metrics=false", self.enable_metrics == Some(false)),
            (
                "--leader-elect-resource-lock",
                lock.is_some_and(|l| l != "leases"),
            ),
            ("--ca-cert-file", self.ca_cert_file.is_some()),
            ("--tls-cert-file", self.tls_cert_file.is_some()),
            (
                "--tls-private-key-file",
                self.tls_private_key_file.is_some(),
            ),
        ];
        out.extend(given.into_iter().filter_map(|(n, set)| set.then_some(n)));
        out
    }
}

/// Flags of `volcano scheduler`.
#[derive(clap::Args, Debug)]
// As pflag: a flag given twice takes its last value.
#[command(
    args_override_self = true,
    after_help = "Volcano's other scheduler flags and klog's are accepted, and named at start as ignored."
)]
pub struct SchedulerArgs {
    /// Connection, serving and election.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Where `/metrics`, `/healthz` and `/readyz` are served (Go's `host:port`; `:8080` is
    /// every interface; empty: nowhere).
    #[arg(long = "listen-address", default_value = ":8080", value_parser = parse_go_address)]
    pub listen_address: GoAddress,
    /// volcano-scheduler.conf (re-read when it changes); Volcano's default without it.
    #[arg(long = "scheduler-conf")]
    pub scheduler_conf: Option<PathBuf>,
    /// Time between scheduling sessions.
    #[arg(long = "schedule-period", default_value = "1s", value_parser = parse_duration)]
    pub schedule_period: Duration,
    /// Queue of PodGroups that name none.
    #[arg(long = "default-queue", default_value = "default")]
    pub default_queue: String,
    /// Share of nodes (1-100) a task's search stops at once that many fit; 0 or less: adaptive
    /// to the cluster's size, as Volcano.
    #[arg(long = "percentage-nodes-to-find", allow_negative_numbers = true)]
    pub percentage_nodes_to_find: Option<i32>,
    /// Binds and evictions in flight at most.
    #[arg(long = "bind-concurrency", default_value_t = 16)]
    pub bind_concurrency: usize,
    /// Volcano's other scheduler flags, accepted.
    #[command(flatten)]
    pub volcano: SchedulerCompatArgs,
}

/// Volcano scheduler flags accepted without effect (unless at the value volcano-rs has built
/// in).
#[derive(clap::Args, Debug, Default)]
pub struct SchedulerCompatArgs {
    /// Accepted, ignored.
    #[arg(long = "resync-period", value_parser = parse_duration, hide = true)]
    pub resync_period: Option<Duration>,
    /// Accepted: PriorityClasses are always honoured.
    #[arg(long = "priority-class", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub priority_class: Option<bool>,
    /// Accepted: volcano-rs searches at least 100 nodes (Volcano's default).
    #[arg(
        long = "minimum-feasible-nodes",
        allow_negative_numbers = true,
        hide = true
    )]
    pub minimum_feasible_nodes: Option<i32>,
    /// Accepted: volcano-rs searches at least 5 % of nodes (Volcano's default).
    #[arg(
        long = "minimum-percentage-nodes-to-find",
        allow_negative_numbers = true,
        hide = true
    )]
    pub minimum_percentage_nodes_to_find: Option<i32>,
    /// Accepted, ignored: plugins are built in.
    #[arg(long = "plugins-dir", hide = true)]
    pub plugins_dir: Option<String>,
    /// Accepted, ignored.
    #[arg(long = "csi-storage", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub csi_storage: Option<bool>,
    /// Accepted, ignored.
    #[arg(long = "enable-pprof", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub enable_pprof: Option<bool>,
    /// Accepted, ignored: every node is scheduled on.
    #[arg(long = "node-selector", value_delimiter = ',', hide = true)]
    pub node_selector: Vec<String>,
    /// Accepted, ignored.
    #[arg(long = "cache-dumper", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub cache_dumper: Option<bool>,
    /// Accepted, ignored.
    #[arg(long = "cache-dump-dir", hide = true)]
    pub cache_dump_dir: Option<String>,
    /// Accepted, ignored.
    #[arg(long = "node-worker-threads", hide = true)]
    pub node_worker_threads: Option<u32>,
    /// Accepted, ignored.
    #[arg(long = "gate-removal-worker-num", hide = true)]
    pub gate_removal_worker_num: Option<i64>,
    /// Accepted, ignored.
    #[arg(long = "ignored-provisioners", value_delimiter = ',', hide = true)]
    pub ignored_provisioners: Vec<String>,
    /// Accepted, ignored.
    #[arg(long = "resource-sync-timeout", value_parser = parse_duration, hide = true)]
    pub resource_sync_timeout: Option<Duration>,
    /// Accepted, ignored: an invalid file is refused at start, and a later invalid version
    /// keeps the configuration in force.
    #[arg(long = "disable-default-scheduler-config", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub disable_default_scheduler_config: Option<bool>,
    /// Accepted, ignored.
    #[arg(long = "scheduler-sharding-mode", hide = true)]
    pub scheduler_sharding_mode: Option<String>,
    /// Accepted, ignored.
    #[arg(long = "scheduler-sharding-name", hide = true)]
    pub scheduler_sharding_name: Option<String>,
}

impl SchedulerArgs {
    /// `--percentage-nodes-to-find` as the scheduler takes it: none for adaptive.
    pub fn percentage(&self) -> Option<u8> {
        match self.percentage_nodes_to_find? {
            ..=0 => None,
            p => Some(u8::try_from(p.min(100)).unwrap_or(100)),
        }
    }

    /// The flags given that have no meaning here, by name.
    pub fn ignored_flags(&self) -> Vec<&'static str> {
        let mut out = self.common.ignored_flags();
        let v = &self.volcano;
        let given = [
            ("--resync-period", v.resync_period.is_some()),
            ("--priority-class=false", v.priority_class == Some(false)),
            (
                "--minimum-feasible-nodes",
                v.minimum_feasible_nodes.is_some_and(|n| n != 100),
            ),
            (
                "--minimum-percentage-nodes-to-find",
                v.minimum_percentage_nodes_to_find.is_some_and(|n| n != 5),
            ),
            (
                "--plugins-dir",
                v.plugins_dir.as_ref().is_some_and(|d| !d.is_empty()),
            ),
            ("--csi-storage", v.csi_storage.is_some()),
            ("--enable-pprof", v.enable_pprof == Some(true)),
            ("--node-selector", !v.node_selector.is_empty()),
            ("--cache-dumper", v.cache_dumper.is_some()),
            ("--cache-dump-dir", v.cache_dump_dir.is_some()),
            ("--node-worker-threads", v.node_worker_threads.is_some()),
            (
                "--gate-removal-worker-num",
                v.gate_removal_worker_num.is_some(),
            ),
            ("--ignored-provisioners", !v.ignored_provisioners.is_empty()),
            ("--resource-sync-timeout", v.resource_sync_timeout.is_some()),
            (
                "--disable-default-scheduler-config",
                v.disable_default_scheduler_config.is_some(),
            ),
            (
                "--scheduler-sharding-mode",
                v.scheduler_sharding_mode.is_some(),
            ),
            (
                "--scheduler-sharding-name",
                v.scheduler_sharding_name.is_some(),
            ),
        ];
        out.extend(given.into_iter().filter_map(|(n, set)| set.then_some(n)));
        out
    }
}

/// Flags of `volcano controller-manager`.
#[derive(clap::Args, Debug)]
// As pflag: a flag given twice takes its last value.
#[command(
    args_override_self = true,
    after_help = "Volcano's other controller-manager flags and klog's are accepted, and named at start as ignored."
)]
pub struct ControllerManagerArgs {
    /// Connection, serving and election.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Where `/metrics`, `/healthz` and `/readyz` are served (Go's `host:port`; `:8081` is
    /// every interface; empty: nowhere).
    #[arg(long = "listen-address", default_value = ":8081", value_parser = parse_go_address)]
    pub listen_address: GoAddress,
    /// Failed reconciliations of a Job in a row before it is terminated.
    #[arg(
        long = "max-requeue-num",
        default_value_t = 15,
        allow_negative_numbers = true
    )]
    pub max_requeue_num: i32,
    /// Volcano's controller list (`*`, `-name`, `+name`); volcano-rs runs its controllers (job,
    /// podgroup, queue, command) together and logs what was asked.
    #[arg(
        long = "controllers",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub controllers: Vec<String>,
    /// Create a PodGroup object for each bare pod of ours (no PodGroup named, no controller
    /// owner) and name it in the pod, as Volcano's controller-manager does. Off (the default),
    /// the scheduler keeps a bare pod's PodGroup in memory: no create, admission review, pod
    /// patch or status write per pod. Turn it on with Volcano's scheduler, which waits for the
    /// object.
    #[arg(long = "pod-groups-for-bare-pods", default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub pod_groups_for_bare_pods: bool,
    /// Volcano's other controller-manager flags, accepted.
    #[command(flatten)]
    pub volcano: ControllerCompatArgs,
}

/// Volcano controller-manager flags accepted without effect.
#[derive(clap::Args, Debug, Default)]
pub struct ControllerCompatArgs {
    /// Accepted, ignored: one loop serves every controller.
    #[arg(long = "worker-threads", hide = true)]
    pub worker_threads: Option<u32>,
    /// Accepted, ignored.
    #[arg(long = "worker-threads-for-cronjob", hide = true)]
    pub worker_threads_for_cronjob: Option<u32>,
    /// Accepted, ignored.
    #[arg(long = "worker-threads-for-podgroup", hide = true)]
    pub worker_threads_for_podgroup: Option<u32>,
    /// Accepted, ignored.
    #[arg(long = "worker-threads-for-queue", hide = true)]
    pub worker_threads_for_queue: Option<u32>,
    /// Accepted, ignored.
    #[arg(long = "worker-threads-for-gc", hide = true)]
    pub worker_threads_for_gc: Option<u32>,
    /// Accepted, ignored.
    #[arg(long = "inherit-owner-annotations", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub inherit_owner_annotations: Option<bool>,
    /// Accepted, ignored (Volcano's sharding controller).
    #[arg(long = "scheduler-configs", value_delimiter = ',', hide = true)]
    pub scheduler_configs: Vec<String>,
    /// Accepted, ignored.
    #[arg(long = "shard-sync-period", value_parser = parse_duration, hide = true)]
    pub shard_sync_period: Option<Duration>,
    /// Accepted, ignored.
    #[arg(long = "enable-node-event-trigger", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub enable_node_event_trigger: Option<bool>,
    /// Accepted, ignored.
    #[arg(long = "sharding-configmap", hide = true)]
    pub sharding_configmap: Option<String>,
    /// Accepted, ignored.
    #[arg(long = "sharding-configmap-namespace", hide = true)]
    pub sharding_configmap_namespace: Option<String>,
}

impl ControllerManagerArgs {
    /// `--max-requeue-num` as a retry budget (Volcano requeues while the count is below it).
    pub fn max_retries(&self) -> u32 {
        u32::try_from(self.max_requeue_num).unwrap_or(0)
    }

    /// Checks `--controllers` as Volcano does: a controller named twice is refused.
    pub fn check_controllers(&self) -> Result<(), String> {
        let mut seen = std::collections::HashSet::new();
        for c in self.controllers.iter().filter(|c| *c != "*") {
            let name = c.trim_start_matches(['+', '-']);
            if !seen.insert(name) {
                return Err(format!(
                    "--controllers: {name} is named twice (cannot be both enabled and disabled)"
                ));
            }
        }
        Ok(())
    }

    /// The flags given that have no meaning here, by name.
    pub fn ignored_flags(&self) -> Vec<&'static str> {
        let mut out = self.common.ignored_flags();
        let v = &self.volcano;
        let given = [
            ("--worker-threads", v.worker_threads.is_some()),
            (
                "--worker-threads-for-cronjob",
                v.worker_threads_for_cronjob.is_some(),
            ),
            (
                "--worker-threads-for-podgroup",
                v.worker_threads_for_podgroup.is_some(),
            ),
            (
                "--worker-threads-for-queue",
                v.worker_threads_for_queue.is_some(),
            ),
            ("--worker-threads-for-gc", v.worker_threads_for_gc.is_some()),
            (
                "--inherit-owner-annotations",
                v.inherit_owner_annotations.is_some(),
            ),
            ("--scheduler-configs", !v.scheduler_configs.is_empty()),
            ("--shard-sync-period", v.shard_sync_period.is_some()),
            (
                "--enable-node-event-trigger",
                v.enable_node_event_trigger.is_some(),
            ),
            ("--sharding-configmap", v.sharding_configmap.is_some()),
            (
                "--sharding-configmap-namespace",
                v.sharding_configmap_namespace.is_some(),
            ),
        ];
        out.extend(given.into_iter().filter_map(|(n, set)| set.then_some(n)));
        out
    }
}
