//! `cosched-calcula` — the local CPU-bound task of seed `003_d5c4b72e5fa91aa6.txt` §4: "an application
//! (called calcula) which performs floating point operations indefinitely (or a variable number of times when
//! the local task overhead is measured)". Also the lab's CPU-bound competitor (seed `000`'s spin loops).
//!
//! Runs [`crate::compute::flops`] in loops of [`ITERATIONS_PER_LOOP`] iterations until SIGTERM / SIGINT,
//! `--duration-s` or `--count` loops; then prints its loop count and CPU share `cpu_s / wall_s` (its fairness
//! `F = N × cpu_share` when N processes share its CPU).

use crate::args::{LengthArgs, RunLength};
use crate::compute::flops;
use crate::result::{ResultLine, Status};
use crate::signals::stop_requested;
use crate::stats::CpuTimes;
use anyhow::Result;
use clap::Parser;
use std::time::Instant;

pub const PROGRAM: &str = "calcula";
/// Iterations of the floating-point loop between checks of the clock and the stop flag (~0.1 ms).
pub const ITERATIONS_PER_LOOP: u64 = 100_000;

/// Floating-point loop until SIGTERM/SIGINT, --duration-s or --count loops (of 100,000 iterations);
/// prints its loop count and CPU share.
#[derive(Parser, Debug)]
#[command(name = "cosched-calcula", version)]
pub struct CalculaArgs {
    #[command(flatten)]
    pub length: LengthArgs,
}

pub fn run(args: CalculaArgs) -> Result<ResultLine> {
    let length = args.length.resolve(RunLength::UntilSignal)?;
    let cpu_start = CpuTimes::now();
    let start = Instant::now();
    let mut loops: u64 = 0;
    let mut value = 1.0;
    let mut status = Status::Complete;
    while length.keep_going(loops, start.elapsed()) {
        if stop_requested() {
            status = Status::Stopped;
            break;
        }
        value = flops(ITERATIONS_PER_LOOP, value);
        loops += 1;
    }
    let wall = start.elapsed();
    let cpu = CpuTimes::now().since(cpu_start);
    let mut line = ResultLine::new(PROGRAM, 0, 1, status, loops, wall, cpu)
        .with("loops", loops)
        .with("iterations_per_loop", ITERATIONS_PER_LOOP)
        .with("result", value);
    line.work_expected = length.expected();
    Ok(line)
}
