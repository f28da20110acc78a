//! `cosched-multigrid` — the NAS MG-like job of seed `003_d5c4b72e5fa91aa6.txt` §4 ("IS and MG, two PVM
//! distributed applications from the NAS parallel benchmarks suite"; MG is class A in Figure 2, class T with
//! 600 iterations beside IS in Figure 3): multigrid V-cycles over a grid split in slabs around a ring of ranks,
//! with a halo exchange between ring neighbours at every level.
//!
//! ## One V-cycle (every rank `r` of `N`; left = r-1, right = r+1, mod N)
//! ```text
//! for level l in 0, 1, .., L-1, L-2, .., 0      (2L - 1 visits; 0 is the finest)
//!     compute  --compute-us / 2^l of dedicated CPU (the calibrated loop, crate::compute)
//!     halo     send a --bytes / 2^l message to the left and one to the right, receive one from each
//! ```
//! Both the work and the message halve with each coarser level (the seed's MG shrinks a 3-D grid, where the
//! work falls by 8 and a face by 4 a level, as the simulator's MG skeleton models; halving keeps a coarse level's
//! exchange worth measuring with few levels). A message never shrinks below [`MIN_HALO_BYTES`].
//!
//! ## Parameters
//! - `--levels` — L, levels of the V-cycle, 1..=[`MAX_LEVELS`] (default 4).
//! - `--compute-us` — dedicated CPU time of the compute phase at the finest level, microseconds (default 1000).
//! - `--bytes` — bytes of a halo message at the finest level, header included (the shared flag, default 128;
//!   24..=16 MiB).
//! - `--count` — V-cycles (default 100), or `--duration-s` — seconds; `--recv` — how every wait is done.
//!
//! A halo message: the 16-byte header (tag = `2 × visit + direction`, 0 leftwards and 1 rightwards; sequence =
//! V-cycle), `stop_at` (u64), then the pattern of its header ([`crate::message::fill`]), checked byte for byte.
//! `work_done` counts V-cycles whose every halo checked. The exchange goes through
//! [`crate::channel::Receiver::exchange`], so a halo may be larger than the sockets' buffers. With 2 ranks the
//! left and right neighbour are the same rank: the two messages travel one after the other on one link.
//!
//! Ending a duration-limited run (as the stencil): only rank 0 watches the clock. When time is up at V-cycle
//! `i` it announces `stop_at = i + N` in its halos; every rank forwards the smallest `stop_at` it has seen.
//! News travels at least one rank per V-cycle each way round the ring, so every rank knows `stop_at` before it
//! gets there, and all ranks do the same number of V-cycles.

use crate::args::{RankArgs, RunLength};
use crate::channel::{completed, CommError, Link, Receiver};
use crate::compute::{flops, DelayLoop};
use crate::message::{check_from, fill, Header, HEADER_BYTES};
use crate::net::{Group, Links};
use crate::rank::Tally;
use crate::result::{ResultLine, Status};
use crate::stats::LatencyRecorder;
use anyhow::{bail, Context, Result};
use clap::Parser;

pub const PROGRAM: &str = "multigrid";
/// V-cycles when no length is given.
pub const DEFAULT_CYCLES: u64 = 100;
/// The most levels of a V-cycle.
pub const MAX_LEVELS: u32 = 16;
/// The smallest halo message: the header and `stop_at`.
pub const MIN_HALO_BYTES: usize = HEADER_BYTES + 8;
const LEFTWARDS: u32 = 0;
const RIGHTWARDS: u32 = 1;

/// V-cycles over L levels with halo exchanges around a ring of ranks (seed 003's NAS MG).
/// Without --count or --duration-s: 100 V-cycles.
#[derive(Parser, Debug)]
#[command(name = "cosched-multigrid", version)]
pub struct MultigridArgs {
    #[command(flatten)]
    pub rank: RankArgs,
    /// Levels of each V-cycle (level 0 the finest; each coarser one halves the work and the message).
    #[arg(long, default_value_t = 4)]
    pub levels: u32,
    /// Dedicated CPU time of a rank's compute phase at the finest level, microseconds.
    #[arg(long, default_value_t = 1000.0, value_name = "MICROSECONDS")]
    pub compute_us: f64,
}

/// The levels a V-cycle visits in order: down from the finest to the coarsest, and back up.
pub fn visits(levels: u32) -> Vec<u32> {
    (0..levels)
        .chain((0..levels.saturating_sub(1)).rev())
        .collect()
}

/// Bytes of a halo message at `level` when the finest level's is `bytes`.
pub fn halo_bytes(bytes: usize, level: u32) -> usize {
    (bytes >> level).max(MIN_HALO_BYTES)
}

/// Dedicated CPU of the compute phase at `level` when the finest level's is `compute_us`, microseconds.
pub fn compute_us_at(compute_us: f64, level: u32) -> f64 {
    compute_us / f64::from(1u32 << level)
}

fn tag(visit: usize, direction: u32) -> u32 {
    2 * visit as u32 + direction
}

/// Write a halo message into `buf`: header, `stop_at`, pattern.
fn encode(buf: &mut [u8], header: Header, stop_at: u64) {
    fill(buf, header);
    buf[HEADER_BYTES..MIN_HALO_BYTES].copy_from_slice(&stop_at.to_le_bytes());
}

#[derive(Debug, thiserror::Error)]
enum ExchangeError {
    #[error(transparent)]
    Comm(#[from] CommError),
    #[error("{0}")]
    Protocol(String),
}

/// Check a halo message from `peer`, which must carry `expected`; returns its `stop_at`.
fn decode(buf: &[u8], expected: Header, peer: usize) -> Result<u64, ExchangeError> {
    match check_from(buf, MIN_HALO_BYTES) {
        Ok(h) if h == expected => Ok(u64::from_le_bytes(
            buf[HEADER_BYTES..MIN_HALO_BYTES].try_into().unwrap(),
        )),
        Ok(h) => Err(ExchangeError::Protocol(format!(
            "rank {peer} sent {h:?}, expected {expected:?}"
        ))),
        Err(e) => Err(ExchangeError::Protocol(format!("rank {peer}: {e}"))),
    }
}

/// One rank's side of the ring's halo exchange.
struct Ring<'a> {
    left: &'a Link,
    right: &'a Link,
    /// Outgoing messages, to the left then to the right; incoming, from the left then from the right. With 2
    /// ranks (left and right the same rank) one buffer each way holds both messages: out = [to left | to right],
    /// in = [from right | from left] (the peer sends its leftwards message first, and it is for its left: us).
    out: Vec<u8>,
    inbox: Vec<u8>,
    halos_verified: u64,
}

impl Ring<'_> {
    /// The halo exchange of `visit` (at a level whose message is `size` bytes) of V-cycle `cycle`: returns the
    /// smallest `stop_at` seen.
    fn exchange(
        &mut self,
        receiver: &mut Receiver,
        visit: usize,
        size: usize,
        cycle: u64,
        stop_at: u64,
    ) -> Result<u64, ExchangeError> {
        let to_left = Header::data(tag(visit, LEFTWARDS), cycle);
        let to_right = Header::data(tag(visit, RIGHTWARDS), cycle);
        let (out_left, out_right) = self.out.split_at_mut(size);
        encode(out_left, to_left, stop_at);
        encode(&mut out_right[..size], to_right, stop_at);
        // What each neighbour sends us: the left one sent rightwards, the right one leftwards.
        let (from_left, from_right) = if self.left.peer == self.right.peer {
            let link = self.left;
            receiver.exchange(
                &[(link, &self.out[..2 * size])],
                &mut [(link, &mut self.inbox[..2 * size])],
            )?;
            let (leftwards, rightwards) = self.inbox[..2 * size].split_at(size);
            (rightwards, leftwards)
        } else {
            let (in_left, in_right) = self.inbox.split_at_mut(size);
            receiver.exchange(
                &[
                    (self.left, &self.out[..size]),
                    (self.right, &self.out[size..2 * size]),
                ],
                &mut [(self.left, in_left), (self.right, &mut in_right[..size])],
            )?;
            (&self.inbox[..size], &self.inbox[size..2 * size])
        };
        let seen_left = decode(from_left, to_right, self.left.peer)?;
        let seen_right = decode(from_right, to_left, self.right.peer)?;
        self.halos_verified += 2;
        Ok(stop_at.min(seen_left).min(seen_right))
    }
}

pub fn run(args: MultigridArgs) -> Result<ResultLine> {
    if !(args.compute_us.is_finite() && args.compute_us >= 0.0) {
        bail!(
            "--compute-us {} must be a non-negative number of microseconds",
            args.compute_us
        );
    }
    if !(1..=MAX_LEVELS).contains(&args.levels) {
        bail!("--levels {} is out of range 1..={MAX_LEVELS}", args.levels);
    }
    let (length, bytes) = args.rank.resolve(RunLength::Count(DEFAULT_CYCLES))?;
    if bytes < MIN_HALO_BYTES {
        bail!("--bytes {bytes} is too small: a halo message carries a {HEADER_BYTES}-byte header and an 8-byte stop mark ({MIN_HALO_BYTES} bytes)");
    }
    let delay = DelayLoop::calibrate();
    let compute_iterations: Vec<u64> = (0..args.levels)
        .map(|l| delay.iterations_for_us(compute_us_at(args.compute_us, l)))
        .collect();
    let group = Group::join(&args.rank.group.config(
        PROGRAM,
        "",
        format!("bytes={bytes} levels={} length={length:?}", args.levels),
        Links::Neighbours,
    )?)?;
    let (rank, ranks) = (group.rank, group.ranks);
    let mut ring = Ring {
        left: group.link((rank + ranks - 1) % ranks),
        right: group.link((rank + 1) % ranks),
        out: vec![0u8; 2 * bytes],
        inbox: vec![0u8; 2 * bytes],
        halos_verified: 0,
    };
    let visits = visits(args.levels);
    let mut receiver = Receiver::new(args.rank.recv.mode);
    let mut cycles = LatencyRecorder::default();
    let mut value = 0.0;
    let mut tally = Tally::start(length);

    let outcome = tally.run_in_step(rank, ranks, &mut cycles, |cycle, mut stop_at| {
        for (visit, &level) in visits.iter().enumerate() {
            value = flops(compute_iterations[level as usize], value);
            let size = halo_bytes(bytes, level);
            stop_at = ring.exchange(&mut receiver, visit, size, cycle, stop_at)?;
        }
        Ok::<_, ExchangeError>(stop_at)
    });
    let done = tally.done;
    match outcome {
        Ok(_) => {}
        Err(ExchangeError::Comm(e)) => {
            if !completed(Err(e), || format!("rank {rank}, V-cycle {done}"))? {
                tally.status = Status::Stopped;
            }
        }
        Err(e) => return Err(anyhow::anyhow!(e)).context(format!("rank {rank}, V-cycle {done}")),
    }

    let line = tally
        .line(PROGRAM, rank, ranks)
        .waits(&receiver.mode(), receiver.stats)
        .latency("V-cycle", cycles.summary())
        .with("bytes", bytes as u64)
        .with("levels", args.levels)
        .with("cycles", done)
        .with("halos_verified", ring.halos_verified)
        .with("left", ring.left.peer as u64)
        .with("right", ring.right.peer as u64)
        .with("compute_us", args.compute_us)
        .with("compute_iterations", compute_iterations[0])
        .with("iterations_per_us", delay.iterations_per_us)
        .with("result", value);
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v_cycle_goes_down_and_back_up() {
        assert_eq!(visits(1), [0]);
        assert_eq!(visits(4), [0, 1, 2, 3, 2, 1, 0]);
        assert_eq!(visits(MAX_LEVELS).len(), 2 * MAX_LEVELS as usize - 1);
    }

    #[test]
    fn work_and_messages_halve_with_the_level() {
        assert_eq!(halo_bytes(4096, 0), 4096);
        assert_eq!(halo_bytes(4096, 3), 512);
        // Never below the header and the stop mark.
        assert_eq!(halo_bytes(4096, 15), MIN_HALO_BYTES);
        assert_eq!(compute_us_at(1000.0, 0), 1000.0);
        assert_eq!(compute_us_at(1000.0, 2), 250.0);
    }

    #[test]
    fn a_halo_carries_its_stop_mark_and_is_checked() {
        let mut buf = vec![0u8; 64];
        let header = Header::data(tag(3, RIGHTWARDS), 9);
        encode(&mut buf, header, 42);
        assert_eq!(decode(&buf, header, 1).unwrap(), 42);
        let other = Header::data(tag(3, LEFTWARDS), 9);
        assert!(decode(&buf, other, 1).is_err());
        buf[40] ^= 1;
        assert!(decode(&buf, header, 1).is_err());
    }
}
