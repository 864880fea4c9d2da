//! Parsing a `key=value,...` generator spec, with every value checked on its own and against
//! the keys it depends on, so that `generate` never meets a workload that cannot be built.

use std::str::FromStr;

use volcano_api::quantity;
use volcano_controllers::time::parse_duration;

use super::GenerateSpec;

/// A generator spec that cannot be used: which key, which value, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// An item without `=`.
    #[error("generate: `{item}` is not key=value")]
    NotKeyValue {
        /// The item as written.
        item: String,
    },
    /// A key the generator does not know.
    #[error("generate: unknown key `{key}` (value `{value}`); known keys: {known}")]
    UnknownKey {
        /// The key.
        key: String,
        /// Its value.
        value: String,
        /// The keys the generator knows, comma-separated.
        known: String,
    },
    /// A key given twice.
    #[error("generate: key `{key}` is given twice (`{value}` the second time)")]
    Duplicate {
        /// The key.
        key: String,
        /// The second value.
        value: String,
    },
    /// A value that does not parse, or is out of range, or contradicts another key.
    #[error("generate: bad value `{value}` for key `{key}`: {reason}")]
    BadValue {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// What is wrong, in words.
        reason: String,
    },
}

/// How submissions are spread over `over`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Exponential gaps at rate `jobs / over`.
    Poisson,
    /// Evenly spaced, one every `over / jobs`.
    Uniform,
    /// Random times whose density follows a day: low at night, peaking at 14:00.
    Diurnal,
}

/// An inclusive integer range; `lo == hi` is a fixed value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntRange {
    /// Smallest value.
    pub lo: u32,
    /// Largest value.
    pub hi: u32,
}

/// How long a job's pods run, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DurationDist {
    /// Exponential with this mean.
    Exponential {
        /// Mean, in seconds.
        mean_s: f64,
    },
    /// Log-normal with this median and shape.
    LogNormal {
        /// Median, in seconds.
        median_s: f64,
        /// Standard deviation of the underlying normal.
        sigma: f64,
    },
    /// Uniform between two bounds.
    Uniform {
        /// Lower bound, in seconds.
        lo_s: f64,
        /// Upper bound, in seconds.
        hi_s: f64,
    },
    /// Always the same.
    Fixed {
        /// The duration, in seconds.
        s: f64,
    },
}

/// A queue to create, and how much of the cluster it deserves relative to the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueWeight {
    /// Queue name.
    pub name: String,
    /// `spec.weight`.
    pub weight: u32,
}

/// One tier of generated HyperNodes: its name and how many members each domain holds (nodes
/// for tier 1, domains of the tier below for higher tiers).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TopologyTier {
    /// `spec.tierName`, and the prefix of the HyperNodes' names.
    pub name: String,
    /// Members per domain.
    pub fanout: u32,
}

/// `networkTopology.mode` of generated gangs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TopologyMode {
    /// Never span more than the allowed tier.
    Hard,
    /// Prefer not to.
    Soft,
}

impl TopologyMode {
    /// The mode as a PodGroup writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            TopologyMode::Hard => "hard",
            TopologyMode::Soft => "soft",
        }
    }
}

/// The keys, in the order `HELP` lists them.
const KEYS: &[&str] = &[
    "nodes",
    "gpu-nodes",
    "gpus-per-node",
    "gpu-model",
    "gpu-memory",
    "gpu-taint",
    "node-cpu",
    "node-memory",
    "queues",
    "jobs",
    "over",
    "arrival",
    "job-size",
    "pod-cpu",
    "memory-per-cpu",
    "gpu-jobs",
    "gpu-share",
    "duration",
    "fail-rate",
    "topology",
    "topology-mode",
    "topology-tier",
];

// Bounds that keep a typo (`jobs=3000000000`) from asking for more memory than any machine has.
const MAX_NODES: u32 = 100_000;
const MAX_JOBS: u32 = 1_000_000;
const MAX_JOB_SIZE: u32 = 10_000;
const MAX_GPUS_PER_NODE: u32 = 64;
/// More tiers than any data centre's network has.
const MAX_TIERS: usize = 8;
/// One year: longer spans or durations are almost surely a unit mistake.
const MAX_SECONDS: f64 = 365.0 * 86_400.0;

impl FromStr for GenerateSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, SpecError> {
        let mut spec = GenerateSpec::default();
        let mut seen: Vec<&str> = Vec::new();
        // `gpu-memory` defaults from the model, so it is applied after `gpu-model` is known.
        let mut gpu_memory: Option<&str> = None;
        let items = join_topology_items(text);
        for item in items.iter().map(String::as_str) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(SpecError::NotKeyValue {
                    item: item.to_string(),
                });
            };
            let (key, value) = (key.trim(), value.trim());
            if seen.contains(&key) {
                return Err(SpecError::Duplicate {
                    key: key.to_string(),
                    value: value.to_string(),
                });
            }
            seen.push(key);
            let bad = |reason: String| bad(key, value, &reason);
            match key {
                "nodes" => spec.nodes = count(value, 1, MAX_NODES).map_err(bad)?,
                "gpu-nodes" => spec.gpu_nodes = count(value, 0, MAX_NODES).map_err(bad)?,
                "gpus-per-node" => {
                    spec.gpus_per_node = count(value, 1, MAX_GPUS_PER_NODE).map_err(bad)?
                }
                "gpu-model" => spec.gpu_model = label_value(value).map_err(bad)?,
                "gpu-memory" => gpu_memory = Some(value),
                "gpu-taint" => spec.gpu_taint = boolean(value).map_err(bad)?,
                "node-cpu" => spec.node_cpu = count(value, 1, 100_000).map_err(bad)?,
                "node-memory" => spec.node_memory_bytes = bytes(value).map_err(bad)?,
                "queues" => spec.queues = queues(value).map_err(bad)?,
                "jobs" => spec.jobs = count(value, 0, MAX_JOBS).map_err(bad)?,
                "over" => spec.over_s = seconds(value).map_err(bad)?,
                "arrival" => spec.arrival = arrival(value).map_err(bad)?,
                "job-size" => spec.job_size = range(value, 1, MAX_JOB_SIZE).map_err(bad)?,
                "pod-cpu" => spec.pod_cpu = range(value, 1, 100_000).map_err(bad)?,
                "memory-per-cpu" => spec.memory_per_cpu_bytes = bytes(value).map_err(bad)?,
                "gpu-jobs" => spec.gpu_jobs = fraction(value).map_err(bad)?,
                "gpu-share" => spec.gpu_share = fraction(value).map_err(bad)?,
                "duration" => spec.duration = duration_dist(value).map_err(bad)?,
                "fail-rate" => spec.fail_rate = fraction(value).map_err(bad)?,
                "topology" => spec.topology = topology(value).map_err(bad)?,
                "topology-mode" => spec.topology_mode = Some(topology_mode(value).map_err(bad)?),
                "topology-tier" => {
                    spec.topology_tier = count(value, 1, MAX_TIERS as u32).map_err(bad)?
                }
                _ => {
                    return Err(SpecError::UnknownKey {
                        key: key.to_string(),
                        value: value.to_string(),
                        known: KEYS.join(", "),
                    });
                }
            }
        }
        spec.gpu_memory_mib = match gpu_memory {
            Some(value) => mebibytes(value).map_err(|r| bad("gpu-memory", value, &r))?,
            None => default_gpu_memory_mib(&spec.gpu_model),
        };
        spec.check()?;
        Ok(spec)
    }
}

impl GenerateSpec {
    /// The checks across keys: every generated pod must fit on some node.
    pub fn check(&self) -> Result<(), SpecError> {
        if self.gpu_nodes > self.nodes {
            return Err(bad_n(
                "gpu-nodes",
                self.gpu_nodes,
                &format!("more than nodes={}", self.nodes),
            ));
        }
        if self.pod_cpu.hi > self.node_cpu {
            return Err(bad(
                "pod-cpu",
                &self.pod_cpu.to_string(),
                &format!("pods would not fit a node of node-cpu={}", self.node_cpu),
            ));
        }
        let largest = u128::from(self.pod_cpu.hi) * u128::from(self.memory_per_cpu_bytes);
        if largest > u128::from(self.node_memory_bytes) {
            return Err(bad(
                "memory-per-cpu",
                &quantity_text(self.memory_per_cpu_bytes),
                &format!(
                    "{} cpu would ask more memory than node-memory={}",
                    self.pod_cpu.hi,
                    quantity_text(self.node_memory_bytes)
                ),
            ));
        }
        if self.topology_mode.is_some() && self.topology.is_empty() {
            return Err(bad(
                "topology-mode",
                self.topology_mode.map_or("", TopologyMode::as_str),
                "gangs need HyperNodes to be kept in: give topology=leaf:8;spine:4 too",
            ));
        }
        if self.topology_mode.is_some() && self.topology_tier as usize > self.topology.len() {
            return Err(bad_n(
                "topology-tier",
                self.topology_tier,
                &format!("topology has only {} tier(s)", self.topology.len()),
            ));
        }
        if self.gpu_memory_mib < 1024 {
            return Err(bad_n(
                "gpu-memory",
                self.gpu_memory_mib,
                "a device needs at least 1024 MiB",
            ));
        }
        Ok(())
    }
}

fn bad(key: &str, value: &str, reason: &str) -> SpecError {
    SpecError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

fn bad_n(key: &str, value: impl std::fmt::Display, reason: &str) -> SpecError {
    bad(key, &value.to_string(), reason)
}

fn quantity_text(bytes: u64) -> String {
    i64::try_from(bytes)
        .map(quantity::format_bytes)
        .unwrap_or_else(|_| bytes.to_string())
}

impl std::fmt::Display for IntRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}-{}", self.lo, self.hi)
        }
    }
}

fn count(value: &str, min: u32, max: u32) -> Result<u32, String> {
    let n: u32 = value
        .parse()
        .map_err(|_| "expected a whole number".to_string())?;
    if n < min || n > max {
        return Err(format!("expected {min} to {max}"));
    }
    Ok(n)
}

fn range(value: &str, min: u32, max: u32) -> Result<IntRange, String> {
    let (lo, hi) = match value.split_once('-') {
        Some((lo, hi)) => (count(lo.trim(), min, max)?, count(hi.trim(), min, max)?),
        None => {
            let n = count(value, min, max)?;
            (n, n)
        }
    };
    if lo > hi {
        return Err(format!("range {lo}-{hi} is empty"));
    }
    Ok(IntRange { lo, hi })
}

fn fraction(value: &str) -> Result<f64, String> {
    let x: f64 = value
        .parse()
        .map_err(|_| "expected a number from 0 to 1".to_string())?;
    if !(0.0..=1.0).contains(&x) {
        return Err("expected a number from 0 to 1".to_string());
    }
    Ok(x)
}

fn boolean(value: &str) -> Result<bool, String> {
    match value {
        "true" | "yes" | "1" => Ok(true),
        "false" | "no" | "0" => Ok(false),
        _ => Err("expected true or false".to_string()),
    }
}

/// A Kubernetes quantity in bytes (`256Gi`, `1e9`).
fn bytes(value: &str) -> Result<u64, String> {
    let n = quantity::parse_value(value).map_err(|e| e.to_string())?;
    match u64::try_from(n) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("expected a positive quantity such as 256Gi".to_string()),
    }
}

/// A plain number is MiB, as Volcano writes device memory; a quantity (`80Gi`) is converted.
fn mebibytes(value: &str) -> Result<u64, String> {
    if value.bytes().all(|b| b.is_ascii_digit()) {
        return value
            .parse()
            .map_err(|_| "expected MiB or a quantity such as 80Gi".to_string());
    }
    Ok(bytes(value)? >> 20)
}

/// Device memory of well-known models, in MiB; others are taken as 80 GiB devices.
fn default_gpu_memory_mib(model: &str) -> u64 {
    match model.to_ascii_uppercase().as_str() {
        "H200" => 143_360,
        "V100" => 32_768,
        "A10" => 24_576,
        "L4" => 23_034,
        "T4" => 15_360,
        "L40S" => 46_068,
        _ => 81_920,
    }
}

/// A label value (it becomes `nvidia.com/gpu.product`) and a field of the vGPU register
/// annotation, so neither separator of that annotation (`,` and `:`) may appear.
fn label_value(value: &str) -> Result<String, String> {
    let ok = !value.is_empty()
        && value.len() <= 63
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && value
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && value
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric());
    if ok {
        Ok(value.to_string())
    } else {
        Err("expected a label value: letters, digits, `-`, `_`, `.`, at most 63".to_string())
    }
}

/// A Go-style duration (`90s`, `30m`, `1h30m`), in seconds.
fn seconds(value: &str) -> Result<f64, String> {
    let s = parse_duration(value)
        .ok_or_else(|| "expected a duration such as 90s, 30m or 1h30m".to_string())?
        .as_secs_f64();
    if s > MAX_SECONDS {
        return Err("longer than a year".to_string());
    }
    Ok(s)
}

fn positive_seconds(value: &str) -> Result<f64, String> {
    let s = seconds(value)?;
    if s <= 0.0 {
        return Err(format!("duration `{value}` must be positive"));
    }
    Ok(s)
}

fn arrival(value: &str) -> Result<Arrival, String> {
    match value {
        "poisson" => Ok(Arrival::Poisson),
        "uniform" => Ok(Arrival::Uniform),
        "diurnal" => Ok(Arrival::Diurnal),
        _ => Err("expected poisson, uniform or diurnal".to_string()),
    }
}

fn duration_dist(value: &str) -> Result<DurationDist, String> {
    let parts: Vec<&str> = value.split(':').collect();
    let expected = "expected exponential:MEAN, lognormal:MEDIAN:SIGMA, uniform:A-B or fixed:D";
    match parts.as_slice() {
        ["exponential", mean] => Ok(DurationDist::Exponential {
            mean_s: positive_seconds(mean)?,
        }),
        ["lognormal", median, sigma] => {
            let sigma: f64 = sigma
                .parse()
                .map_err(|_| format!("sigma `{sigma}` is not a number"))?;
            if !(0.0..=5.0).contains(&sigma) {
                return Err(format!("sigma {sigma} is outside 0 to 5"));
            }
            Ok(DurationDist::LogNormal {
                median_s: positive_seconds(median)?,
                sigma,
            })
        }
        ["uniform", bounds] => {
            let (lo, hi) = bounds
                .split_once('-')
                .ok_or_else(|| format!("uniform needs A-B, got `{bounds}`"))?;
            let (lo_s, hi_s) = (positive_seconds(lo)?, positive_seconds(hi)?);
            if lo_s > hi_s {
                return Err(format!("uniform range {bounds} is empty"));
            }
            Ok(DurationDist::Uniform { lo_s, hi_s })
        }
        ["fixed", d] => Ok(DurationDist::Fixed {
            s: positive_seconds(d)?,
        }),
        _ => Err(expected.to_string()),
    }
}

/// `name:weight;name:weight`; names become Queue names and namespaces, so they must be
/// DNS labels, and `root` is the hierarchy's own.
fn queues(value: &str) -> Result<Vec<QueueWeight>, String> {
    let mut out: Vec<QueueWeight> = Vec::new();
    for item in value.split(';').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, weight) = match item.split_once(':') {
            Some((name, weight)) => (name.trim(), count(weight.trim(), 1, 65_535)?),
            None => (item, 1),
        };
        if !is_dns_label(name) {
            return Err(format!(
                "queue name `{name}` is not a DNS label (lowercase letters, digits, `-`)"
            ));
        }
        if name == "root" {
            return Err("`root` is the queue hierarchy's root, not a queue for jobs".to_string());
        }
        if out.iter().any(|q| q.name == name) {
            return Err(format!("queue `{name}` is listed twice"));
        }
        out.push(QueueWeight {
            name: name.to_string(),
            weight,
        });
    }
    if out.is_empty() {
        return Err("expected at least one queue, e.g. research:3;prod:1".to_string());
    }
    Ok(out)
}

/// The items of a spec: `,`-separated, except that bare `name:N` items right after a
/// `topology=` item continue it, so `topology=leaf:8,spine:4` reads as `topology=leaf:8;spine:4`.
fn join_topology_items(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut in_topology = false;
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        if in_topology
            && !item.contains('=')
            && item.contains(':')
            && let Some(last) = out.last_mut()
        {
            last.push(';');
            last.push_str(item);
            continue;
        }
        in_topology = item
            .split_once('=')
            .is_some_and(|(key, _)| key.trim() == "topology");
        out.push(item.to_string());
    }
    out
}

/// Tiers of HyperNodes as `name:N;name:N` (or `,`-separated), lowest tier first: tier 1
/// groups N nodes, each higher tier N domains of the tier below. Names become HyperNode name
/// prefixes, so they must be DNS labels.
pub fn parse_topology(value: &str) -> Result<Vec<TopologyTier>, String> {
    topology(value)
}

fn topology(value: &str) -> Result<Vec<TopologyTier>, String> {
    let mut out: Vec<TopologyTier> = Vec::new();
    for item in value
        .split([';', ','])
        .map(str::trim)
        .filter(|i| !i.is_empty())
    {
        let Some((name, fanout)) = item.split_once(':') else {
            return Err(format!(
                "tier `{item}` is not name:N (e.g. leaf:8, eight nodes per leaf)"
            ));
        };
        let name = name.trim();
        if !is_dns_label(name) || name.len() > 40 {
            return Err(format!(
                "tier name `{name}` is not a short DNS label (lowercase letters, digits, `-`)"
            ));
        }
        if out.iter().any(|t| t.name == name) {
            return Err(format!("tier `{name}` is listed twice"));
        }
        let fanout = count(fanout.trim(), 1, MAX_NODES)?;
        out.push(TopologyTier {
            name: name.to_string(),
            fanout,
        });
    }
    if out.is_empty() {
        return Err("expected at least one tier, e.g. leaf:8;spine:4".to_string());
    }
    if out.len() > MAX_TIERS {
        return Err(format!("at most {MAX_TIERS} tiers"));
    }
    Ok(out)
}

/// `hard` or `soft`.
pub fn parse_topology_mode(value: &str) -> Result<TopologyMode, String> {
    topology_mode(value)
}

fn topology_mode(value: &str) -> Result<TopologyMode, String> {
    match value {
        "hard" => Ok(TopologyMode::Hard),
        "soft" => Ok(TopologyMode::Soft),
        _ => Err("expected hard or soft".to_string()),
    }
}

fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}
