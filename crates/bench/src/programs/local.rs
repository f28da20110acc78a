//! `cosched-local` — the interactive local task of seed `004_3903357666129396.txt` §3: "The CPU is loaded by
//! performing floating point operations over an array ... Interactivity was simulated by means of running
//! several system calls with an exponential distribution frequency (mean=500ms by default) and different data
//! transferred to memory with a size chosen randomly by means of a uniform distribution in the range
//! [1MB,...,10MB]. At the end of its execution, the benchmark returns the system call latency and wall-clock
//! execution time."
//!
//! ## Algorithm
//! ```text
//! next = start + Exp(mean)
//! loop:
//!     sleep until next (absolute CLOCK_MONOTONIC)            woke = now
//!     burst: size ~ U[min_mb, max_mb] MB; read size bytes from /dev/zero in 64 KiB read() calls into a
//!            fresh buffer; one floating-point pass over it; --burst-us of calibrated floating-point work
//!     done = now;  dedicated = the burst's own CPU time (CLOCK_THREAD_CPUTIME_ID)
//!     syscall_phase = end of the reads − woke   (the seed's "system call latency")
//!     response = done − next;  wake_delay = woke − next;  slowdown = response / dedicated
//!     next += Exp(mean)      (arrivals do not wait for the previous burst: a late burst queues, as a user would)
//! ```
//! The burst's CPU time is what it would take on a dedicated CPU, so `slowdown` = 1 means no interference.
//!
//! With `--period-ms P` it is the local user's wake-up probe (issue: the local user keeps its interactive
//! response): `next = done + P` (sleep P after each burst, relative), and with `--min-mb 0 --max-mb 0
//! --burst-us 0` nothing but the sleep: `wake_delay` is then how late a sleeping interactive task gets its CPU
//! back (p50, p99, max in the result line).

use crate::args::{LengthArgs, RunLength};
use crate::compute::{flops, DelayLoop};
use crate::rank::Tally;
use crate::result::{ResultLine, Status};
use crate::signals::stop_requested;
use anyhow::{bail, Context, Result};
use clap::Parser;
use cosched_report::stats::mean;
use nix::errno::Errno;
use nix::time::{clock_gettime, clock_nanosleep, ClockId, ClockNanosleepFlags};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::fs::File;
use std::io::Read;
use std::time::Instant;

pub const PROGRAM: &str = "local";
/// Bytes per read() of a burst.
pub const READ_CHUNK: usize = 64 << 10;
const MB: f64 = 1024.0 * 1024.0;

/// Interactive stand-in: bursts of memory, CPU and system calls at exponential intervals (seed 004 `local`).
/// Runs until SIGTERM/SIGINT, --duration-s or --count bursts; prints response-latency percentiles.
#[derive(Parser, Debug)]
#[command(name = "cosched-local", version)]
pub struct LocalArgs {
    #[command(flatten)]
    pub length: LengthArgs,
    /// Mean time between bursts, milliseconds (exponentially distributed; the seed: 500).
    #[arg(long, default_value_t = 500.0, value_name = "MILLISECONDS")]
    pub mean_interval_ms: f64,
    /// Smallest memory touched by a burst, MB.
    #[arg(long, default_value_t = 1.0)]
    pub min_mb: f64,
    /// Largest memory touched by a burst, MB.
    #[arg(long, default_value_t = 10.0)]
    pub max_mb: f64,
    /// Floating-point work per burst, microseconds of dedicated CPU (on top of the memory work).
    #[arg(long, default_value_t = 10_000.0, value_name = "MICROSECONDS")]
    pub burst_us: f64,
    /// Fixed mode, the local user's wake-up probe: sleep this long after each burst (relative, like an
    /// interactive program waiting for its next input) instead of exponential arrivals; with --max-mb 0 and
    /// --burst-us 0 the program only sleeps and records how late each wake-up is (wake_delay_*).
    #[arg(long, value_name = "MILLISECONDS")]
    pub period_ms: Option<f64>,
    /// Seed of the random intervals and sizes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn monotonic_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always there");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

fn thread_cpu_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .expect("CLOCK_THREAD_CPUTIME_ID is always there");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// Sleep until `deadline_ns` on CLOCK_MONOTONIC; false if a stop signal came first.
fn sleep_until(deadline_ns: u64) -> bool {
    let at = nix::sys::time::TimeSpec::new(
        (deadline_ns / 1_000_000_000) as _,
        (deadline_ns % 1_000_000_000) as _,
    );
    loop {
        if stop_requested() {
            return false;
        }
        match clock_nanosleep(
            ClockId::CLOCK_MONOTONIC,
            ClockNanosleepFlags::TIMER_ABSTIME,
            &at,
        ) {
            Ok(_) => return true,
            Err(Errno::EINTR) => continue,
            Err(e) => panic!("clock_nanosleep: {e}"),
        }
    }
}

/// The nearest-rank `q`-quantile of `values` (sorted in place).
pub fn quantile(values: &mut [f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    Some(values[rank - 1])
}

pub fn run(args: LocalArgs) -> Result<ResultLine> {
    if !(args.mean_interval_ms.is_finite() && args.mean_interval_ms > 0.0) {
        bail!(
            "--mean-interval-ms {} must be a positive number",
            args.mean_interval_ms
        );
    }
    let no_memory = args.min_mb == 0.0 && args.max_mb == 0.0;
    if !(no_memory || (args.min_mb > 0.0 && args.min_mb <= args.max_mb && args.max_mb <= 4096.0)) {
        bail!(
            "--min-mb {} / --max-mb {}: need 0 < min ≤ max ≤ 4096 (or both 0: no memory work)",
            args.min_mb,
            args.max_mb
        );
    }
    if let Some(p) = args.period_ms {
        if !(p.is_finite() && p > 0.0 && p <= 3_600_000.0) {
            bail!("--period-ms {p} must be a positive number of milliseconds (at most an hour)");
        }
    }
    if !(args.burst_us.is_finite() && args.burst_us >= 0.0) {
        bail!(
            "--burst-us {} must be a non-negative number of microseconds",
            args.burst_us
        );
    }
    let length = args.length.resolve(RunLength::UntilSignal)?;
    let mut zero = File::open("/dev/zero").context("opening /dev/zero for the bursts' reads")?;
    let delay = DelayLoop::calibrate();
    let burst_iterations = delay.iterations_for_us(args.burst_us);
    let mut rng = StdRng::seed_from_u64(args.seed);
    let mean_ns = args.mean_interval_ms * 1e6;
    let mut exponential = move || -> u64 { (-mean_ns * (1.0 - rng.random::<f64>()).ln()) as u64 };
    let (min_bytes, max_bytes) = ((args.min_mb * MB) as usize, (args.max_mb * MB) as usize);
    let mut sizes = StdRng::seed_from_u64(args.seed.wrapping_add(1));
    let period_ns = args.period_ms.map(|p| (p * 1e6) as u64);

    let mut tally = Tally::start(length);
    let start_ns = monotonic_ns();
    let end_ns = match length {
        RunLength::Duration(d) => Some(start_ns + d.as_nanos() as u64),
        _ => None,
    };
    let (mut responses, mut wake_delays, mut dedicated, mut slowdowns) =
        (vec![], vec![], vec![], vec![]);
    let mut syscall_phases = vec![];
    let (mut bytes_touched, mut read_calls): (u64, u64) = (0, 0);
    // When the latest wake-up was due (CLOCK_MONOTONIC), to find what held the CPU then (an agent's action log
    // counts from the same clock).
    let (mut worst_wake_ns, mut worst_wake_due_ns) = (0u64, 0u64);
    let mut value = 0.0;
    let mut next = start_ns + period_ns.unwrap_or_else(&mut exponential);
    loop {
        if !tally.keep_going(Instant::now()) {
            break;
        }
        if let Some(end) = end_ns.filter(|&end| next >= end) {
            if !sleep_until(end) {
                tally.status = Status::Stopped;
            }
            break;
        }
        if !sleep_until(next) {
            tally.status = Status::Stopped;
            break;
        }
        let woke = monotonic_ns();
        let cpu_before = thread_cpu_ns();
        let size = if no_memory {
            0
        } else {
            sizes.random_range(min_bytes..=max_bytes)
        };
        let mut buffer = vec![0u8; size];
        for chunk in buffer.chunks_mut(READ_CHUNK) {
            zero.read_exact(chunk).context("reading /dev/zero")?;
            read_calls += 1;
        }
        let reads_done = monotonic_ns();
        let mut pass = 0.0;
        for (i, b) in buffer.iter().step_by(64).enumerate() {
            pass = pass * 0.5 + *b as f64 + i as f64 * 1e-9;
        }
        drop(buffer);
        value = flops(burst_iterations, pass + value * 1e-3);
        let done = monotonic_ns();
        let cpu = (thread_cpu_ns() - cpu_before).max(1) as f64;
        let response = done.saturating_sub(next) as f64;
        responses.push(response / 1e3);
        wake_delays.push(woke.saturating_sub(next) as f64 / 1e3);
        if woke.saturating_sub(next) >= worst_wake_ns {
            (worst_wake_ns, worst_wake_due_ns) = (woke.saturating_sub(next), next);
        }
        syscall_phases.push(reads_done.saturating_sub(woke) as f64 / 1e3);
        dedicated.push(cpu / 1e3);
        slowdowns.push(response / cpu);
        bytes_touched += size as u64;
        tally.done += 1;
        next = match period_ns {
            // Fixed mode: the next wait starts when this burst is done.
            Some(p) => done + p,
            None => next + exponential(),
        };
    }

    let line = tally
        .line(PROGRAM, 0, 1)
        .with("bursts", tally.done)
        .with("mean_interval_ms", args.mean_interval_ms)
        .with("burst_us", args.burst_us)
        .with("seed", args.seed)
        .with("bytes_touched", bytes_touched)
        .with("read_calls", read_calls)
        .with("response_mean_us", mean(&responses))
        .with("dedicated_mean_us", mean(&dedicated))
        .with("slowdown_mean", mean(&slowdowns))
        .with("response_p50_us", quantile(&mut responses, 0.5))
        .with("response_p99_us", quantile(&mut responses, 0.99))
        .with("syscall_phase_mean_us", mean(&syscall_phases))
        .with("syscall_phase_p50_us", quantile(&mut syscall_phases, 0.5))
        .with("syscall_phase_p99_us", quantile(&mut syscall_phases, 0.99))
        .with("period_ms", args.period_ms)
        .with("wake_delay_mean_us", mean(&wake_delays))
        .with("wake_delay_p50_us", quantile(&mut wake_delays, 0.5))
        .with("wake_delay_p99_us", quantile(&mut wake_delays, 0.99))
        .with("wake_delay_max_us", quantile(&mut wake_delays, 1.0))
        .with("wake_delay_max_due_s", worst_wake_due_ns as f64 / 1e9)
        .with("slowdown_p50", quantile(&mut slowdowns, 0.5))
        .with("slowdown_p99", quantile(&mut slowdowns, 0.99))
        .with("result", value);
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wake_up_probe_sleeps_its_period_and_reports_lateness() {
        let args = LocalArgs::parse_from([
            "cosched-local",
            "--count",
            "20",
            "--period-ms",
            "2",
            "--min-mb",
            "0",
            "--max-mb",
            "0",
            "--burst-us",
            "0",
        ]);
        let t0 = Instant::now();
        let line = run(args).unwrap();
        // 20 wake-ups, each after a 2 ms sleep: at least 40 ms.
        assert!(t0.elapsed().as_millis() >= 40, "{:?}", t0.elapsed());
        let get = |k: &str| {
            line.extra[k]
                .as_f64()
                .unwrap_or_else(|| panic!("{k}: {line:?}"))
        };
        assert_eq!(get("bursts"), 20.0);
        assert_eq!(get("bytes_touched"), 0.0);
        let (p50, p99, max) = (
            get("wake_delay_p50_us"),
            get("wake_delay_p99_us"),
            get("wake_delay_max_us"),
        );
        assert!(0.0 <= p50 && p50 <= p99 && p99 <= max, "{p50} {p99} {max}");
        // A bad period is an error that names the flag.
        let bad = run(LocalArgs::parse_from(["cosched-local", "--period-ms", "0"])).unwrap_err();
        assert!(bad.to_string().contains("--period-ms"), "{bad}");
    }

    #[test]
    fn nearest_rank_quantiles() {
        // 10 values 1..=10: p50 is the 5th (5), p99 the 10th (10).
        let mut v: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        assert_eq!(quantile(&mut v, 0.5), Some(5.0));
        assert_eq!(quantile(&mut v, 0.99), Some(10.0));
        assert_eq!(quantile(&mut [], 0.5), None);
    }
}
