//! Timing: latency percentiles, the report's log-bucket histogram, and CPU time.
//!
//! Percentiles come from an HDR histogram (3 significant digits, 1 ns .. 1 h), so a run of any length uses
//! fixed memory and recording costs a few nanoseconds. The histogram printed in the result line has the
//! report's buckets (`cosched_report::buckets`, the simulator's too), so real and simulated round-trip histograms
//! compare bucket by bucket.

use cosched_report::buckets::{bucket_edges_ns, bucket_of, histogram_from_counts, BUCKET_EDGES};
use cosched_report::Histogram;
use hdrhistogram::Histogram as Hdr;
use serde::Serialize;

/// Durations of one kind (round trips, barrier iterations, bursts), in nanoseconds.
#[derive(Debug)]
pub struct LatencyRecorder {
    hdr: Hdr<u64>,
    coarse_edges_ns: [u64; BUCKET_EDGES],
    coarse: [u64; BUCKET_EDGES + 1],
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder {
            hdr: Hdr::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid HDR bounds"),
            coarse_edges_ns: bucket_edges_ns(),
            coarse: [0; BUCKET_EDGES + 1],
        }
    }
}

/// Percentiles and histogram of recorded durations, microseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
    pub max_us: f64,
    /// The durations shorter than [`PROMPT_NS`]: their count and their sum, microseconds.
    pub prompt_count: u64,
    pub prompt_total_us: f64,
    pub histogram: Histogram,
}

/// A round trip shorter than this lost no time slice on the way: every rank it passed through was on a CPU (or
/// got one at once). For two spinning ranks that share their CPUs with competitors, the sum of such round trips
/// is the time they were coscheduled. 100 µs is well above this machine's round trip (8–15 µs) and below the
/// shortest time slice a competitor takes (the scheduler's 750 µs base slice).
pub const PROMPT_NS: u64 = 100_000;

impl LatencyRecorder {
    /// Record one duration.
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.hdr.saturating_record(ns.max(1));
        self.coarse[bucket_of(&self.coarse_edges_ns, ns)] += 1;
    }

    pub fn count(&self) -> u64 {
        self.hdr.len()
    }

    /// The summary, or `None` if nothing was recorded.
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.hdr.is_empty() {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        let (mut prompt_count, mut prompt_ns) = (0u64, 0f64);
        for v in self.hdr.iter_recorded() {
            let value = self.hdr.median_equivalent(v.value_iterated_to());
            if value >= PROMPT_NS {
                break;
            }
            prompt_count += v.count_at_value();
            prompt_ns += value as f64 * v.count_at_value() as f64;
        }
        Some(LatencySummary {
            count: self.hdr.len(),
            p50_us: us(self.hdr.value_at_quantile(0.50)),
            p90_us: us(self.hdr.value_at_quantile(0.90)),
            p99_us: us(self.hdr.value_at_quantile(0.99)),
            mean_us: self.hdr.mean() / 1000.0,
            max_us: us(self.hdr.max()),
            prompt_count,
            prompt_total_us: prompt_ns / 1000.0,
            histogram: histogram_from_counts(&self.coarse_edges_ns, &self.coarse),
        })
    }
}

/// This process's CPU time so far (getrusage RUSAGE_SELF), seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuTimes {
    pub user_s: f64,
    pub sys_s: f64,
}

impl CpuTimes {
    pub fn now() -> CpuTimes {
        let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
            .expect("getrusage(RUSAGE_SELF) cannot fail");
        let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        CpuTimes {
            user_s: secs(usage.user_time()),
            sys_s: secs(usage.system_time()),
        }
    }

    pub fn since(self, start: CpuTimes) -> CpuTimes {
        CpuTimes {
            user_s: self.user_s - start.user_s,
            sys_s: self.sys_s - start.sys_s,
        }
    }

    pub fn total_s(&self) -> f64 {
        self.user_s + self.sys_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_set() {
        // 1..=100 µs, one each: p50 = 50 µs, p90 = 90 µs, p99 = 99 µs (HDR: 3 significant digits).
        let mut r = LatencyRecorder::default();
        for us in 1..=100u64 {
            r.record_ns(us * 1000);
        }
        let s = r.summary().unwrap();
        assert_eq!(s.count, 100);
        assert!((s.p50_us - 50.0).abs() < 0.1, "{}", s.p50_us);
        assert!((s.p90_us - 90.0).abs() < 0.1, "{}", s.p90_us);
        assert!((s.p99_us - 99.0).abs() < 0.1, "{}", s.p99_us);
        assert!((s.mean_us - 50.5).abs() < 0.1, "{}", s.mean_us);
        // 1..=99 µs are under PROMPT_NS: 99 of them, summing to 4950 µs.
        assert_eq!(s.prompt_count, 99);
        assert!(
            (s.prompt_total_us - 4950.0).abs() < 5.0,
            "{}",
            s.prompt_total_us
        );
    }

    #[test]
    fn the_histogram_has_the_simulators_edges() {
        // 40 µs lies in (31.6, 56.2] = bucket k=7 (10^(7/4) = 56.2); 20 s is past 10 s: the open bucket.
        let mut r = LatencyRecorder::default();
        r.record_ns(40_000);
        r.record_ns(20_000_000_000);
        let h = r.summary().unwrap().histogram;
        assert_eq!(h.upper_edges_us.len() + 1, h.counts.len());
        assert_eq!(h.counts[7], 1);
        assert_eq!(h.counts[BUCKET_EDGES], 1);
        assert_eq!(h.counts.iter().sum::<u64>(), 2);
    }

    #[test]
    fn empty_has_no_summary() {
        assert!(LatencyRecorder::default().summary().is_none());
    }
}
