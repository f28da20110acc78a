//! The one JSON result line every program prints on stdout, and the lab reads back: [`ResultLine`] is both
//! written ([`ResultLine::to_json`]) and read ([`ResultLine::parse`], serde `Deserialize`), so the two sides share
//! one definition of every field. Field names follow `cosched_report::Measurement` (`work_done`, `work_expected`,
//! `rate_per_s`, `rtt_p50_us`, `rtt_p99_us`, `rtt_histogram`), with `rtt_under_100us_s` and
//! `rtt_under_100us_mean_us` (the lab's "coscheduled" column); the rest are the program's own, kept in
//! [`ResultLine::extra`]. `mpi/mpi_pingpong.c` prints the same fields by hand (the tests read its line with
//! [`ResultLine::parse`]).

use crate::channel::WaitStats;
use crate::stats::{CpuTimes, LatencySummary};
use anyhow::{Context, Result};
use cosched_report::Histogram;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::Duration;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The count was reached or the duration elapsed.
    Complete,
    /// SIGTERM / SIGINT ended it early; the counts are what was done until then.
    Stopped,
}

/// One result line. Optional fields are left out of the line when `None`, and read back as `None` when absent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// Program-specific fields (and, when read, any field this struct does not name).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The last line of `stdout` that starts with `{`: where a program's result line is (a program may print
/// other lines before it).
pub fn last_json_line(stdout: &str) -> Option<&str> {
    stdout
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'))
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

    /// Read one result line (the text [`ResultLine::to_json`] writes). An error names the line and the field
    /// that is missing or of the wrong type.
    pub fn parse(line: &str) -> Result<ResultLine> {
        serde_json::from_str(line).with_context(|| format!("reading result line {line}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::LatencySummary;
    use cosched_policy::spin::ReceiveMode;

    fn cpu(user_s: f64, sys_s: f64) -> CpuTimes {
        CpuTimes { user_s, sys_s }
    }

    #[test]
    fn a_written_line_reads_back_equal() {
        // 1000 round trips in 0.5 s with 0.25 + 0.125 s of CPU: 2000/s, share 0.75.
        let line = ResultLine::new(
            "pingpong",
            0,
            2,
            Status::Complete,
            1000,
            Duration::from_millis(500),
            cpu(0.25, 0.125),
        )
        .latency(
            "round trip",
            Some(LatencySummary {
                count: 1000,
                p50_us: 40.0,
                p90_us: 55.0,
                p99_us: 90.0,
                mean_us: 42.5,
                max_us: 300.0,
                histogram: Histogram {
                    upper_edges_us: vec![10.0, 100.0],
                    counts: vec![3, 990, 7],
                },
                prompt_total_us: 37_500.0,
                prompt_count: 990,
            }),
        )
        .waits(
            &ReceiveMode::SpinBlock { spin_ns: 1_600_000 },
            crate::channel::WaitStats {
                receives: 1000,
                blocked: 12,
            },
        )
        .with("bytes", 128)
        .with("checksum", "ab12");
        assert_eq!(line.rate_per_s, 2000.0);
        assert_eq!(line.cpu_share, 0.75);
        let read = ResultLine::parse(&line.to_json()).unwrap();
        assert_eq!(read, line);
        assert_eq!(read.rtt_under_100us_s, Some(0.0375));
        assert_eq!(read.mode.as_deref(), Some("spin-block:1600"));
        assert_eq!(read.extra["bytes"], 128);
    }

    #[test]
    fn a_line_without_latency_reads_back_with_nones() {
        // calcula's kind of line: no round trips, its CPU share in `extra`.
        let line = ResultLine::new(
            "calcula",
            0,
            1,
            Status::Stopped,
            7,
            Duration::from_secs(2),
            cpu(1.5, 0.0),
        )
        .with("iterations_per_s", 3.5);
        let text = line.to_json();
        assert!(!text.contains("rtt_p50_us"), "{text}");
        let read = ResultLine::parse(&text).unwrap();
        assert_eq!(read, line);
        assert_eq!(read.status, Status::Stopped);
        assert_eq!(read.rtt_p50_us, None);
        assert_eq!(read.rtt_histogram, None);
    }

    #[test]
    fn the_last_json_line_is_the_result() {
        let out = "starting\n{\"old\":1}\n  {\"new\":2}  \nbye\n";
        assert_eq!(last_json_line(out), Some("{\"new\":2}"));
        assert_eq!(last_json_line("no json here\n"), None);
    }

    #[test]
    fn a_line_missing_a_field_is_a_clear_error() {
        // Not a result line: the lab's old stand-ins printed `round_trips` instead of `work_done`.
        let err = ResultLine::parse(r#"{"round_trips": 10, "elapsed_s": 0.5}"#).unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("reading result line"), "{text}");
        assert!(text.contains("missing field"), "{text}");
        let err = ResultLine::parse("{").unwrap_err();
        assert!(format!("{err:#}").contains("reading result line {"));
    }
}
