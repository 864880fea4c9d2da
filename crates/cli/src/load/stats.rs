//! The figures of a run from its instants: latency percentiles, rates and drain time. Pure:
//! instants come in as offsets from the run's start, so tests state them directly.

use std::time::Duration;

use serde::Serialize;

/// Latency percentiles of the pods bound, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Latency {
    /// Pods measured.
    pub count: usize,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest.
    pub max_ms: f64,
    /// Mean.
    pub mean_ms: f64,
}

/// The `q`-quantile (0 < q ≤ 1) of sorted values by nearest rank: the smallest value with at
/// least `q` of the values at or below it, so p99 of 100 values is the 99th, never an
/// interpolation between two pods.
pub fn nearest_rank(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    // Exact for any count a run can reach (far below 2^52).
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

/// Millisecond figure with 0.1 ms resolution, as reported.
fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}

/// Percentiles of the latencies; `None` when no pod was bound.
pub fn latency(latencies: &[Duration]) -> Option<Latency> {
    let mut values: Vec<f64> = latencies.iter().map(|d| ms(*d)).collect();
    values.sort_by(f64::total_cmp);
    let pick = |q| nearest_rank(&values, q);
    let total: Duration = latencies.iter().sum();
    let mean = total / u32::try_from(latencies.len().max(1)).unwrap_or(u32::MAX);
    Some(Latency {
        count: values.len(),
        p50_ms: pick(0.50)?,
        p90_ms: pick(0.90)?,
        p99_ms: pick(0.99)?,
        max_ms: *values.last()?,
        mean_ms: ms(mean),
    })
}

/// Events per second over the span from the first to the last of `instants`: n events
/// make n − 1 intervals. `None` with fewer than two events or no time between them.
pub fn rate(instants: &[Duration]) -> Option<f64> {
    let first = instants.iter().min()?;
    let last = instants.iter().max()?;
    let span = last.saturating_sub(*first).as_secs_f64();
    // Counts far below 2^52 convert exactly.
    let intervals = instants.len().saturating_sub(1) as f64;
    (span > 0.0 && intervals > 0.0).then(|| round2(intervals / span))
}

/// Seconds from the last arrival to the last binding; `None` when nothing was bound.
pub fn drain(arrivals: &[Duration], binds: &[Duration]) -> Option<f64> {
    let last_arrival = arrivals.iter().max().copied().unwrap_or_default();
    let last_bind = binds.iter().max()?;
    Some(round3(last_bind.saturating_sub(last_arrival).as_secs_f64()))
}

/// Two decimals, for rates.
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Three decimals, for seconds.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn millis(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|m| Duration::from_millis(*m)).collect()
    }

    #[test]
    fn nearest_rank_picks_a_measured_value() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.5), Some(50.0));
        assert_eq!(nearest_rank(&v, 0.99), Some(99.0));
        assert_eq!(nearest_rank(&v, 1.0), Some(100.0));
        assert_eq!(nearest_rank(&[7.0], 0.99), Some(7.0));
        assert_eq!(nearest_rank(&[], 0.5), None);
        // 60 pods: p99 is the slowest, p90 the 54th.
        let v: Vec<f64> = (1..=60).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.99), Some(60.0));
        assert_eq!(nearest_rank(&v, 0.9), Some(54.0));
    }

    #[test]
    fn latency_sorts_and_summarizes() {
        let l = latency(&millis(&[30, 10, 20, 40])).unwrap();
        assert_eq!(
            (l.count, l.p50_ms, l.p90_ms, l.p99_ms),
            (4, 20.0, 40.0, 40.0)
        );
        assert_eq!((l.max_ms, l.mean_ms), (40.0, 25.0));
        assert_eq!(latency(&[]), None);
        let sub = latency(&[Duration::from_micros(1_250)]).unwrap();
        assert_eq!(sub.p50_ms, 1.3);
    }

    #[test]
    fn rates_count_intervals_and_drain_starts_at_the_last_arrival() {
        // 11 arrivals 100 ms apart: 10 per second.
        let arrivals: Vec<Duration> = (0..=10).map(|i| Duration::from_millis(i * 100)).collect();
        assert_eq!(rate(&arrivals), Some(10.0));
        assert_eq!(rate(&millis(&[5])), None);
        assert_eq!(rate(&millis(&[5, 5])), None);
        assert_eq!(drain(&arrivals, &millis(&[900, 1_250])), Some(0.25));
        assert_eq!(drain(&arrivals, &millis(&[900])), Some(0.0));
        assert_eq!(drain(&arrivals, &[]), None);
    }
}
