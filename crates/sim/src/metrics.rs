//! What a run measured, in the schema shared with real runs (`cosched_report::Measurement`).
//!
//! Seed: `000_e8004e1596fde6a5.txt` §4.1.1 (metrics) and §4.2.2 (fairness window of the Mixed workload).
//!
//! ## Terminology
//! - job response time — wall-clock time from the job's start to its completion (s);
//! - CPU time — CPU used by the job's processes, context-switch time charged to them included (s);
//! - fairness `F = N × Tc / Te` per process — `Tc` its CPU time over the measuring window, `Te` the window,
//!   `N` the number of processes sharing its CPU when its job started (itself, competitors and sequential jobs
//!   bound there). The window is the job's own lifetime for job processes and the whole run for competitors;
//!   in the Mixed workload (jobs of different lengths) it is the period until the first job terminates, for
//!   every process (seed §4.2.2);
//! - iteration time — Latency: a round trip seen by the sender; Barrier / Mixed: the time between consecutive
//!   iterations of the root;
//! - reaction — message arrival → its receiver executing on a CPU (0 when it was already running).
//!
//! ## Approach
//! Durations go into a log histogram with 32 linear sub-buckets per doubling (percentiles within ±1.6 %), and into the
//! report's coarse histogram with 4 buckets per decade from 1 µs to 10 s (edges `10^(k/4)` µs) plus an
//! open-ended last bucket.

use cosched_policy::Nanos;
use cosched_report::buckets::{bucket_edges_ns, bucket_of, histogram_from_counts, BUCKET_EDGES};
use cosched_report::Histogram;

/// Fine buckets: 32 linear sub-buckets per doubling of `ns + 1`, over the whole `u64` range.
const SUB_BUCKETS: u32 = 32;
const FINE_BUCKETS: usize = 64 * SUB_BUCKETS as usize;
/// Coarse report buckets (`cosched_report::buckets`).
const COARSE_EDGES: usize = BUCKET_EDGES;

/// A histogram of durations in nanoseconds.
#[derive(Clone, Debug)]
pub struct DurationHistogram {
    fine: Vec<u64>,
    coarse: [u64; COARSE_EDGES + 1],
    /// The coarse upper edges in ns, `round(1000 × 10^(k/4))`.
    coarse_edges_ns: [u64; COARSE_EDGES],
    /// The coarse bucket of every value of a fine bucket, or [`AMBIGUOUS`] when a coarse edge cuts the fine
    /// bucket (then the edge is searched): recording stays exact and usually costs two table look-ups.
    fine_to_coarse: Vec<u8>,
    count: u64,
}

const AMBIGUOUS: u8 = u8::MAX;

fn coarse_of(edges: &[u64; COARSE_EDGES], ns: Nanos) -> usize {
    bucket_of(edges, ns)
}

impl Default for DurationHistogram {
    fn default() -> Self {
        let coarse_edges_ns = bucket_edges_ns();
        let fine_to_coarse = (0..FINE_BUCKETS)
            .map(|i| {
                let lowest = fine_lower(i).ceil() as u64;
                let highest = (fine_lower(i + 1).ceil() as u64)
                    .saturating_sub(1)
                    .max(lowest);
                let (a, b) = (
                    coarse_of(&coarse_edges_ns, lowest),
                    coarse_of(&coarse_edges_ns, highest),
                );
                if a == b {
                    a as u8
                } else {
                    AMBIGUOUS
                }
            })
            .collect();
        DurationHistogram {
            fine: vec![0; FINE_BUCKETS],
            coarse: [0; COARSE_EDGES + 1],
            coarse_edges_ns,
            fine_to_coarse,
            count: 0,
        }
    }
}

/// Fine bucket of `ns`: with `v = ns + 1 = 2^e (1 + m)`, `0 <= m < 1`, the bucket is `32 e + floor(32 m)`.
fn fine_index(ns: Nanos) -> usize {
    let v = ns.saturating_add(1);
    let e = 63 - v.leading_zeros();
    let sub = if e >= 5 {
        (v >> (e - 5)) & 31
    } else {
        (v << (5 - e)) & 31
    };
    (e * SUB_BUCKETS + sub as u32) as usize
}

/// Smallest `ns` in fine bucket `i`: `2^e (1 + sub / 32) - 1`.
fn fine_lower(i: usize) -> f64 {
    let (e, sub) = (i as u32 / SUB_BUCKETS, i as u32 % SUB_BUCKETS);
    (e as f64).exp2() * (1.0 + sub as f64 / SUB_BUCKETS as f64) - 1.0
}

impl DurationHistogram {
    /// Adds one duration.
    pub fn record(&mut self, ns: Nanos) {
        let fine = fine_index(ns);
        self.fine[fine] += 1;
        let coarse = match self.fine_to_coarse[fine] {
            AMBIGUOUS => coarse_of(&self.coarse_edges_ns, ns),
            k => k as usize,
        };
        self.coarse[coarse] += 1;
        self.count += 1;
    }

    /// Durations recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The `q`-quantile (0..=1) in microseconds: the middle of the bucket holding the `ceil(q × count)`-th
    /// smallest value (within ±1.6 %); `None` when empty.
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.fine.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let ns = if i == 0 {
                    0.0
                } else {
                    (fine_lower(i) + fine_lower(i + 1)) / 2.0
                };
                return Some(ns / 1000.0);
            }
        }
        unreachable!("rank <= count")
    }

    /// The fraction of durations in the lowest non-empty coarse (quarter-decade) bucket: seed `002` Figure 3's
    /// "fastest bin"; `None` when empty.
    pub fn fraction_in_fastest_bucket(&self) -> Option<f64> {
        let lowest = self.coarse.iter().find(|&&c| c > 0)?;
        Some(*lowest as f64 / self.count as f64)
    }

    /// The fraction of durations above `ns` (at the fine buckets' precision, ±1.6 %); `None` when empty.
    pub fn fraction_above(&self, ns: Nanos) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let above: u64 = self.fine[fine_index(ns) + 1..].iter().sum();
        Some(above as f64 / self.count as f64)
    }

    /// The report's coarse histogram.
    pub fn to_report(&self) -> Histogram {
        histogram_from_counts(&self.coarse_edges_ns, &self.coarse)
    }
}

/// What one measured (parallel) job did; every measured job of a run has one, in job order.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasuredJob {
    /// Its index among the run's jobs.
    pub job: u32,
    pub name: String,
    /// When it started and finished (`None`: it did not, within the run).
    pub started_ns: Option<Nanos>,
    pub finished_ns: Option<Nanos>,
    /// Units of work done (its root's `Iteration`s) and asked for.
    pub work_done: u64,
    pub work_expected: u64,
    /// Median and 99th percentile of its iteration times (µs), when it did any.
    pub iteration_p50_us: Option<f64>,
    pub iteration_p99_us: Option<f64>,
    /// CPU time its processes spent spinning on receives and computing.
    pub spin_ns: Nanos,
    pub compute_ns: Nanos,
}

impl MeasuredJob {
    /// Its figures as `<name>.<figure>` entries of a measurement's extras (for every measured job but the
    /// first, whose figures are the measurement's own fields).
    pub fn add_to_extra(&self, extra: &mut std::collections::BTreeMap<String, f64>) {
        let seconds = |ns: Nanos| ns as f64 / 1e9;
        let mut put = |figure: &str, value: f64| {
            extra.insert(format!("{}.{figure}", self.name), value);
        };
        put("work_done", self.work_done as f64);
        put("work_expected", self.work_expected as f64);
        if let Some(start) = self.started_ns {
            put("start_s", seconds(start));
        }
        if let Some(end) = self.finished_ns {
            put("end_s", seconds(end));
        }
        if let (Some(p50), Some(p99)) = (self.iteration_p50_us, self.iteration_p99_us) {
            put("iteration_p50_us", p50);
            put("iteration_p99_us", p99);
        }
        put("spin_s", seconds(self.spin_ns));
        put("compute_s", seconds(self.compute_ns));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_land_within_the_bucket_precision() {
        // 99 values of 80 µs and one of 500 ms: p50 ≈ 80 µs, p99 ≈ 80 µs (the 99th value), max bucket 500 ms.
        let mut h = DurationHistogram::default();
        for _ in 0..99 {
            h.record(80_000);
        }
        h.record(500_000_000);
        let p50 = h.quantile_us(0.5).unwrap();
        assert!((p50 - 80.0).abs() / 80.0 < 0.016, "p50 {p50}");
        assert!((h.quantile_us(0.99).unwrap() - 80.0).abs() / 80.0 < 0.022);
        assert!((h.quantile_us(1.0).unwrap() - 500_000.0).abs() / 500_000.0 < 0.022);
    }

    #[test]
    fn fine_buckets_are_ordered_and_tight() {
        // Every bucket's lower bound maps back to it, and bucket widths are at most 1/32 of the value.
        for ns in [
            0u64,
            1,
            2,
            3,
            31,
            32,
            33,
            80_000,
            80_499,
            1_000_000_007,
            u64::MAX / 3,
        ] {
            let i = fine_index(ns);
            assert!(
                fine_lower(i) <= ns as f64 + 1e-6 && (ns as f64) < fine_lower(i + 1) + 1.0,
                "ns = {ns}"
            );
        }
        // Around 80 µs a bucket is 2^16 / 32 = 2048 ns wide: 80,000 and 83,000 fall in neighbouring buckets.
        assert_eq!(fine_index(80_000) + 1, fine_index(83_000));
    }

    #[test]
    fn the_coarse_shortcut_agrees_with_the_edge_search() {
        // Every value near every coarse edge, and a sweep of durations: table look-up == binary search.
        let h = DurationHistogram::default();
        let mut values: Vec<u64> = (0..200_000u64).step_by(7).collect();
        for &edge in &h.coarse_edges_ns {
            values.extend(edge.saturating_sub(3)..=edge + 3);
        }
        values.push(u64::MAX);
        for ns in values {
            let fine = fine_index(ns);
            let shortcut = match h.fine_to_coarse[fine] {
                AMBIGUOUS => coarse_of(&h.coarse_edges_ns, ns),
                k => k as usize,
            };
            assert_eq!(shortcut, coarse_of(&h.coarse_edges_ns, ns), "ns = {ns}");
        }
    }

    #[test]
    fn the_fastest_bucket_and_the_tail_are_fractions_of_all() {
        // 996 round trips of 16 µs, 3 of 5 ms, 1 of 1 s: 99.6 % in the fastest bucket, 0.4 % above 2 ms.
        let mut h = DurationHistogram::default();
        for _ in 0..996 {
            h.record(16_000);
        }
        for _ in 0..3 {
            h.record(5_000_000);
        }
        h.record(1_000_000_000);
        assert_eq!(h.fraction_in_fastest_bucket(), Some(0.996));
        assert_eq!(h.fraction_above(2_000_000), Some(0.004));
        assert_eq!(DurationHistogram::default().fraction_above(1), None);
    }

    #[test]
    fn zero_is_exact_and_the_coarse_histogram_counts_everything() {
        let mut h = DurationHistogram::default();
        h.record(0);
        h.record(0);
        h.record(40_000); // 40 µs: 10^(6/4) = 31.6 < 40 <= 10^(7/4) = 56.2 → bucket k = 7
        assert_eq!(h.quantile_us(0.5), Some(0.0));
        let r = h.to_report();
        assert_eq!(r.counts.iter().sum::<u64>(), 3);
        assert_eq!(r.counts[0], 2);
        assert_eq!(r.counts[7], 1);
        assert_eq!(r.upper_edges_us.len() + 1, r.counts.len());
    }
}
