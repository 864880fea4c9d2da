//! Resources as integer vectors: one `i64` per dimension of the snapshot's [`Dims`].
//!
//! Units: milli-CPU, bytes of memory (and other byte resources), thousandths of every other
//! scalar (`pods`, `nvidia.com/gpu`). No operation here panics: arithmetic saturates, vectors of
//! different lengths are compared as if the shorter one were padded with zeros, and a
//! subtraction that would go negative is either reported ([`Resource::checked_sub`]) or kept as a
//! representable negative value ([`Resource::sub_saturating`]), never asserted.

use std::sync::Arc;

use volcano_api::resources::{self, CPU, MEMORY, PODS};

/// An amount no resource reaches: stands for "no limit" on a dimension.
pub const UNBOUNDED: i64 = i64::MAX;

/// Index of CPU in every resource vector.
pub const CPU_DIM: usize = 0;
/// Index of memory in every resource vector.
pub const MEMORY_DIM: usize = 1;
/// Index of the pod count in every resource vector.
pub const PODS_DIM: usize = 2;

/// The resource dimensions of one snapshot: `cpu`, `memory`, `pods`, then every other resource
/// name seen in the snapshot, sorted by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dims {
    names: Arc<[String]>,
}

impl Dims {
    /// Dimensions for the given extra resource names (duplicates and the three built-ins are
    /// ignored).
    pub fn new<'a>(extra: impl IntoIterator<Item = &'a str>) -> Self {
        let mut scalars: Vec<String> = extra
            .into_iter()
            .filter(|n| *n != CPU && *n != MEMORY && *n != PODS && !n.starts_with("count/"))
            .map(str::to_string)
            .collect();
        scalars.sort();
        scalars.dedup();
        let mut names = vec![CPU.to_string(), MEMORY.to_string(), PODS.to_string()];
        names.extend(scalars);
        Dims {
            names: names.into(),
        }
    }

    /// Number of dimensions.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Always false: cpu, memory and pods are always present.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The name of dimension `i`.
    pub fn name(&self, i: usize) -> &str {
        self.names.get(i).map(String::as_str).unwrap_or("unknown")
    }

    /// The dimension of a resource name, if the snapshot knows it.
    pub fn index(&self, name: &str) -> Option<usize> {
        match name {
            CPU => Some(CPU_DIM),
            MEMORY => Some(MEMORY_DIM),
            PODS => Some(PODS_DIM),
            _ => self.names[3..]
                .binary_search_by(|n| n.as_str().cmp(name))
                .ok()
                .map(|i| i + 3),
        }
    }

    /// A zero vector of this shape.
    pub fn zero(&self) -> Resource {
        Resource(smallvec::smallvec![0; self.len()])
    }

    /// A vector with every dimension unbounded.
    pub fn unbounded(&self) -> Resource {
        Resource(smallvec::smallvec![UNBOUNDED; self.len()])
    }

    /// Builds a vector from (name, canonical amount) pairs; unknown names are ignored.
    pub fn resource<'a>(&self, pairs: impl IntoIterator<Item = (&'a str, i64)>) -> Resource {
        let mut r = self.zero();
        for (name, v) in pairs {
            if let Some(i) = self.index(name) {
                r.set(i, v);
            }
        }
        r
    }

    /// Formats a vector as `cpu 2, memory 4Gi, nvidia.com/gpu 1` (zero dimensions omitted).
    pub fn describe(&self, r: &Resource) -> String {
        let parts: Vec<String> =
            r.0.iter()
                .enumerate()
                .filter(|(_, v)| **v != 0)
                .map(|(i, v)| format!("{} {}", self.name(i), self.format(i, *v)))
                .collect();
        if parts.is_empty() {
            "nothing".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// Formats one amount of dimension `i` as a Kubernetes quantity in its human form (for
    /// messages: `307.19Gi`, never a raw byte count).
    pub fn format(&self, i: usize, v: i64) -> String {
        if v == UNBOUNDED {
            return "unlimited".to_string();
        }
        resources::format_amount_human(self.name(i), v)
    }
}

/// Dimensions a vector holds without a heap allocation: cpu, memory, pods and one scalar
/// (a GPU) cover most clusters, and the node scan of every task reads these vectors in place.
const INLINE_DIMS: usize = 4;

/// An amount of every dimension of the snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Resource(smallvec::SmallVec<[i64; INLINE_DIMS]>);

impl Resource {
    /// The amount of dimension `i` (zero when absent).
    #[inline]
    pub fn get(&self, i: usize) -> i64 {
        self.0.get(i).copied().unwrap_or(0)
    }

    /// Sets dimension `i`, growing the vector if needed.
    pub fn set(&mut self, i: usize, v: i64) {
        if i >= self.0.len() {
            self.0.resize(i + 1, 0);
        }
        self.0[i] = v;
    }

    /// Number of dimensions stored.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no dimension is stored at all.
    pub fn is_empty_vec(&self) -> bool {
        self.0.is_empty()
    }

    /// Milli-CPU.
    pub fn cpu(&self) -> i64 {
        self.get(CPU_DIM)
    }

    /// Bytes of memory.
    pub fn memory(&self) -> i64 {
        self.get(MEMORY_DIM)
    }

    fn zip_mut(&mut self, other: &Resource, f: impl Fn(i64, i64) -> i64) {
        if other.0.len() > self.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (i, a) in self.0.iter_mut().enumerate() {
            *a = f(*a, other.get(i));
        }
    }

    /// `self += other`, saturating; unbounded stays unbounded.
    pub fn add(&mut self, other: &Resource) {
        self.zip_mut(other, |a, b| {
            if a == UNBOUNDED || b == UNBOUNDED {
                UNBOUNDED
            } else {
                a.saturating_add(b)
            }
        });
    }

    /// `self -= other`, saturating, possibly leaving negative dimensions. Used where a negative
    /// value is meaningful (a node whose pods need more than it has).
    pub fn sub_saturating(&mut self, other: &Resource) {
        self.zip_mut(other, |a, b| {
            if a == UNBOUNDED {
                UNBOUNDED
            } else {
                a.saturating_sub(b)
            }
        });
    }

    /// `self - other` per dimension, clamped at zero (Volcano's `ExceededPart`).
    pub fn exceeded_part(&self, other: &Resource) -> Resource {
        let mut r = self.clone();
        r.zip_mut(other, |a, b| {
            if a == UNBOUNDED {
                UNBOUNDED
            } else {
                a.saturating_sub(b).max(0)
            }
        });
        r
    }

    /// `self - other` if `other` fits in `self` on every dimension, else the dimensions that
    /// fall short.
    pub fn checked_sub(&self, other: &Resource) -> Result<Resource, Vec<usize>> {
        let short: Vec<usize> = (0..self.len().max(other.len()))
            .filter(|&i| other.get(i) > self.get(i))
            .collect();
        if short.is_empty() {
            let mut r = self.clone();
            r.sub_saturating(other);
            Ok(r)
        } else {
            Err(short)
        }
    }

    /// Per-dimension minimum.
    pub fn min_with(&mut self, other: &Resource) {
        self.zip_mut(other, i64::min);
    }

    /// Per-dimension maximum.
    pub fn max_with(&mut self, other: &Resource) {
        self.zip_mut(other, i64::max);
    }

    /// Whether every dimension of `self` is ≤ the same dimension of `avail`.
    #[inline]
    pub fn fits_in(&self, avail: &Resource) -> bool {
        // On slices, as this runs for every task and node a scan looks at.
        let (req, avail) = (self.0.as_slice(), avail.0.as_slice());
        let common = req.len().min(avail.len());
        req[..common]
            .iter()
            .zip(&avail[..common])
            .all(|(r, a)| r <= a)
            && req[common..].iter().all(|&r| r <= 0)
            && avail[common..].iter().all(|&a| a >= 0)
    }

    /// The dimensions on which `self` does not fit in `avail`.
    pub fn insufficient<'a>(&'a self, avail: &'a Resource) -> impl Iterator<Item = usize> + 'a {
        (0..self.len().max(avail.len())).filter(move |&i| self.get(i) > avail.get(i))
    }

    /// Whether `self ≤ limit` on the dimensions where `req` is positive, ignoring the pod count
    /// (Volcano's `LessEqualWithDimension`).
    pub fn fits_in_on_requested(&self, limit: &Resource, req: &Resource) -> bool {
        (0..req.len())
            .filter(|&i| i != PODS_DIM && req.get(i) > 0)
            .all(|i| self.get(i) <= limit.get(i))
    }

    /// Whether every dimension but the pod count is zero (a BestEffort request).
    pub fn is_empty(&self) -> bool {
        self.0
            .iter()
            .enumerate()
            .all(|(i, &v)| i == PODS_DIM || v == 0)
    }

    /// Whether every dimension is zero.
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|&v| v == 0)
    }

    /// Whether any dimension is negative.
    pub fn has_negative(&self) -> bool {
        self.0.iter().any(|&v| v < 0)
    }

    /// The dimensions with a non-zero amount.
    pub fn nonzero_dims(&self) -> impl Iterator<Item = usize> + '_ {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != 0)
            .map(|(i, _)| i)
    }

    /// Iterates over (dimension, amount).
    pub fn iter(&self) -> impl Iterator<Item = (usize, i64)> + '_ {
        self.0.iter().copied().enumerate()
    }
}

/// `num / den` as a share: 0 when both are zero, 1 when only the denominator is.
pub fn share(num: i64, den: i64) -> f64 {
    if den == 0 {
        if num == 0 { 0.0 } else { 1.0 }
    } else {
        num as f64 / den as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims() -> Dims {
        Dims::new(["nvidia.com/gpu"])
    }

    #[test]
    fn dims_put_builtins_first_and_scalars_sorted() {
        let d = Dims::new(["z/x", "nvidia.com/gpu", "cpu", "z/x"]);
        assert_eq!(d.len(), 5);
        assert_eq!(d.index("nvidia.com/gpu"), Some(3));
        assert_eq!(d.index("z/x"), Some(4));
        assert_eq!(d.index("other"), None);
    }

    #[test]
    fn subtraction_below_zero_is_reported_not_asserted() {
        let d = dims();
        let small = d.resource([("cpu", 1000)]);
        let big = d.resource([("cpu", 3000), ("nvidia.com/gpu", 1000)]);
        assert_eq!(small.checked_sub(&big), Err(vec![CPU_DIM, 3]));
        let mut idle = small.clone();
        idle.sub_saturating(&big);
        assert_eq!(idle.cpu(), -2000);
        assert!(idle.has_negative());
        assert!(!d.resource([("cpu", 1)]).fits_in(&idle));
    }

    #[test]
    fn saturating_arithmetic_never_overflows() {
        let d = dims();
        let mut a = d.resource([("cpu", i64::MAX - 1)]);
        a.add(&d.resource([("cpu", 10)]));
        assert_eq!(a.cpu(), UNBOUNDED);
        let mut b = d.resource([("cpu", i64::MIN + 1)]);
        b.sub_saturating(&d.resource([("cpu", 10)]));
        assert_eq!(b.cpu(), i64::MIN);
    }

    #[test]
    fn a_dimension_stored_on_one_side_only_counts_as_zero_on_the_other() {
        let gpu = |v: i64| {
            let mut r = Resource::default();
            r.set(3, v);
            r
        };
        let cpu = |v: i64| {
            let mut r = Resource::default();
            r.set(CPU_DIM, v);
            r
        };
        // A GPU request does not fit a node that lists no GPUs; a node short of GPUs (shrunk
        // below its pods) takes no pod at all, however little it asks.
        assert!(!gpu(1000).fits_in(&cpu(4000)));
        assert!(gpu(0).fits_in(&cpu(4000)));
        assert!(!cpu(0).fits_in(&gpu(-1000)));
        assert!(cpu(0).fits_in(&gpu(0)));
        assert!(!cpu(5000).fits_in(&cpu(4000)));
        assert!(cpu(4000).fits_in(&cpu(4000)));
    }

    #[test]
    fn best_effort_ignores_pod_count() {
        let d = dims();
        assert!(d.resource([("pods", 1000)]).is_empty());
        assert!(!d.resource([("pods", 1000), ("cpu", 1)]).is_empty());
    }

    #[test]
    fn fits_on_requested_dimensions_only() {
        let d = dims();
        let used = d.resource([("cpu", 5000), ("memory", 10)]);
        let limit = d.resource([("cpu", 4000), ("memory", 100)]);
        let mem_only = d.resource([("memory", 5), ("pods", 1000)]);
        assert!(used.fits_in_on_requested(&limit, &mem_only));
        assert!(!used.fits_in_on_requested(&limit, &d.resource([("cpu", 1)])));
    }

    #[test]
    fn describe_uses_kubernetes_quantities() {
        let d = dims();
        let r = d.resource([("cpu", 1500), ("memory", 2 << 30), ("nvidia.com/gpu", 2000)]);
        assert_eq!(d.describe(&r), "cpu 1500m, memory 2Gi, nvidia.com/gpu 2");
        // A byte count no binary suffix divides is still shown in Gi, not as raw bytes.
        let odd = d.resource([("memory", 329_853_488_332)]);
        assert_eq!(d.describe(&odd), "memory 307.19Gi");
    }
}
