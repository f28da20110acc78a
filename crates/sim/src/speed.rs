//! Speed measurements of the simulator (what `cosched sim-bench` reports), as ratios to the SPEC targets.
//!
//! SPEC targets: ≥ 20 M events/s per core on the event loop; the 1,000,000-round-trip Latency experiment with 8
//! competitors per node in ≤ 2 s of wall time per configuration (release build). Every line carries its
//! correctness count (round trips done / asked) so a fast but wrong run cannot pass for a fast one.
//!
//! On a shared machine wall time counts other people's work too, so each line also gives the CPU time of the
//! simulating thread (Linux: `/proc/thread-self/stat`, 10 ms resolution) and events per CPU-second.

use crate::scenario::{Scenario, SeedConfig};
use crate::{simulate, SimError};
use std::time::Instant;

/// SPEC: events per second per core.
pub const TARGET_EVENTS_PER_S: f64 = 20e6;
/// SPEC: wall seconds for the 1,000,000-round-trip Latency run with 8 competitors, per configuration.
pub const TARGET_LATENCY_WALL_S: f64 = 2.0;

/// One measured configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct SpeedLine {
    pub config: &'static str,
    pub round_trips_done: u64,
    pub round_trips_asked: u64,
    pub events: u64,
    pub wall_s: f64,
    /// CPU time of the simulating thread, where the platform tells it.
    pub cpu_s: Option<f64>,
    pub sim_time_s: f64,
}

/// User + system CPU time of the calling thread, from `/proc/thread-self/stat` (fields 14 and 15, in clock ticks
/// of 1/100 s); `None` where that file does not exist.
pub fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // The command name (field 2) may contain spaces; fields after its closing parenthesis are plain.
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

impl SpeedLine {
    /// Events per second of the thread's CPU time (wall time where CPU time is unknown).
    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.cpu_s.unwrap_or(self.wall_s).max(1e-9)
    }

    /// One line with the ratios to the targets (> 1 is better than the target).
    pub fn render(&self) -> String {
        format!(
            "{:<28} round trips {}/{}  events {:>10}  wall {:>7.3} s cpu {:>6.2} s ({:.2}x target)  {:>6.1} M events/s ({:.2}x target)  simulated {:.0} s",
            self.config,
            self.round_trips_done,
            self.round_trips_asked,
            self.events,
            self.wall_s,
            self.cpu_s.unwrap_or(f64::NAN),
            TARGET_LATENCY_WALL_S / self.wall_s.max(1e-9),
            self.events_per_s() / 1e6,
            self.events_per_s() / TARGET_EVENTS_PER_S,
            self.sim_time_s,
        )
    }
}

/// Runs the seed's Latency benchmark under its four schedulers and times each run.
pub fn latency_runs(
    round_trips: u64,
    competitors: u32,
    seed: u64,
) -> Result<Vec<SpeedLine>, SimError> {
    SeedConfig::ALL
        .iter()
        .map(|&config| {
            let scenario = Scenario::seed_latency(round_trips, competitors, config);
            let start = Instant::now();
            let cpu_start = thread_cpu_seconds();
            let out = simulate(&scenario, seed)?;
            let cpu_s = thread_cpu_seconds()
                .zip(cpu_start)
                .map(|(end, start)| end - start);
            Ok(SpeedLine {
                config: config.label(),
                round_trips_done: out.measurement.work_done,
                round_trips_asked: out.measurement.work_expected,
                events: out.events,
                wall_s: start.elapsed().as_secs_f64(),
                cpu_s,
                sim_time_s: out.sim_time_ns as f64 / 1e9,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_time_grows_with_work() {
        // Where /proc/thread-self/stat exists, 0.3 s of busy work shows as at least 0.2 s (10 ms ticks).
        let Some(before) = thread_cpu_seconds() else {
            return;
        };
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed().as_secs_f64() < 0.3 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let used = thread_cpu_seconds().unwrap() - before;
        assert!(used >= 0.05, "used {used}"); // generous: the machine may be shared
    }

    #[test]
    fn a_small_speed_run_counts_its_work() {
        let lines = latency_runs(200, 1, 1).unwrap();
        assert_eq!(lines.len(), 4);
        for line in lines {
            assert_eq!(line.round_trips_done, 200, "{}", line.config);
            assert!(
                line.events >= 400,
                "at least one arrival per message: {}",
                line.render()
            );
        }
    }
}
