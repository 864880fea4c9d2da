//! Flags of `volcano webhook-manager`, as Volcano's `cmd/webhook-manager/app/options`.

use std::path::PathBuf;
use std::time::Duration;

use super::parse_duration;
use super::shared_flags::{SharedArgs, go_bool};

/// Volcano's default list of admission paths.
pub const DEFAULT_ENABLED_ADMISSION: &str = "/jobs/mutate,/jobs/validate,/podgroups/mutate,/pods/validate,/pods/mutate,/queues/mutate,/queues/validate";

/// Flags of `volcano webhook-manager`.
#[derive(clap::Args, Debug)]
// As pflag: a flag given twice takes its last value.
#[command(args_override_self = true)]
pub struct WebhookManagerArgs {
    /// Path to a kubeconfig; without it, `KUBECONFIG`, `~/.kube/config` or the in-cluster
    /// service account are used.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Serving certificate (PEM; a CA after it is allowed). With `--tls-private-key-file` and
    /// `--ca-cert-file`, these files are served and re-read when they change; without them a CA
    /// and a serving certificate are generated at start and rotated before they expire.
    #[arg(long = "tls-cert-file")]
    pub tls_cert_file: Option<PathBuf>,
    /// Private key of `--tls-cert-file` (PEM).
    #[arg(long = "tls-private-key-file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// The CA that signed `--tls-cert-file`, written into the webhook configurations' `caBundle`.
    #[arg(long = "ca-cert-file")]
    pub ca_cert_file: Option<PathBuf>,
    /// Address to serve HTTPS admission on (empty: every address).
    #[arg(long = "listen-address", default_value = "")]
    pub listen_address: String,
    /// Port to serve HTTPS admission on.
    #[arg(long = "port", default_value_t = 8443)]
    pub port: u16,
    /// Namespace of the Service the API server reaches the webhook through.
    #[arg(long = "webhook-namespace")]
    pub webhook_namespace: Option<String>,
    /// Name of the Service the API server reaches the webhook through.
    #[arg(long = "webhook-service-name")]
    pub webhook_service_name: Option<String>,
    /// URL the API server reaches the webhook at (instead of a Service).
    #[arg(long = "webhook-url")]
    pub webhook_url: Option<String>,
    /// The admission paths served, comma-separated.
    #[arg(long = "enabled-admission", default_value = DEFAULT_ENABLED_ADMISSION)]
    pub enabled_admission: String,
    /// Pods naming one of these schedulers are admitted by the pod webhooks (repeatable).
    #[arg(long = "scheduler-name", default_value = "volcano")]
    pub scheduler_names: Vec<String>,
    /// Serve `/healthz` on `--healthz-address`.
    #[arg(long = "enable-healthz", default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub enable_healthz: bool,
    /// Where `/healthz` is served.
    #[arg(long = "healthz-address", default_value = ":11251")]
    pub healthz_address: String,
    /// How long requests in flight may finish after a stop signal.
    #[arg(long = "graceful-shutdown-time", default_value = "30s", value_parser = parse_duration)]
    pub graceful_shutdown_time: Duration,
    /// Refuse to delete a queue whose PodGroups still have pods allocated.
    #[arg(long = "enable-queue-allocated-pods-check", default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub enable_queue_allocated_pods_check: bool,
    /// Deepest queue tree allowed (root is depth 1).
    #[arg(long = "max-queue-depth", default_value_t = 5)]
    pub max_queue_depth: usize,
    /// Refuse changes of the root queue's capability, deserved and guarantee.
    #[arg(long = "enable-root-queue-protection", default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub enable_root_queue_protection: bool,
    /// Volcano's admission configuration file (accepted; listed by [`Self::ignored_flags`]).
    #[arg(long = "admission-conf")]
    pub admission_conf: Option<PathBuf>,
    /// Logging (`-v`), client (`--master`, `--kube-api-qps`...), `--feature-gates`, `--version`.
    #[command(flatten)]
    pub shared: SharedArgs,
}

impl WebhookManagerArgs {
    /// The flags given that have no meaning here, by name; `main` logs them once at start
    /// ([`super::preamble`]), before the run function.
    pub fn ignored_flags(&self) -> Vec<&'static str> {
        let mut out = self.shared.ignored_flags();
        if self.admission_conf.is_some() {
            out.push("--admission-conf");
        }
        out
    }
}
