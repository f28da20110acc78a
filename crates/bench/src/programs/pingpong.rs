//! `cosched-pingpong` — the seed's Latency benchmark: "two nodes repeatedly exchange a 128-byte packet. Each
//! node records the elapsed wall-clock time for each round trip, including the sending and receiving of the
//! packet" (seed `000_e8004e1596fde6a5.txt` §4.1.2; 1,000,000 round trips in the seed).
//!
//! Rank 0 sends a ping (sequence i), rank 1 checks it and answers a pong (sequence i, a different body), rank 0
//! checks the pong and records the round trip. Rank 0 alone decides when the run ends (count or duration) and
//! then sends a stop message. The correctness count `work_done` counts round trips whose every byte checked.

use crate::args::{RankArgs, RunLength};
use crate::channel::send_all;
use crate::message::{check, fill, Header};
use crate::rank::{tell_stop, Tally};
use crate::result::ResultLine;
use crate::stats::LatencyRecorder;
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
    pub rank: RankArgs,
}

pub fn run(args: PingpongArgs) -> Result<ResultLine> {
    if args.rank.group.ranks != 2 {
        bail!(
            "ping-pong runs on exactly 2 ranks, not --ranks {}",
            args.rank.group.ranks
        );
    }
    let (length, bytes) = args.rank.resolve(RunLength::Count(DEFAULT_ROUND_TRIPS))?;
    let (group, mut receiver) = args.rank.join(PROGRAM, "", length, bytes)?;
    let mut out = vec![0u8; bytes];
    let mut inbox = vec![0u8; bytes];
    let mut round_trips = LatencyRecorder::default();
    let mut tally = Tally::start(length);

    if group.rank == 0 {
        let link = group.link(1);
        while let Some(sent_at) = tally.next_unit() {
            let done = tally.done;
            fill(&mut out, Header::data(PING, done));
            if !tally.completed(
                send_all(link, &out).and_then(|()| receiver.recv(link, &mut inbox)),
                || format!("round trip {done}"),
            )? {
                break;
            }
            let answered_at = Instant::now();
            let pong = check(&inbox).with_context(|| format!("round trip {done}: the pong"))?;
            if pong != Header::data(PONG, done) {
                bail!("round trip {done}: expected pong {done}, got {pong:?}");
            }
            round_trips.record_ns((answered_at - sent_at).as_nanos() as u64);
            tally.done += 1;
        }
        tell_stop(&[link], &mut out, tally.status, "rank")?;
    } else {
        let link = group.link(0);
        while tally.await_root(&mut receiver, link, &mut inbox, PING, "ping")? {
            let done = tally.done;
            fill(&mut out, Header::data(PONG, done));
            if !tally.completed(send_all(link, &out), || format!("answering ping {done}"))? {
                break;
            }
            tally.done += 1;
        }
    }

    let line = tally
        .line(PROGRAM, group.rank, group.ranks)
        .waits(&receiver.mode(), receiver.stats)
        .latency("round trip", round_trips.summary())
        .with("bytes", bytes as u64)
        .with("round_trips", tally.done);
    Ok(line)
}
