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

use crate::args::{BytesArgs, GroupArgs, LengthArgs, RecvArgs, RunLength};
use crate::channel::{completed, send_all, Link, Receiver};
use crate::compute::{flops, DelayLoop};
use crate::message::{check, fill, Header, Kind};
use crate::net::Group;
use crate::result::{ResultLine, Status};
use crate::signals::stop_requested;
use crate::stats::{CpuTimes, LatencyRecorder};
use anyhow::{bail, Context, Result};
use clap::Parser;
use std::time::Instant;

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
    pub group: GroupArgs,
    #[command(flatten)]
    pub recv: RecvArgs,
    #[command(flatten)]
    pub length: LengthArgs,
    #[command(flatten)]
    pub bytes: BytesArgs,
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
    let length = args.length.resolve(RunLength::Count(DEFAULT_BARRIERS))?;
    let bytes = args.bytes.resolve()?;
    let delay = DelayLoop::calibrate();
    let compute_iterations = delay.iterations_for_us(args.compute_us);
    let group = Group::join(&args.group.config(
        PROGRAM,
        "",
        format!("bytes={bytes} length={length:?}"),
        false,
    )?)?;
    let mut receiver = Receiver::new(args.recv.mode);
    let mut out = vec![0u8; bytes];
    let mut iterations = LatencyRecorder::default();
    let mut done: u64 = 0;
    let mut status = Status::Complete;
    let mut value = 0.0;
    let cpu_start = CpuTimes::now();
    let start = Instant::now();

    if group.rank == 0 {
        let members: Vec<&Link> = group.members().collect();
        let mut inbox = vec![0u8; bytes * members.len()];
        loop {
            let began = Instant::now();
            if !length.keep_going(done, began - start) {
                break;
            }
            if stop_requested() {
                status = Status::Stopped;
                break;
            }
            fill(&mut out, Header::data(PASSED, done));
            let outcome = members
                .iter()
                .try_for_each(|link| send_all(link, &out))
                .and_then(|()| {
                    value = flops(compute_iterations, value);
                    let mut pending: Vec<(&Link, &mut [u8])> = members
                        .iter()
                        .copied()
                        .zip(inbox.chunks_mut(bytes))
                        .collect();
                    receiver.recv_each(&mut pending)
                });
            if !completed(outcome, || format!("barrier {done}"))? {
                status = Status::Stopped;
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
            done += 1;
        }
        fill(&mut out, Header::stop());
        for link in &members {
            let told = send_all(link, &out);
            if status == Status::Complete {
                told.with_context(|| format!("telling rank {} to stop", link.peer))?;
            }
        }
    } else {
        let link = group.link(0);
        let mut inbox = vec![0u8; bytes];
        loop {
            if !completed(receiver.recv(link, &mut inbox), || {
                format!("waiting for barrier {done} to pass")
            })? {
                status = Status::Stopped;
                break;
            }
            let passed =
                check(&inbox).with_context(|| format!("barrier {done}: rank 0's message"))?;
            if passed.kind == Kind::Stop {
                break;
            }
            if passed != Header::data(PASSED, done) {
                bail!("expected 'passed' for barrier {done}, got {passed:?}");
            }
            value = flops(compute_iterations, value);
            fill(&mut out, Header::data(AT_BARRIER, done));
            if !completed(send_all(link, &out), || {
                format!("reporting at barrier {done}")
            })? {
                status = Status::Stopped;
                break;
            }
            done += 1;
        }
    }

    let wall = start.elapsed();
    let cpu = CpuTimes::now().since(cpu_start);
    let mut line = ResultLine::new(PROGRAM, group.rank, group.ranks, status, done, wall, cpu)
        .waits(&receiver.mode(), receiver.stats)
        .latency("barrier iteration", iterations.summary())
        .with("bytes", bytes as u64)
        .with("barriers", done)
        .with("compute_us", args.compute_us)
        .with("compute_iterations", compute_iterations)
        .with("iterations_per_us", delay.iterations_per_us)
        .with("result", value);
    line.work_expected = length.expected();
    Ok(line)
}
