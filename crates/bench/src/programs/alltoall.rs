//! `cosched-alltoall` — the NAS IS-like job of seed `003_d5c4b72e5fa91aa6.txt` §4 ("IS and MG, two PVM
//! distributed applications from the NAS parallel benchmarks suite"; IS is class A in Figures 2 to 4): integer
//! sort's all-to-all key exchange, as a loop of iterations every rank takes part in.
//!
//! ## One iteration (every rank `r` of `N`, iteration `i`)
//! ```text
//! compute     --compute-us of dedicated CPU on its keys (the calibrated loop, crate::compute)
//! all-to-all  send a --bytes block to every other rank, receive one from every other rank (N-1 each way):
//!             an all-to-all personalized exchange; every block is checked byte for byte
//! reduce      send rank 0 its count of verified blocks (24 B); rank 0 adds them up and answers every rank
//!             with the total and whether to go on (32 B); every rank checks the total is N (N-1)
//! ```
//! The exchange goes through [`crate::channel::Receiver::exchange`]: every rank sends all its blocks before it
//! has received one, and sends what its sockets cannot take yet while it receives, so a block may be larger than
//! the sockets' buffers (the seed's IS class A moves ~2 MB per pair of ranks per iteration). Each rank sends to
//! rank+1, rank+2, ... in turn (the simulator's IS skeleton does too), so the links are busy at once.
//!
//! ## Parameters
//! - `--compute-us` — dedicated CPU time of a rank's compute phase per iteration, microseconds (default 1000).
//! - `--bytes` — bytes of each block, one per ordered pair of ranks, header included (16..=16 MiB; the shared
//!   flag, default 128).
//! - `--count` — iterations (default 1,000), or `--duration-s` — seconds; `--recv` — how every wait is done.
//!
//! Every block is data (16-byte header: tag `16 + from × N + to`, sequence = iteration) followed by the
//! pattern of its header ([`crate::message::fill`]), so a block that went to the wrong rank, or belongs to
//! another iteration, fails the check. `work_done` counts iterations in which every block a rank received and
//! the reduced total checked; every rank does the same iterations.
//!
//! Ending: rank 0 alone watches the run length and the stop signal; its answer to the reduction tells every
//! rank whether another iteration follows, so a duration-limited run ends on the same iteration everywhere. A
//! stop signal that lands while a rank waits ends that rank's run at once (`"status":"stopped"`); the others
//! then fail on the closed connection unless they were signalled too, as with the stencil.

use crate::args::{RankArgs, RunLength};
use crate::channel::{completed, CommError, Link, Receiver};
use crate::compute::{flops, DelayLoop};
use crate::message::{check, fill, Header, HEADER_BYTES};
use crate::net::{Group, Links};
use crate::rank::Tally;
use crate::result::{ResultLine, Status};
use crate::signals::stop_requested;
use crate::stats::LatencyRecorder;
use anyhow::{bail, Context, Result};
use clap::Parser;
use std::time::Instant;

pub const PROGRAM: &str = "alltoall";
/// Iterations when no length is given.
pub const DEFAULT_ITERATIONS: u64 = 1_000;
/// The most ranks: every rank holds a connection to every other.
pub const MAX_RANKS: usize = 1024;
/// A rank's count of verified blocks, to rank 0.
const PARTIAL: u32 = 1;
/// Rank 0's answer: the total and whether to go on.
const TOTAL: u32 = 2;
/// Tags of the blocks start here (`FIRST_BLOCK_TAG + from × N + to`).
const FIRST_BLOCK_TAG: u32 = 16;
const PARTIAL_BYTES: usize = HEADER_BYTES + 8;
const TOTAL_BYTES: usize = HEADER_BYTES + 16;

/// All-to-all personalized exchange of key blocks, then a reduction (seed 003's NAS IS).
/// Without --count or --duration-s: 1,000 iterations.
#[derive(Parser, Debug)]
#[command(name = "cosched-alltoall", version)]
pub struct AlltoallArgs {
    #[command(flatten)]
    pub rank: RankArgs,
    /// Dedicated CPU time of each rank's compute phase per iteration, microseconds.
    #[arg(long, default_value_t = 1000.0, value_name = "MICROSECONDS")]
    pub compute_us: f64,
}

/// The tag of the block `from` sends `to` in a run of `ranks`.
fn block_tag(from: usize, to: usize, ranks: usize) -> u32 {
    FIRST_BLOCK_TAG + (from * ranks + to) as u32
}

/// The peers in the order a rank sends to them: rank+1, rank+2, ... (mod N).
fn peers_in_turn(rank: usize, ranks: usize) -> impl Iterator<Item = usize> {
    (1..ranks).map(move |k| (rank + k) % ranks)
}

/// Fill `out` with a small message: `header`, then `words` little-endian.
fn encode(out: &mut [u8], header: Header, words: &[u64]) {
    header.write(out);
    for (chunk, w) in out[HEADER_BYTES..].chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
}

/// The word at `index` after the header of `buf`.
fn word(buf: &[u8], index: usize) -> u64 {
    let at = HEADER_BYTES + 8 * index;
    u64::from_le_bytes(buf[at..at + 8].try_into().unwrap())
}

#[derive(Debug, thiserror::Error)]
enum StepError {
    #[error(transparent)]
    Comm(#[from] CommError),
    #[error("{0}")]
    Protocol(String),
}

/// One rank's buffers and links for the exchange and the reduction.
struct Rank<'a> {
    group: &'a Group,
    /// Every other rank, in the order this rank sends to them.
    peers: Vec<&'a Link>,
    /// One outgoing block per peer (same order), and one inbox per peer.
    out: Vec<Vec<u8>>,
    inbox: Vec<Vec<u8>>,
    small_out: Vec<u8>,
    /// Rank 0: one partial per member, rank order.
    partials: Vec<u8>,
    blocks_verified: u64,
}

impl Rank<'_> {
    /// The all-to-all of iteration `i`: send every peer its block, receive theirs, check each one.
    fn exchange(&mut self, receiver: &mut Receiver, i: u64) -> Result<u64, StepError> {
        let (rank, ranks) = (self.group.rank, self.group.ranks);
        for (link, out) in self.peers.iter().zip(&mut self.out) {
            fill(out, Header::data(block_tag(rank, link.peer, ranks), i));
        }
        let outgoing: Vec<(&Link, &[u8])> = self
            .peers
            .iter()
            .copied()
            .zip(self.out.iter().map(Vec::as_slice))
            .collect();
        let mut pending: Vec<(&Link, &mut [u8])> = self
            .peers
            .iter()
            .copied()
            .zip(self.inbox.iter_mut().map(Vec::as_mut_slice))
            .collect();
        receiver.exchange(&outgoing, &mut pending)?;
        let mut verified = 0;
        for (link, block) in self.peers.iter().zip(&self.inbox) {
            let expected = Header::data(block_tag(link.peer, rank, ranks), i);
            match check(block) {
                Ok(h) if h == expected => verified += 1,
                Ok(h) => {
                    return Err(StepError::Protocol(format!(
                        "rank {}'s block is {h:?}, expected {expected:?}",
                        link.peer
                    )))
                }
                Err(e) => {
                    return Err(StepError::Protocol(format!(
                        "rank {}'s block: {e}",
                        link.peer
                    )))
                }
            }
        }
        self.blocks_verified += verified;
        Ok(verified)
    }

    /// The reduction of iteration `i` on a member: send rank 0 `verified`, receive the total and whether to go on.
    fn reduce_as_member(
        &mut self,
        receiver: &mut Receiver,
        i: u64,
        verified: u64,
    ) -> Result<bool, StepError> {
        let root = self.group.link(0);
        encode(
            &mut self.small_out[..PARTIAL_BYTES],
            Header::data(PARTIAL, i),
            &[verified],
        );
        let mut answer = [0u8; TOTAL_BYTES];
        receiver.exchange(
            &[(root, &self.small_out[..PARTIAL_BYTES])],
            &mut [(root, &mut answer)],
        )?;
        let header = Header::read(&answer).map_err(|e| StepError::Protocol(e.to_string()))?;
        let ranks = self.group.ranks as u64;
        if header != Header::data(TOTAL, i) || word(&answer, 0) != ranks * (ranks - 1) {
            return Err(StepError::Protocol(format!(
                "rank 0 answered {header:?} with total {}, expected {} blocks in iteration {i}",
                word(&answer, 0),
                ranks * (ranks - 1)
            )));
        }
        Ok(word(&answer, 1) == 1)
    }

    /// The reduction of iteration `i` on rank 0: gather the members' counts, add its own, check the total and
    /// answer each member with it and `more`, which `decide` gives once the total checked.
    fn reduce_as_root(
        &mut self,
        receiver: &mut Receiver,
        i: u64,
        verified: u64,
        decide: impl FnOnce() -> bool,
    ) -> Result<bool, StepError> {
        let members: Vec<&Link> = self.group.members().collect();
        receiver.recv_chunks(&members, &mut self.partials, PARTIAL_BYTES)?;
        let mut total = verified;
        for (link, partial) in members.iter().zip(self.partials.chunks(PARTIAL_BYTES)) {
            let header = Header::read(partial).map_err(|e| StepError::Protocol(e.to_string()))?;
            if header != Header::data(PARTIAL, i) {
                return Err(StepError::Protocol(format!(
                    "rank {} sent {header:?} for the reduction of iteration {i}",
                    link.peer
                )));
            }
            total += word(partial, 0);
        }
        let ranks = self.group.ranks as u64;
        if total != ranks * (ranks - 1) {
            return Err(StepError::Protocol(format!(
                "the ranks verified {total} blocks in iteration {i}, expected {}",
                ranks * (ranks - 1)
            )));
        }
        let more = decide();
        encode(
            &mut self.small_out,
            Header::data(TOTAL, i),
            &[total, more as u64],
        );
        let answers: Vec<(&Link, &[u8])> = members
            .iter()
            .map(|&l| (l, self.small_out.as_slice()))
            .collect();
        receiver.exchange(&answers, &mut [])?;
        Ok(more)
    }
}

pub fn run(args: AlltoallArgs) -> Result<ResultLine> {
    if !(args.compute_us.is_finite() && args.compute_us >= 0.0) {
        bail!(
            "--compute-us {} must be a non-negative number of microseconds",
            args.compute_us
        );
    }
    let ranks = args.rank.group.ranks;
    if ranks > MAX_RANKS {
        bail!("--ranks {ranks} is more than the all-to-all's {MAX_RANKS}");
    }
    let (length, bytes) = args.rank.resolve(RunLength::Count(DEFAULT_ITERATIONS))?;
    let delay = DelayLoop::calibrate();
    let compute_iterations = delay.iterations_for_us(args.compute_us);
    let group = Group::join(&args.rank.group.config(
        PROGRAM,
        "",
        format!("bytes={bytes} length={length:?}"),
        Links::Mesh,
    )?)?;
    let rank = group.rank;
    let peers: Vec<&Link> = peers_in_turn(rank, ranks).map(|p| group.link(p)).collect();
    let mut state = Rank {
        group: &group,
        out: vec![vec![0u8; bytes]; peers.len()],
        inbox: vec![vec![0u8; bytes]; peers.len()],
        peers,
        small_out: vec![0u8; TOTAL_BYTES],
        partials: vec![
            0u8;
            if rank == 0 {
                PARTIAL_BYTES * (ranks - 1)
            } else {
                0
            }
        ],
        blocks_verified: 0,
    };
    let mut receiver = Receiver::new(args.rank.recv.mode);
    let mut iterations = LatencyRecorder::default();
    let mut value = 0.0;
    let mut tally = Tally::start(length);

    // Only rank 0 decides whether another iteration follows (in its answer to the reduction); a stop signal ends
    // a rank's waits (`CommError::Stopped`), and rank 0 reads it when it decides.
    let mut signalled = false;
    let outcome: Result<(), StepError> = (|| loop {
        let began = Instant::now();
        let i = tally.done;
        value = flops(compute_iterations, value);
        let verified = state.exchange(&mut receiver, i)?;
        let more = if rank == 0 {
            state.reduce_as_root(&mut receiver, i, verified, || {
                signalled = stop_requested();
                !signalled && tally.length.keep_going(i + 1, tally.elapsed())
            })?
        } else {
            state.reduce_as_member(&mut receiver, i, verified)?
        };
        iterations.record_ns(began.elapsed().as_nanos() as u64);
        tally.done += 1;
        if !more {
            return Ok(());
        }
    })();
    let done = tally.done;
    match outcome {
        Ok(()) if signalled => tally.status = Status::Stopped,
        Ok(()) => {}
        Err(StepError::Comm(e)) => {
            if !completed(Err(e), || format!("rank {rank}, iteration {done}"))? {
                tally.status = Status::Stopped;
            }
        }
        Err(e) => return Err(anyhow::anyhow!(e)).context(format!("rank {rank}, iteration {done}")),
    }

    let line = tally
        .line(PROGRAM, rank, ranks)
        .waits(&receiver.mode(), receiver.stats)
        .latency("iteration", iterations.summary())
        .with("bytes", bytes as u64)
        .with("iterations", done)
        .with("blocks_verified", state.blocks_verified)
        .with("bytes_sent", done * (ranks as u64 - 1) * bytes as u64)
        .with("compute_us", args.compute_us)
        .with("compute_iterations", compute_iterations)
        .with("iterations_per_us", delay.iterations_per_us)
        .with("result", value);
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ordered_pair_has_its_own_tag_and_every_rank_sends_to_every_other() {
        let ranks = 5;
        let mut tags: Vec<u32> = (0..ranks)
            .flat_map(|f| {
                (0..ranks)
                    .filter(move |&t| t != f)
                    .map(move |t| block_tag(f, t, ranks))
            })
            .collect();
        tags.sort_unstable();
        tags.dedup();
        assert_eq!(tags.len(), ranks * (ranks - 1));
        assert!(tags.iter().all(|&t| t >= FIRST_BLOCK_TAG));
        for rank in 0..ranks {
            let mut peers: Vec<usize> = peers_in_turn(rank, ranks).collect();
            assert_eq!(peers[0], (rank + 1) % ranks);
            peers.sort_unstable();
            let expected: Vec<usize> = (0..ranks).filter(|&p| p != rank).collect();
            assert_eq!(peers, expected);
        }
    }

    #[test]
    fn small_messages_carry_their_words() {
        let mut buf = [0u8; TOTAL_BYTES];
        encode(&mut buf, Header::data(TOTAL, 7), &[12, 1]);
        assert_eq!(Header::read(&buf).unwrap(), Header::data(TOTAL, 7));
        assert_eq!((word(&buf, 0), word(&buf, 1)), (12, 1));
    }
}
