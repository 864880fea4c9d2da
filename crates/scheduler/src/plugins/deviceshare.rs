//! `deviceshare`: GPUs as separate devices. A pod that asks for whole GPUs or a share of one
//! fits a node only when enough single devices have what it asks, so a node with 50% free on
//! each of two GPUs does not take a pod asking for 80% of one. It chooses the devices a pod
//! takes (`deviceshare.SchedulePolicy`) and may score nodes by them
//! (`deviceshare.ScheduleWeight`), as Volcano's vGPU sharing does.

use crate::conf::Arguments;
use crate::fit::FitReason;
use crate::framework::Plugin;
use crate::model::gpu::{DEVICE_MILLI, DevicePolicy, GpuRequest, NodeGpus};
use crate::model::{NodeId, Snapshot, TaskId};

/// The deviceshare plugin.
pub struct DeviceShare {
    enabled: bool,
    policy: DevicePolicy,
    weight: f64,
}

impl DeviceShare {
    /// Reads `deviceshare.VGPUEnable` (default true here: listing the plugin is asking for it),
    /// `deviceshare.SchedulePolicy` (`binpack`, `spread`; otherwise best fit) and
    /// `deviceshare.ScheduleWeight`.
    pub fn new(args: &Arguments) -> Self {
        let policy = match args.str("deviceshare.SchedulePolicy").as_deref() {
            Some("binpack") => DevicePolicy::Binpack,
            Some("spread") => DevicePolicy::Spread,
            _ => DevicePolicy::BestFit,
        };
        DeviceShare {
            enabled: args.bool_or("deviceshare.VGPUEnable", true),
            policy,
            weight: args.f64_or("deviceshare.ScheduleWeight", 0.0),
        }
    }
}

/// Why a node's devices cannot take `req`, in words that say what was asked.
pub fn device_shortage(req: &GpuRequest) -> String {
    let what = if req.is_share() {
        format!("{}% of one GPU", req.cores / 10)
    } else {
        "a whole GPU".to_string()
    };
    let memory = if req.memory > 0 {
        format!(" and {} MiB of its memory", req.memory)
    } else {
        String::new()
    };
    format!(
        "node(s) had fewer than {} GPU device(s) with {what}{memory} free",
        req.count
    )
}

/// The models a request allows or refuses, as the pod wrote them.
fn models(req: &GpuRequest) -> String {
    if req.use_models.is_empty() {
        format!("other than {}", req.avoid_models.join(", "))
    } else {
        req.use_models.join(", ")
    }
}

/// The score Volcano's policies give the devices `ids` would take: `binpack` the fuller the
/// better, `spread` an unshared device best.
fn device_score(gpus: &NodeGpus, ids: &[u8], policy: DevicePolicy) -> f64 {
    ids.iter()
        .filter_map(|&i| gpus.devices.get(usize::from(i)))
        .map(|d| match policy {
            DevicePolicy::Spread => {
                if d.shares == 0 {
                    100.0
                } else {
                    0.0
                }
            }
            DevicePolicy::Binpack | DevicePolicy::BestFit => {
                if d.memory > 0 {
                    100.0 * d.used_memory as f64 / d.memory as f64
                } else {
                    100.0 * f64::from(d.used_cores) / f64::from(DEVICE_MILLI)
                }
            }
        })
        .sum()
}

impl Plugin for DeviceShare {
    fn name(&self) -> &'static str {
        "deviceshare"
    }

    fn checks_nodes(&self) -> bool {
        self.enabled
    }

    fn predicate(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Option<Result<(), FitReason>> {
        if !self.enabled {
            return None;
        }
        let Some(req) = s.task(t).gpu.as_deref() else {
            return Some(Ok(()));
        };
        Some(match s.node(n).gpus.as_deref() {
            None => Err(FitReason::unresolvable("node(s) had no GPU devices")),
            Some(gpus) if gpus.can_fit(req) => Ok(()),
            Some(gpus) if !gpus.devices.iter().any(|d| req.allows_model(&d.model)) => Err(
                FitReason::unresolvable(format!("node(s) had no GPU of model {}", models(req))),
            ),
            Some(_) => Err(FitReason::resolvable(device_shortage(req))),
        })
    }

    fn scores_nodes(&self) -> bool {
        self.enabled && self.weight != 0.0
    }

    fn node_order(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Option<f64> {
        if !self.scores_nodes() {
            return None;
        }
        let (Some(req), Some(gpus)) = (s.task(t).gpu.as_deref(), s.node(n).gpus.as_deref()) else {
            return Some(0.0);
        };
        let Some(ids) = gpus.choose(req, self.policy) else {
            return Some(0.0);
        };
        Some(device_score(gpus, &ids, self.policy) * self.weight)
    }

    fn gpu_devices(&self, s: &Snapshot, t: TaskId, n: NodeId) -> Option<Vec<u8>> {
        if !self.enabled {
            return None;
        }
        let req = s.task(t).gpu.as_deref()?;
        s.node(n).gpus.as_deref()?.choose(req, self.policy)
    }
}
