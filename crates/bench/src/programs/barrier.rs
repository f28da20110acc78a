//! `cosched-barrier` — the seed's Barrier benchmark (seed `000_e8004e1596fde6a5.txt` §4.1.2): "The root node
//! initially broadcasts a 'passed barrier' message to all nodes, then all nodes enter a spin loop (local
//! computation). After the local computation is complete, each node sends an 'at barrier' message to the root
//! node. When the root node has received 'at barrier' messages from all nodes, the loop begins anew." The
//! seed's runs: 100,000 iterations, 78 µs of computation.
//!
//! The computation is a calibrated floating-point loop ([`crate::compute::DelayLoop`], `--compute-us` of
//! dedicated CPU), done by every rank including the root. The root times each iteration (broadcast → last
//! "at barrier") and alone decides when the run ends; `work_done` counts barriers at which every rank's
//! message arrived intact with the right iteration number.

use crate::args::{RankArgs, RunLength};
use crate::channel::{send_all, send_each, Link};
use crate::compute::{flops, DelayLoop};
use crate::message::{check, fill, Header};
use crate::rank::{tell_stop, Tally};
use crate::result::ResultLine;
use crate::stats::LatencyRecorder;
use anyhow::{bail, Context, Result};
use clap::Parser;

pub const PROGRAM: &str = "barrier";
const PASSED: u32 = 1;
const AT_BARRIER: u32 = 2;
/// The seed's run: 100,000 barriers.
pub const DEFAULT_BARRIERS: u64 = 100_000;

/// Root broadcasts "passed", every rank computes, every rank answers "at barrier" (seed 000 Barrier).
/// Without --count or --duration-s: the seed's 100,000 barriers.
#[derive(Parser, Debug)]
#[command(name = "cosched-barrier", version)]
pub struct BarrierArgs {
    #[command(flatten)]
    pub rank: RankArgs,
    /// Dedicated CPU time of each rank's computation between barriers, microseconds (the seed: 78).
    #[arg(long, default_value_t = 78.0, value_name = "MICROSECONDS")]
    pub compute_us: f64,
}

pub fn run(args: BarrierArgs) -> Result<ResultLine> {
    if !(args.compute_us.is_finite() && args.compute_us >= 0.0) {
        bail!(
            "--compute-us {} must be a non-negative number of microseconds",
            args.compute_us
        );
    }
    let (length, bytes) = args.rank.resolve(RunLength::Count(DEFAULT_BARRIERS))?;
    let delay = DelayLoop::calibrate();
    let compute_iterations = delay.iterations_for_us(args.compute_us);
    let (group, mut receiver) = args.rank.join(PROGRAM, "", length, bytes)?;
    let mut out = vec![0u8; bytes];
    let mut iterations = LatencyRecorder::default();
    let mut value = 0.0;
    let mut tally = Tally::start(length);

    if group.rank == 0 {
        let members: Vec<&Link> = group.members().collect();
        let mut inbox = vec![0u8; bytes * members.len()];
        while let Some(began) = tally.next_unit() {
            let done = tally.done;
            fill(&mut out, Header::data(PASSED, done));
            let outcome = send_each(&members, &out).and_then(|()| {
                value = flops(compute_iterations, value);
                receiver.recv_chunks(&members, &mut inbox, bytes)
            });
            if !tally.completed(outcome, || format!("barrier {done}"))? {
                break;
            }
            for (link, message) in members.iter().zip(inbox.chunks(bytes)) {
                let header = check(message)
                    .with_context(|| format!("barrier {done}: rank {}'s message", link.peer))?;
                if header != Header::data(AT_BARRIER, done) {
                    bail!("barrier {done}: rank {} sent {header:?}", link.peer);
                }
            }
            iterations.record_ns(began.elapsed().as_nanos() as u64);
            tally.done += 1;
        }
        tell_stop(&members, &mut out, tally.status, "rank")?;
    } else {
        let link = group.link(0);
        let mut inbox = vec![0u8; bytes];
        while tally.await_root(
            &mut receiver,
            link,
            &mut inbox,
            PASSED,
            "'passed' for barrier",
        )? {
            let done = tally.done;
            value = flops(compute_iterations, value);
            fill(&mut out, Header::data(AT_BARRIER, done));
            if !tally.completed(send_all(link, &out), || {
                format!("reporting at barrier {done}")
            })? {
                break;
            }
            tally.done += 1;
        }
    }

    let line = tally
        .line(PROGRAM, group.rank, group.ranks)
        .waits(&receiver.mode(), receiver.stats)
        .latency("barrier iteration", iterations.summary())
        .with("bytes", bytes as u64)
        .with("barriers", tally.done)
        .with("compute_us", args.compute_us)
        .with("compute_iterations", compute_iterations)
        .with("iterations_per_us", delay.iterations_per_us)
        .with("result", value);
    Ok(line)
}
