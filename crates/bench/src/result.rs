//! The one JSON result line every program prints on stdout. Field names follow `cosched_report::Measurement`
//! (`work_done`, `work_expected`, `rate_per_s`, `rtt_p50_us`, `rtt_p99_us`, `rtt_histogram`), which the lab
//! reads, with `rtt_under_100us_s` and `rtt_under_100us_mean_us` (its "coscheduled" column); the rest are the
//! program's own.

use crate::channel::WaitStats;
use crate::stats::{CpuTimes, LatencySummary};
use cosched_report::Histogram;
use serde::Serialize;
use serde_json::{Map, Value};
use std::time::Duration;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The count was reached or the duration elapsed.
    Complete,
    /// SIGTERM / SIGINT ended it early; the counts are what was done until then.
    Stopped,
}

/// One result line.
#[derive(Clone, Debug, Serialize)]
pub struct ResultLine {
    pub program: String,
    pub rank: usize,
    pub ranks: usize,
    /// Receive mode in flag form (`spin-block:1600`), for programs that receive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    pub status: Status,
    /// The correctness count: units of work done and verified (round trips, barriers, iterations, bursts).
    pub work_done: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_expected: Option<u64>,
    pub wall_s: f64,
    /// CPU time of this process over the timed part (getrusage user + sys).
    pub cpu_s: f64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// `cpu_s / wall_s`.
    pub cpu_share: f64,
    /// `work_done / wall_s`.
    pub rate_per_s: f64,
    /// What the `rtt_*` fields time (e.g. "round trip", "barrier iteration").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_of: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_p50_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_p90_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_p99_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_mean_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_max_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_histogram: Option<Histogram>,
    /// Time spent in round trips shorter than 100 µs (`stats::PROMPT_NS`: no rank lost a time slice on the way),
    /// seconds, and their mean: for a spinning job, how long its ranks were coscheduled, and how fast they were
    /// then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_under_100us_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_under_100us_mean_us: Option<f64>,
    /// Messages received, and the waits that ended in a blocking call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receives: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_waits: Option<u64>,
    /// Program-specific fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResultLine {
    /// A line for `program`'s `rank` of `ranks` that did `work_done` units in `wall` using `cpu`.
    pub fn new(
        program: &str,
        rank: usize,
        ranks: usize,
        status: Status,
        work_done: u64,
        wall: Duration,
        cpu: CpuTimes,
    ) -> Self {
        let wall_s = wall.as_secs_f64();
        let per_wall = |x: f64| if wall_s > 0.0 { x / wall_s } else { 0.0 };
        ResultLine {
            program: program.to_string(),
            rank,
            ranks,
            mode: None,
            status,
            work_done,
            work_expected: None,
            wall_s,
            cpu_s: cpu.total_s(),
            cpu_user_s: cpu.user_s,
            cpu_sys_s: cpu.sys_s,
            cpu_share: per_wall(cpu.total_s()),
            rate_per_s: per_wall(work_done as f64),
            latency_of: None,
            rtt_p50_us: None,
            rtt_p90_us: None,
            rtt_p99_us: None,
            rtt_mean_us: None,
            rtt_max_us: None,
            rtt_histogram: None,
            rtt_under_100us_s: None,
            rtt_under_100us_mean_us: None,
            receives: None,
            blocked_waits: None,
            extra: Map::new(),
        }
    }

    /// Attach the latency percentiles of `what` (e.g. "round trip").
    pub fn latency(mut self, what: &str, summary: Option<LatencySummary>) -> Self {
        if let Some(s) = summary {
            self.latency_of = Some(what.to_string());
            self.rtt_p50_us = Some(s.p50_us);
            self.rtt_p90_us = Some(s.p90_us);
            self.rtt_p99_us = Some(s.p99_us);
            self.rtt_mean_us = Some(s.mean_us);
            self.rtt_max_us = Some(s.max_us);
            self.rtt_histogram = Some(s.histogram);
            self.rtt_under_100us_s = Some(s.prompt_total_us / 1e6);
            self.rtt_under_100us_mean_us =
                (s.prompt_count > 0).then(|| s.prompt_total_us / s.prompt_count as f64);
        }
        self
    }

    /// Attach the receive mode and how the waits went.
    pub fn waits(mut self, mode: &cosched_policy::spin::ReceiveMode, stats: WaitStats) -> Self {
        self.mode = Some(mode.as_arg());
        self.receives = Some(stats.receives);
        self.blocked_waits = Some(stats.blocked);
        self
    }

    /// Add a program-specific field.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    /// The line as JSON (one line, no newline).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a result line always serialises")
    }
}
