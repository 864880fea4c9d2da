//! A distribution in a few numbers.

use crate::metrics::Stats;

/// Count, mean, nearest-rank percentiles and maximum of `values` (all zero when empty).
pub fn stats(values: &[f64]) -> Stats {
    if values.is_empty() {
        return Stats::default();
    }
    let mut sorted: Vec<f64> = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    // Nearest rank: the smallest value with at least p% of the values at or below it.
    let rank = |p: f64| {
        let r = (p / 100.0 * n as f64).ceil() as usize;
        sorted[r.clamp(1, n) - 1]
    };
    Stats {
        count: n as u64,
        mean: sorted.iter().sum::<f64>() / n as f64,
        p50: rank(50.0),
        p90: rank(90.0),
        p99: rank(99.0),
        max: sorted[n - 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = stats(&v);
        assert_eq!(
            (s.count, s.p50, s.p90, s.p99, s.max),
            (100, 50.0, 90.0, 99.0, 100.0)
        );
        assert!((s.mean - 50.5).abs() < 1e-9);
        let s = stats(&[3.0]);
        assert_eq!((s.p50, s.p99, s.max), (3.0, 3.0, 3.0));
        assert_eq!(stats(&[]), Stats::default());
    }
}
