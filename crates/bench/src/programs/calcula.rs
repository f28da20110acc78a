//! `cosched-calcula` — the local CPU-bound task of seed `003_d5c4b72e5fa91aa6.txt` §4: "an application
//! (called calcula) which performs floating point operations indefinitely (or a variable number of times when
//! the local task overhead is measured)". Also the lab's CPU-bound competitor (seed `000`'s spin loops).
//!
//! Runs [`crate::compute::flops`] in loops of [`ITERATIONS_PER_LOOP`] iterations until SIGTERM / SIGINT,
//! `--duration-s` or `--count` loops; then prints its loop count and CPU share `cpu_s / wall_s` (its fairness
//! `F = N × cpu_share` when N processes share its CPU).

use crate::args::{LengthArgs, RunLength};
use crate::compute::flops;
use crate::rank::Tally;
use crate::result::ResultLine;
use anyhow::Result;
use clap::Parser;

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
    let mut tally = Tally::start(length);
    let mut value = 1.0;
    while tally.next_unit().is_some() {
        value = flops(ITERATIONS_PER_LOOP, value);
        tally.done += 1;
    }
    let line = tally
        .line(PROGRAM, 0, 1)
        .with("loops", tally.done)
        .with("iterations_per_loop", ITERATIONS_PER_LOOP)
        .with("result", value);
    Ok(line)
}
