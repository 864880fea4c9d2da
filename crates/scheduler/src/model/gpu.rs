//! GPU devices, one by one: what each device of a node has left, and what a pod asks of them.
//!
//! A node's GPUs are separate devices, as Volcano's vGPU device sharing sees them. A pod asks
//! for whole GPUs or for a share of one GPU (`volcano.sh/vgpu-number` with `vgpu-cores`, the
//! percentage of one device, and `vgpu-memory`), and a share must fit on a single device. The
//! cores of a device are kept in thousandths (a whole device is [`DEVICE_MILLI`]), so the
//! leftovers that make fragmentation are exact integers.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use volcano_api::k8s_openapi;
use volcano_api::resources::canonical_amount;

/// A whole device, in thousandths.
pub const DEVICE_MILLI: u32 = 1000;
/// How many pods may share a device registered without a sharing count (Volcano's default
/// `deviceSplitCount`).
pub const DEFAULT_SPLIT_COUNT: u32 = 10;

/// The node annotation Volcano's vGPU device plugin registers devices with:
/// `uuid,count,memoryMiB,type,health,mode:` per device.
pub const NODE_VGPU_REGISTER: &str = "volcano.sh/node-vgpu-register";
/// The pod annotation recording which devices a pod holds: `uuid,type,memoryMiB,cores:` per
/// device (Volcano's `volcano.sh/vgpu-ids-new`).
pub const POD_VGPU_IDS: &str = "volcano.sh/vgpu-ids-new";
/// Pod resource: how many vGPU devices.
pub const VGPU_NUMBER: &str = "volcano.sh/vgpu-number";
/// Pod resource: percentage of each device's cores.
pub const VGPU_CORES: &str = "volcano.sh/vgpu-cores";
/// Pod resource: MiB of each device's memory.
pub const VGPU_MEMORY: &str = "volcano.sh/vgpu-memory";
/// Pod resource: percentage of each device's memory.
pub const VGPU_MEMORY_PERCENTAGE: &str = "volcano.sh/vgpu-memory-percentage";
/// Whole GPUs through the NVIDIA device plugin.
pub const NVIDIA_GPU: &str = "nvidia.com/gpu";
/// Node label naming the GPU model (NVIDIA GPU feature discovery).
pub const GPU_PRODUCT_LABEL: &str = "nvidia.com/gpu.product";
/// Pod annotation: GPU models the pod may use, comma-separated.
pub const USE_GPU_TYPE: &str = "nvidia.com/use-gputype";
/// Pod annotation: GPU models the pod must not use, comma-separated.
pub const NOUSE_GPU_TYPE: &str = "nvidia.com/nouse-gputype";

/// Resources the device accounting owns: they are not counted as node-level scalars, as in
/// Volcano, because only a device can say whether they fit.
pub fn is_device_resource(name: &str) -> bool {
    matches!(name, VGPU_CORES | VGPU_MEMORY | VGPU_MEMORY_PERCENTAGE)
}

/// One GPU of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuDevice {
    /// Device UUID.
    pub uuid: String,
    /// Model, e.g. `NVIDIA-A100`.
    pub model: String,
    /// How many pods may share it.
    pub max_shares: u32,
    /// Memory in MiB; 0 when not tracked.
    pub memory: u64,
    /// Whether the device plugin reports it healthy.
    pub healthy: bool,
    /// Cores held, in thousandths of the device.
    pub used_cores: u32,
    /// Memory held, in MiB.
    pub used_memory: u64,
    /// Pods holding a part of it.
    pub shares: u32,
}

impl GpuDevice {
    /// Cores left, in thousandths.
    #[inline]
    pub fn free_cores(&self) -> u32 {
        DEVICE_MILLI.saturating_sub(self.used_cores)
    }

    /// Whether `req` fits on this device now.
    pub fn fits(&self, req: &GpuRequest) -> bool {
        if !self.healthy || self.shares >= self.max_shares || !req.allows_model(&self.model) {
            return false;
        }
        let memory = req.memory_on(self);
        if self.memory > 0 && self.used_memory.saturating_add(memory) > self.memory {
            return false;
        }
        if self.used_cores.saturating_add(req.cores) > DEVICE_MILLI {
            return false;
        }
        // A whole-device request wants it alone; a request of no cores cannot use a device
        // whose cores are all taken (Volcano's rules).
        !(req.cores >= DEVICE_MILLI && self.shares > 0
            || req.cores == 0 && self.used_cores >= DEVICE_MILLI)
    }
}

/// The GPUs of one node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeGpus {
    /// The devices, by index.
    pub devices: Vec<GpuDevice>,
}

/// What a pod asks of a node's GPUs (Σ over its containers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuRequest {
    /// Devices wanted.
    pub count: u32,
    /// Cores of each device, in thousandths (1000 = the whole device).
    pub cores: u32,
    /// Memory of each device, in MiB (0 = none asked).
    pub memory: u64,
    /// Memory of each device as a percentage, when asked that way.
    pub memory_percent: Option<u32>,
    /// Models allowed (empty = any), upper-cased.
    pub use_models: Vec<String>,
    /// Models refused, upper-cased.
    pub avoid_models: Vec<String>,
}

impl GpuRequest {
    /// Whether a device of `model` may serve this request: Volcano's rule, a case-blind
    /// substring match against `nvidia.com/use-gputype`, else `nvidia.com/nouse-gputype`.
    pub fn allows_model(&self, model: &str) -> bool {
        if self.use_models.is_empty() && self.avoid_models.is_empty() {
            return true;
        }
        let model = model.to_ascii_uppercase();
        if !self.use_models.is_empty() {
            return self.use_models.iter().any(|m| model.contains(m.as_str()));
        }
        !self.avoid_models.iter().any(|m| model.contains(m.as_str()))
    }

    /// The memory this request takes on `d`.
    pub fn memory_on(&self, d: &GpuDevice) -> u64 {
        match self.memory_percent {
            Some(p) => d.memory.saturating_mul(u64::from(p)) / 100,
            None => self.memory,
        }
    }

    /// Whether it shares a device rather than taking whole ones.
    pub fn is_share(&self) -> bool {
        self.cores < DEVICE_MILLI
    }

    /// Reads a pod's GPU request: `volcano.sh/vgpu-number` (with `vgpu-cores`, default the
    /// whole device, and `vgpu-memory` or `vgpu-memory-percentage`), else `nvidia.com/gpu`
    /// as whole devices. `Ok(None)` for a pod that asks for no GPU.
    pub fn from_pod(pod: &Pod) -> Result<Option<GpuRequest>, DeviceError> {
        let Some(spec) = &pod.spec else {
            return Ok(None);
        };
        let (mut count, mut cores, mut memory, mut percent, mut whole) =
            (0u32, 0u32, 0u64, None, 0u32);
        let mut cores_given = false;
        for (i, c) in spec.containers.iter().enumerate() {
            let res = c.resources.as_ref();
            let mut merged = res.and_then(|r| r.requests.clone()).unwrap_or_default();
            for (k, v) in res.and_then(|r| r.limits.clone()).unwrap_or_default() {
                merged.insert(k, v);
            }
            let get = |name: &str, per: i64| -> Result<Option<u64>, DeviceError> {
                let Some(q) = merged.get(name) else {
                    return Ok(None);
                };
                let field = format!("spec.containers[{i}].resources.limits.{name}");
                let milli = canonical_amount(name, &q.0).map_err(|e| DeviceError {
                    field: field.clone(),
                    message: e.to_string(),
                })?;
                u64::try_from(milli / per)
                    .map(Some)
                    .map_err(|_| DeviceError {
                        field,
                        message: "must not be negative".to_string(),
                    })
            };
            if let Some(n) = get(VGPU_NUMBER, 1000)? {
                count = count.saturating_add(clamp_u32(n));
            }
            if let Some(c) = get(VGPU_CORES, 1000)? {
                cores_given = true;
                cores = cores.max(clamp_u32(c.min(100)) * 10);
            }
            if let Some(m) = get(VGPU_MEMORY, 1000)? {
                memory = memory.max(m);
            }
            if let Some(p) = get(VGPU_MEMORY_PERCENTAGE, 1000)? {
                percent = Some(percent.unwrap_or(0).max(clamp_u32(p.min(100))));
            }
            if let Some(n) = get(NVIDIA_GPU, 1000)? {
                whole = whole.saturating_add(clamp_u32(n));
            }
        }
        let annotations = pod.metadata.annotations.as_ref();
        let models = |key: &str| -> Vec<String> {
            annotations
                .and_then(|a| a.get(key))
                .map(|v| {
                    v.split(',')
                        .map(|m| m.trim().to_ascii_uppercase())
                        .filter(|m| !m.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        let (count, cores, memory) = if count > 0 {
            let cores = if cores_given { cores } else { DEVICE_MILLI };
            (count, cores, memory)
        } else if whole > 0 {
            (whole, DEVICE_MILLI, 0)
        } else {
            return Ok(None);
        };
        Ok(Some(GpuRequest {
            count,
            cores,
            memory,
            memory_percent: if count > 0 { percent } else { None },
            use_models: models(USE_GPU_TYPE),
            avoid_models: models(NOUSE_GPU_TYPE),
        }))
    }
}

fn clamp_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// A device annotation or request that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {field}: {message}")]
pub struct DeviceError {
    /// Dotted field path.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl NodeGpus {
    /// A node's devices: from Volcano's `volcano.sh/node-vgpu-register` annotation, else one
    /// device per `nvidia.com/gpu` of allocatable (model from `nvidia.com/gpu.product`, memory
    /// not tracked). `Ok(None)` for a node without GPUs.
    pub fn from_node(node: &Node) -> Result<Option<NodeGpus>, DeviceError> {
        let field = format!("metadata.annotations.{NODE_VGPU_REGISTER}");
        if let Some(reg) = node
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(NODE_VGPU_REGISTER))
        {
            let mut devices = Vec::new();
            for (i, item) in reg.split(':').filter(|s| !s.trim().is_empty()).enumerate() {
                let f: Vec<&str> = item.split(',').map(str::trim).collect();
                let bad = |what: &str| DeviceError {
                    field: field.clone(),
                    message: format!("device {i} ({item:?}): {what}"),
                };
                if f.len() < 6 {
                    return Err(bad("want uuid,count,memoryMiB,type,health,mode (6 fields)"));
                }
                let max_shares: u32 = f[1]
                    .parse()
                    .map_err(|_| bad("count is not a whole number"))?;
                let memory: u64 = f[2]
                    .parse()
                    .map_err(|_| bad("memory is not a whole number of MiB"))?;
                devices.push(GpuDevice {
                    uuid: f[0].to_string(),
                    model: f[3].to_string(),
                    max_shares,
                    memory,
                    healthy: parse_go_bool(f[4]),
                    used_cores: 0,
                    used_memory: 0,
                    shares: 0,
                });
            }
            return Ok((!devices.is_empty()).then_some(NodeGpus { devices }));
        }
        let status = node.status.as_ref();
        let list = status
            .and_then(|s| s.allocatable.as_ref())
            .or_else(|| status.and_then(|s| s.capacity.as_ref()));
        let Some(q) = list.and_then(|l| l.get(NVIDIA_GPU)) else {
            return Ok(None);
        };
        let n = canonical_amount(NVIDIA_GPU, &q.0).map_err(|e| DeviceError {
            field: format!("status.allocatable.{NVIDIA_GPU}"),
            message: e.to_string(),
        })? / 1000;
        if n <= 0 {
            return Ok(None);
        }
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let model = node
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(GPU_PRODUCT_LABEL))
            .cloned()
            .unwrap_or_default();
        let devices = (0..n.min(1024))
            .map(|i| GpuDevice {
                uuid: format!("{name}-gpu-{i}"),
                model: model.clone(),
                max_shares: DEFAULT_SPLIT_COUNT,
                memory: 0,
                healthy: true,
                used_cores: 0,
                used_memory: 0,
                shares: 0,
            })
            .collect();
        Ok(Some(NodeGpus { devices }))
    }

    /// Devices that can take one part of `req` now, in index order.
    pub fn fitting<'a>(&'a self, req: &'a GpuRequest) -> impl Iterator<Item = usize> + 'a {
        self.devices
            .iter()
            .enumerate()
            .filter(move |(_, d)| d.fits(req))
            .map(|(i, _)| i)
    }

    /// Whether `req` fits on this node's devices now.
    pub fn can_fit(&self, req: &GpuRequest) -> bool {
        let want = req.count as usize;
        want == 0
            || self
                .devices
                .iter()
                .filter(|d| d.fits(req))
                .take(want)
                .count()
                == want
    }

    /// The devices best fit would give `req`: for a share, the device with the least cores
    /// left that still fits (lowest index on ties); for whole devices, the lowest-index free
    /// ones. `None` when it does not fit.
    pub fn best_fit(&self, req: &GpuRequest) -> Option<Vec<u8>> {
        let mut fit: Vec<usize> = self.fitting(req).collect();
        if fit.len() < req.count as usize {
            return None;
        }
        // Stable: equal leftovers keep index order.
        fit.sort_by_key(|&i| self.devices[i].free_cores());
        Some(
            fit.into_iter()
                .take(req.count as usize)
                .map(|i| u8::try_from(i).unwrap_or(u8::MAX))
                .collect(),
        )
    }

    /// Devices chosen by `policy` (Volcano's `deviceshare.SchedulePolicy`): `binpack` the
    /// fullest first, `spread` the least shared first, otherwise best fit.
    pub fn choose(&self, req: &GpuRequest, policy: DevicePolicy) -> Option<Vec<u8>> {
        let mut fit: Vec<usize> = self.fitting(req).collect();
        if fit.len() < req.count as usize {
            return None;
        }
        match policy {
            DevicePolicy::BestFit => return self.best_fit(req),
            DevicePolicy::Binpack => fit.sort_by_key(|&i| {
                let d = &self.devices[i];
                (std::cmp::Reverse(d.used_memory), d.free_cores())
            }),
            DevicePolicy::Spread => fit.sort_by_key(|&i| self.devices[i].shares),
        }
        Some(
            fit.into_iter()
                .take(req.count as usize)
                .map(|i| u8::try_from(i).unwrap_or(u8::MAX))
                .collect(),
        )
    }

    /// Takes `req` from the devices `ids`.
    pub fn take(&mut self, ids: &[u8], req: &GpuRequest) {
        for &i in ids {
            if let Some(d) = self.devices.get_mut(usize::from(i)) {
                let memory = req.memory_on(d);
                d.used_cores = d.used_cores.saturating_add(req.cores);
                d.used_memory = d.used_memory.saturating_add(memory);
                d.shares = d.shares.saturating_add(1);
            }
        }
    }

    /// Gives back what [`NodeGpus::take`] took.
    pub fn release(&mut self, ids: &[u8], req: &GpuRequest) {
        for &i in ids {
            if let Some(d) = self.devices.get_mut(usize::from(i)) {
                let memory = req.memory_on(d);
                d.used_cores = d.used_cores.saturating_sub(req.cores);
                d.used_memory = d.used_memory.saturating_sub(memory);
                d.shares = d.shares.saturating_sub(1);
            }
        }
    }

    /// Device indices by UUID, for reading back a pod's `volcano.sh/vgpu-ids-new`.
    pub fn indices_of(&self, annotation: &str) -> Vec<u8> {
        let by_uuid: BTreeMap<&str, usize> = self
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| (d.uuid.as_str(), i))
            .collect();
        annotation
            .split([':', ';'])
            .filter_map(|item| item.split(',').next())
            .filter_map(|uuid| by_uuid.get(uuid.trim()).copied())
            .map(|i| u8::try_from(i).unwrap_or(u8::MAX))
            .collect()
    }

    /// The `volcano.sh/vgpu-ids-new` value for a pod holding `ids` with `req`.
    pub fn assignment(&self, ids: &[u8], req: &GpuRequest) -> String {
        let mut out = String::new();
        for &i in ids {
            if let Some(d) = self.devices.get(usize::from(i)) {
                out.push_str(&format!(
                    "{},{},{},{}:",
                    d.uuid,
                    d.model,
                    req.memory_on(d),
                    req.cores / 10
                ));
            }
        }
        out
    }
}

/// How `deviceshare` picks among the devices a request fits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DevicePolicy {
    /// The device with the least left that fits (the default: it leaves the biggest holes).
    #[default]
    BestFit,
    /// Volcano's `binpack`: the device with the most memory used first.
    Binpack,
    /// Volcano's `spread`: the least shared device first.
    Spread,
}

/// Go's `strconv.ParseBool`, true side.
fn parse_go_bool(v: &str) -> bool {
    matches!(v, "1" | "t" | "T" | "TRUE" | "true" | "True")
}

#[cfg(test)]
mod tests;
