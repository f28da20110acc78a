//! `cosched-pingpong` — the seed's Latency benchmark: "two nodes repeatedly exchange a 128-byte packet. Each
//! node records the elapsed wall-clock time for each round trip, including the sending and receiving of the
//! packet" (seed `000_e8004e1596fde6a5.txt` §4.1.2; 1,000,000 round trips in the seed).
//!
//! Rank 0 sends a ping (sequence i), rank 1 checks it and answers a pong (sequence i, a different body), rank 0
//! checks the pong and records the round trip. Rank 0 alone decides when the run ends (count or duration) and
//! then sends a stop message. The correctness count `work_done` counts round trips whose every byte checked.

use crate::args::{BytesArgs, GroupArgs, LengthArgs, RecvArgs, RunLength};
use crate::channel::{completed, send_all, Receiver};
use crate::message::{check, fill, Header, Kind};
use crate::net::Group;
use crate::result::{ResultLine, Status};
use crate::signals::stop_requested;
use crate::stats::{CpuTimes, LatencyRecorder};
use anyhow::{bail, Context, Result};
use clap::Parser;
use std::time::Instant;

pub const PROGRAM: &str = "pingpong";
const PING: u32 = 1;
const PONG: u32 = 2;
/// The seed's run: 1,000,000 round trips.
pub const DEFAULT_ROUND_TRIPS: u64 = 1_000_000;

/// Two ranks exchange a token (seed 000 Latency); rank 0 prints round-trip percentiles.
/// Without --count or --duration-s: the seed's 1,000,000 round trips.
#[derive(Parser, Debug)]
#[command(name = "cosched-pingpong", version)]
pub struct PingpongArgs {
    #[command(flatten)]
    pub group: GroupArgs,
    #[command(flatten)]
    pub recv: RecvArgs,
    #[command(flatten)]
    pub length: LengthArgs,
    #[command(flatten)]
    pub bytes: BytesArgs,
}

pub fn run(args: PingpongArgs) -> Result<ResultLine> {
    if args.group.ranks != 2 {
        bail!(
            "ping-pong runs on exactly 2 ranks, not --ranks {}",
            args.group.ranks
        );
    }
    let length = args.length.resolve(RunLength::Count(DEFAULT_ROUND_TRIPS))?;
    let bytes = args.bytes.resolve()?;
    let group = Group::join(&args.group.config(
        PROGRAM,
        "",
        format!("bytes={bytes} length={length:?}"),
        false,
    )?)?;
    let mut receiver = Receiver::new(args.recv.mode);
    let mut out = vec![0u8; bytes];
    let mut inbox = vec![0u8; bytes];
    let mut round_trips = LatencyRecorder::default();
    let mut done: u64 = 0;
    let mut status = Status::Complete;
    let cpu_start = CpuTimes::now();
    let start = Instant::now();

    if group.rank == 0 {
        let link = group.link(1);
        loop {
            let sent_at = Instant::now();
            if !length.keep_going(done, sent_at - start) {
                break;
            }
            if stop_requested() {
                status = Status::Stopped;
                break;
            }
            fill(&mut out, Header::data(PING, done));
            if !completed(
                send_all(link, &out).and_then(|()| receiver.recv(link, &mut inbox)),
                || format!("round trip {done}"),
            )? {
                status = Status::Stopped;
                break;
            }
            let answered_at = Instant::now();
            let pong = check(&inbox).with_context(|| format!("round trip {done}: the pong"))?;
            if pong != Header::data(PONG, done) {
                bail!("round trip {done}: expected pong {done}, got {pong:?}");
            }
            round_trips.record_ns((answered_at - sent_at).as_nanos() as u64);
            done += 1;
        }
        fill(&mut out, Header::stop());
        let told = send_all(link, &out);
        if status == Status::Complete {
            told.context("telling rank 1 to stop")?;
        }
    } else {
        let link = group.link(0);
        loop {
            if !completed(receiver.recv(link, &mut inbox), || {
                format!("waiting for ping {done}")
            })? {
                status = Status::Stopped;
                break;
            }
            let ping = check(&inbox).with_context(|| format!("ping {done}"))?;
            if ping.kind == Kind::Stop {
                break;
            }
            if ping != Header::data(PING, done) {
                bail!("expected ping {done}, got {ping:?}");
            }
            fill(&mut out, Header::data(PONG, done));
            if !completed(send_all(link, &out), || format!("answering ping {done}"))? {
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
        .latency("round trip", round_trips.summary())
        .with("bytes", bytes as u64)
        .with("round_trips", done);
    line.work_expected = length.expected();
    Ok(line)
}
