//! The flags every Volcano component takes besides its own: klog's logging flags, the API
//! client's (`--master`, `--kube-api-qps`, `--kube-api-burst`), `--feature-gates` and
//! `--version`; and the parsers for Go's flag syntax (`--flag`, `--flag=false`, `:8080`).
//!
//! Volcano's Helm chart passes these; volcano-rs honours `-v` (the log level), `--master` and
//! `--version`, and accepts the rest so that swapping only the image starts the components.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use super::parse_duration;

/// Flags shared by the scheduler, the controller-manager and the webhook-manager.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SharedArgs {
    /// Log verbosity, as klog's: 0-2 info, 3-4 debug, 5 and more trace (volcano-rs' own lines;
    /// libraries stay at info).
    #[arg(short = 'v', long = "v", value_name = "LEVEL")]
    pub v: Option<i32>,
    /// The API server's address, overriding the kubeconfig's.
    #[arg(long = "master")]
    pub master: Option<String>,
    /// Print the version and exit.
    #[arg(long = "version", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub version: Option<bool>,
    /// Accepted, ignored: kube-rs has no client-side rate limit.
    #[arg(long = "kube-api-qps", value_name = "QPS")]
    pub kube_api_qps: Option<f32>,
    /// Accepted, ignored: kube-rs has no client-side rate limit.
    #[arg(long = "kube-api-burst", value_name = "N")]
    pub kube_api_burst: Option<i64>,
    /// Accepted, ignored: Volcano's feature gates (`Name=true,...`).
    #[arg(long = "feature-gates", value_name = "GATES")]
    pub feature_gates: Option<String>,
    /// klog's flags, accepted and ignored: volcano-rs logs to stderr.
    #[command(flatten)]
    pub klog: KlogArgs,
    /// Arguments that are not flags, such as the chart's `2>&1` (a container's args are not run
    /// by a shell): Volcano ignores them, and so does volcano-rs, with a warning.
    #[arg(hide = true, value_name = "IGNORED")]
    pub not_flags: Vec<String>,
}

/// klog's flags other than `-v`; with underscores too, as Volcano's flag set normalizes them.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct KlogArgs {
    /// Accepted, ignored.
    #[arg(long = "logtostderr", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub logtostderr: Option<bool>,
    /// Accepted, ignored.
    #[arg(long = "alsologtostderr", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub alsologtostderr: Option<bool>,
    /// Accepted, ignored.
    #[arg(long = "log-dir", alias = "log_dir", hide = true)]
    pub log_dir: Option<String>,
    /// Accepted, ignored.
    #[arg(long = "log-file", alias = "log_file", hide = true)]
    pub log_file: Option<String>,
    /// Accepted, ignored.
    #[arg(long = "log-file-max-size", alias = "log_file_max_size", hide = true)]
    pub log_file_max_size: Option<u64>,
    /// Accepted, ignored.
    #[arg(long = "skip-headers", alias = "skip_headers", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub skip_headers: Option<bool>,
    /// Accepted, ignored.
    #[arg(long = "skip-log-headers", alias = "skip_log_headers", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub skip_log_headers: Option<bool>,
    /// Accepted, ignored.
    #[arg(long = "add-dir-header", alias = "add_dir_header", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub add_dir_header: Option<bool>,
    /// Accepted, ignored.
    #[arg(long = "one-output", alias = "one_output", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub one_output: Option<bool>,
    /// Accepted, ignored.
    #[arg(long = "stderrthreshold", hide = true)]
    pub stderrthreshold: Option<String>,
    /// Accepted, ignored.
    #[arg(long = "vmodule", hide = true)]
    pub vmodule: Option<String>,
    /// Accepted, ignored.
    #[arg(long = "log-backtrace-at", alias = "log_backtrace_at", hide = true)]
    pub log_backtrace_at: Option<String>,
    /// Accepted, ignored.
    #[arg(long = "log-flush-frequency", alias = "log_flush_frequency", value_parser = parse_duration, hide = true)]
    pub log_flush_frequency: Option<Duration>,
    /// Accepted, ignored.
    #[arg(long = "legacy-stderr-threshold-behavior", alias = "legacy_stderr_threshold_behavior", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = go_bool, hide = true)]
    pub legacy_stderr_threshold_behavior: Option<bool>,
}

impl SharedArgs {
    /// The level of volcano-rs' own log lines, from `-v`.
    pub fn log_level(&self) -> tracing::Level {
        match self.v.unwrap_or(0) {
            ..=2 => tracing::Level::INFO,
            3..=4 => tracing::Level::DEBUG,
            _ => tracing::Level::TRACE,
        }
    }

    /// Whether `--version` asks to print the version and exit.
    pub fn print_version(&self) -> bool {
        self.version == Some(true)
    }

    /// The flags given that have no meaning here, by name.
    pub fn ignored_flags(&self) -> Vec<&'static str> {
        let k = &self.klog;
        let given = [
            ("--kube-api-qps", self.kube_api_qps.is_some()),
            ("--kube-api-burst", self.kube_api_burst.is_some()),
            ("--feature-gates", self.feature_gates.is_some()),
            ("--logtostderr", k.logtostderr.is_some()),
            ("--alsologtostderr", k.alsologtostderr.is_some()),
            ("--log-dir", k.log_dir.is_some()),
            ("--log-file", k.log_file.is_some()),
            ("--log-file-max-size", k.log_file_max_size.is_some()),
            ("--skip-headers", k.skip_headers.is_some()),
            ("--skip-log-headers", k.skip_log_headers.is_some()),
            ("--add-dir-header", k.add_dir_header.is_some()),
            ("--one-output", k.one_output.is_some()),
            ("--stderrthreshold", k.stderrthreshold.is_some()),
            ("--vmodule", k.vmodule.is_some()),
            ("--log-backtrace-at", k.log_backtrace_at.is_some()),
            ("--log-flush-frequency", k.log_flush_frequency.is_some()),
            (
                "--legacy-stderr-threshold-behavior",
                k.legacy_stderr_threshold_behavior.is_some(),
            ),
        ];
        given
            .into_iter()
            .filter_map(|(name, set)| set.then_some(name))
            .collect()
    }
}

/// Logs, once, the flags accepted without effect and the arguments that are not flags; nothing
/// when there are none.
pub fn warn_ignored(component: &str, flags: &[&str], not_flags: &[String]) {
    if !flags.is_empty() {
        tracing::warn!(
            "{component}: accepted for compatibility with Volcano and ignored: {}",
            flags.join(", ")
        );
    }
    if !not_flags.is_empty() {
        tracing::warn!(
            "{component}: ignoring arguments that are not flags (as Volcano does): {}",
            not_flags.join(" ")
        );
    }
}

/// A Go boolean (`strconv.ParseBool`): `1 t T TRUE true True`, `0 f F FALSE false False`.
pub fn go_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!("{s:?} is not a boolean (true or false)")),
    }
}

/// An address in Go's `host:port` form, as Volcano's flags take it, and what it resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoAddress {
    /// As given, for messages.
    pub text: String,
    /// Where to listen; `None` for the empty string (do not serve).
    pub addr: Option<SocketAddr>,
}

impl std::fmt::Display for GoAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Parses `host:port`: an empty host (`:8080`) means every interface, as in Go; a name is
/// resolved; the empty string means no server.
pub fn parse_go_address(s: &str) -> Result<GoAddress, String> {
    let text = s.to_string();
    if s.is_empty() {
        return Ok(GoAddress { text, addr: None });
    }
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(GoAddress {
            text,
            addr: Some(addr),
        });
    }
    let bad = || format!("{s:?} is not an address (examples: :8080, 0.0.0.0:8080, 127.0.0.1:0)");
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let addr = if host.is_empty() {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port)
    } else {
        (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("{s:?}: cannot resolve {host:?}: {e}"))?
            .next()
            .ok_or_else(bad)?
    };
    Ok(GoAddress {
        text,
        addr: Some(addr),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_addresses() {
        let all = parse_go_address(":8080").unwrap();
        assert_eq!(all.addr, Some("0.0.0.0:8080".parse().unwrap()));
        let local = parse_go_address("127.0.0.1:0").unwrap();
        assert_eq!(local.addr.map(|a| a.port()), Some(0));
        let v6 = parse_go_address("[::1]:11251").unwrap();
        assert_eq!(v6.addr.map(|a| a.port()), Some(11251));
        assert_eq!(parse_go_address("").map(|a| a.addr), Ok(None));
        assert!(parse_go_address("8080").is_err());
        assert!(parse_go_address(":http").is_err());
    }

    #[test]
    fn go_booleans() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(go_bool(t), Ok(true));
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(go_bool(f), Ok(false));
        }
        assert!(go_bool("yes").is_err());
    }
}
