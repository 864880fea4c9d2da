//! Random draws for the generator, from one seeded `StdRng`: the distributions are written
//! here (inverse CDF and Box-Muller) rather than taken from `rand_distr`, to keep the
//! dependency list short and the arithmetic visible.

use std::f64::consts::PI;

use rand::RngExt;
use rand::rngs::StdRng;

use super::spec::{Arrival, DurationDist, IntRange};

/// Shortest and longest duration drawn: a log-normal tail can otherwise ask for years.
const MIN_DURATION_S: f64 = 1.0;
const MAX_DURATION_S: f64 = 30.0 * 86_400.0;

/// Diurnal arrivals: the hour of the day with the most submissions, and how much busier it
/// is than the average (the quietest hour has `1 - AMPLITUDE` of the average rate).
const PEAK_HOUR: f64 = 14.0;
const AMPLITUDE: f64 = 0.8;

/// A uniform draw in the open interval (0, 1), so logarithms stay finite.
fn open01(rng: &mut StdRng) -> f64 {
    // `random::<f64>()` is in [0, 1); `1 - u` is in (0, 1].
    let u = 1.0 - rng.random::<f64>();
    u.max(f64::MIN_POSITIVE)
}

/// An exponential draw with this mean.
pub(super) fn exponential(rng: &mut StdRng, mean: f64) -> f64 {
    -mean * open01(rng).ln()
}

/// A standard normal draw (Box-Muller; the second value of the pair is dropped so that each
/// call consumes the same number of draws, which keeps a seed's stream easy to reason about).
pub(super) fn standard_normal(rng: &mut StdRng) -> f64 {
    let r = (-2.0 * open01(rng).ln()).sqrt();
    let theta = 2.0 * PI * rng.random::<f64>();
    r * theta.cos()
}

/// A duration in seconds, whole, between one second and thirty days.
pub(super) fn duration(rng: &mut StdRng, dist: &DurationDist) -> u64 {
    let s = match *dist {
        DurationDist::Exponential { mean_s } => exponential(rng, mean_s),
        DurationDist::LogNormal { median_s, sigma } => {
            median_s * (sigma * standard_normal(rng)).exp()
        }
        DurationDist::Uniform { lo_s, hi_s } => lo_s + (hi_s - lo_s) * rng.random::<f64>(),
        DurationDist::Fixed { s } => s,
    };
    // `as` saturates and maps NaN to 0, and the clamp keeps the result in range anyway.
    s.round().clamp(MIN_DURATION_S, MAX_DURATION_S) as u64
}

/// A uniform draw in [0, 1).
pub(super) fn unit(rng: &mut StdRng) -> f64 {
    rng.random::<f64>()
}

/// A whole number in the inclusive range (bounds taken in either order: a spec built by
/// hand has not been through the parser's checks).
pub(super) fn int(rng: &mut StdRng, range: IntRange) -> u32 {
    rng.random_range(range.lo.min(range.hi)..=range.lo.max(range.hi))
}

/// One of `choices`, uniformly; `None` only when there are none.
pub(super) fn pick<T: Copy>(rng: &mut StdRng, choices: &[T]) -> Option<T> {
    if choices.is_empty() {
        return None;
    }
    choices.get(rng.random_range(0..choices.len())).copied()
}

/// An index drawn with probability proportional to its weight (uniform when all are zero).
pub(super) fn weighted(rng: &mut StdRng, weights: &[u32]) -> usize {
    let total: u64 = weights.iter().map(|w| u64::from(*w)).sum();
    if total == 0 {
        return rng.random_range(0..weights.len().max(1));
    }
    let mut x = rng.random_range(0..total);
    for (i, w) in weights.iter().enumerate() {
        let w = u64::from(*w);
        if x < w {
            return i;
        }
        x -= w;
    }
    weights.len().saturating_sub(1)
}

/// Submission times of `jobs` jobs, in seconds, in order.
pub(super) fn arrivals(rng: &mut StdRng, arrival: Arrival, jobs: u32, over_s: f64) -> Vec<u64> {
    let n = jobs as usize;
    if over_s <= 0.0 || n == 0 {
        return vec![0; n];
    }
    let mut times: Vec<f64> = match arrival {
        Arrival::Poisson => {
            let mean_gap = over_s / f64::from(jobs);
            let mut t = 0.0;
            (0..n)
                .map(|_| {
                    t += exponential(rng, mean_gap);
                    t
                })
                .collect()
        }
        Arrival::Uniform => {
            let gap = over_s / f64::from(jobs);
            (0..n).map(|i| i as f64 * gap).collect()
        }
        Arrival::Diurnal => (0..n).map(|_| diurnal_time(rng, over_s)).collect(),
    };
    times.sort_by(f64::total_cmp);
    times.into_iter().map(|t| t.round() as u64).collect()
}

/// One time in [0, over) by rejection from a density that follows the hour of the day.
fn diurnal_time(rng: &mut StdRng, over_s: f64) -> f64 {
    // Acceptance is at least (1 - A) / (1 + A), about 11%: 200 tries fail with odds below
    // 1e-10, and then the last candidate is taken rather than looping on.
    let mut t = 0.0;
    for _ in 0..200 {
        t = over_s * rng.random::<f64>();
        let hour = (t / 3600.0) % 24.0;
        let density = 1.0 + AMPLITUDE * (2.0 * PI * (hour - PEAK_HOUR) / 24.0).cos();
        if rng.random::<f64>() * (1.0 + AMPLITUDE) < density {
            break;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn exponential_mean_is_close() {
        let mut rng = StdRng::seed_from_u64(7);
        let n = 20_000;
        let mean = (0..n).map(|_| exponential(&mut rng, 60.0)).sum::<f64>() / n as f64;
        assert!((mean - 60.0).abs() < 3.0, "mean {mean}");
    }

    #[test]
    fn lognormal_median_is_close() {
        let mut rng = StdRng::seed_from_u64(7);
        let dist = DurationDist::LogNormal {
            median_s: 600.0,
            sigma: 1.0,
        };
        let mut draws: Vec<u64> = (0..10_001).map(|_| duration(&mut rng, &dist)).collect();
        draws.sort_unstable();
        let median = draws[5_000] as f64;
        assert!((median - 600.0).abs() < 40.0, "median {median}");
    }

    #[test]
    fn diurnal_peaks_in_the_afternoon() {
        let mut rng = StdRng::seed_from_u64(3);
        let times = arrivals(&mut rng, Arrival::Diurnal, 5_000, 86_400.0);
        let afternoon = times
            .iter()
            .filter(|t| (43_200..57_600).contains(*t))
            .count();
        let night = times.iter().filter(|t| **t < 14_400).count();
        assert!(
            afternoon > 3 * night,
            "afternoon {afternoon}, night {night}"
        );
    }

    #[test]
    fn weighted_follows_weights_and_survives_zeroes() {
        let mut rng = StdRng::seed_from_u64(1);
        let hits = (0..4_000)
            .filter(|_| weighted(&mut rng, &[3, 1]) == 0)
            .count();
        assert!((2_800..3_200).contains(&hits), "hits {hits}");
        assert!(weighted(&mut rng, &[0, 0]) < 2);
    }
}
