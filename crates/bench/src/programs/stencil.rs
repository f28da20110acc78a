//! `cosched-stencil` — the Mixed workload's SOR job (seed `000_e8004e1596fde6a5.txt` §4.1.2): red-black SOR on
//! a `--grid` × `--grid` Laplace problem (the seed: 128 × 128) in row blocks, one per rank, exchanging halo
//! rows with the neighbours above and below before each half-sweep (the math: [`crate::stencil`]).
//!
//! At the end every rank sends its per-row sums to rank 0, which prints a checksum identical bit for bit for
//! any rank count (`--ranks 1` runs the serial reference without any network).
//!
//! Ending a duration-limited run: only rank 0 watches the clock. When time is up at iteration `i` it announces
//! `stop_at = i + ranks` in its halo messages; every rank forwards the smallest `stop_at` it has seen in its
//! own halos. News travels one rank per exchange (two per iteration), so every rank knows `stop_at` before it
//! gets there, and all ranks do the same number of iterations.
//!
//! Halo message: the 16-byte header (tag = exchange phase, sequence = iteration), `stop_at` (u64), then one
//! row of `grid` f64s. `--bytes` is accepted for a uniform harness interface and ignored: a halo message is
//! `24 + 8 × grid` bytes.

use crate::args::{RankArgs, RunLength};
use crate::channel::{send_all, CommError, Link, Receiver};
use crate::message::{Header, HEADER_BYTES};
use crate::net::{Group, Links};
use crate::rank::{Tally, NO_STOP};
use crate::result::{ResultLine, Status};
use crate::stats::LatencyRecorder;
use crate::stencil::{partition, serial, Block, Checksum, MAX_GRID, MIN_GRID};
use anyhow::{bail, Context, Result};
use clap::Parser;

pub const PROGRAM: &str = "stencil";
/// Iterations when no length is given.
pub const DEFAULT_ITERATIONS: u64 = 1_000;
const RED_PHASE: u32 = 0;
const BLACK_PHASE: u32 = 1;
const FINAL_PHASE: u32 = 2;
const ROW_SUMS: u32 = 3;
const BODY: usize = HEADER_BYTES + 8;

/// Red-black SOR on a 2-D grid in row blocks with halo exchange (seed 000 Mixed's SOR).
/// Without --count or --duration-s: 1,000 iterations. --ranks 1 runs the serial reference (needs --count).
#[derive(Parser, Debug)]
#[command(name = "cosched-stencil", version)]
pub struct StencilArgs {
    #[command(flatten)]
    pub rank: RankArgs,
    /// Cells per side of the square grid, boundary included (the seed: 128).
    #[arg(long, default_value_t = 128)]
    pub grid: usize,
    /// Over-relaxation factor, 0 < omega < 2.
    #[arg(long, default_value_t = 1.5)]
    pub omega: f64,
}

fn encode_row(buf: &mut [u8], header: Header, stop_at: u64, row: &[f64]) {
    header.write(buf);
    buf[HEADER_BYTES..BODY].copy_from_slice(&stop_at.to_le_bytes());
    for (chunk, v) in buf[BODY..].chunks_exact_mut(8).zip(row) {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
}

fn decode_row(buf: &[u8], row: &mut [f64]) -> (Result<Header, crate::message::FrameError>, u64) {
    for (v, chunk) in row.iter_mut().zip(buf[BODY..].chunks_exact(8)) {
        *v = f64::from_le_bytes(chunk.try_into().unwrap());
    }
    (
        Header::read(buf),
        u64::from_le_bytes(buf[HEADER_BYTES..BODY].try_into().unwrap()),
    )
}

/// One rank's side of the halo exchange.
struct Halo<'a> {
    up: Option<&'a Link>,
    down: Option<&'a Link>,
    out_up: Vec<u8>,
    out_down: Vec<u8>,
    in_up: Vec<u8>,
    in_down: Vec<u8>,
    row: Vec<f64>,
}

impl Halo<'_> {
    /// Send the edge rows, receive the neighbours', install them as halos; returns the smallest `stop_at` seen.
    fn exchange(
        &mut self,
        block: &mut Block,
        receiver: &mut Receiver,
        phase: u32,
        iteration: u64,
        stop_at: u64,
    ) -> Result<u64, ExchangeError> {
        let header = Header::data(phase, iteration);
        if let Some(up) = self.up {
            encode_row(&mut self.out_up, header, stop_at, block.top_row());
            send_all(up, &self.out_up)?;
        }
        if let Some(down) = self.down {
            encode_row(&mut self.out_down, header, stop_at, block.bottom_row());
            send_all(down, &self.out_down)?;
        }
        let mut pending: Vec<(&Link, &mut [u8])> = Vec::with_capacity(2);
        if let Some(up) = self.up {
            pending.push((up, &mut self.in_up));
        }
        if let Some(down) = self.down {
            pending.push((down, &mut self.in_down));
        }
        receiver.recv_each(&mut pending)?;
        let mut seen = stop_at;
        for (link, inbox, above) in [
            (self.up, &self.in_up, true),
            (self.down, &self.in_down, false),
        ] {
            let Some(link) = link else { continue };
            let (got, their_stop) = decode_row(inbox, &mut self.row);
            match got {
                Ok(h) if h == header => {}
                Ok(h) => {
                    return Err(ExchangeError::Protocol(format!(
                        "rank {} sent {h:?}, expected {header:?}",
                        link.peer
                    )))
                }
                Err(e) => return Err(ExchangeError::Protocol(format!("rank {}: {e}", link.peer))),
            }
            seen = seen.min(their_stop);
            if above {
                block.set_halo_above(&self.row);
            } else {
                block.set_halo_below(&self.row);
            }
        }
        Ok(seen)
    }
}

#[derive(Debug, thiserror::Error)]
enum ExchangeError {
    #[error(transparent)]
    Comm(#[from] CommError),
    #[error("{0}")]
    Protocol(String),
}

pub fn run(args: StencilArgs) -> Result<ResultLine> {
    let grid = args.grid;
    if !(MIN_GRID..=MAX_GRID).contains(&grid) {
        bail!("--grid {grid} is out of range {MIN_GRID}..={MAX_GRID}");
    }
    if !(args.omega > 0.0 && args.omega < 2.0) {
        bail!(
            "--omega {} must lie strictly between 0 and 2 (SOR diverges otherwise)",
            args.omega
        );
    }
    let ranks = args.rank.group.ranks;
    if ranks == 0 || ranks > grid - 2 {
        bail!(
            "--ranks {ranks}: a {grid}-grid has {} interior rows, so 1..={} ranks",
            grid - 2,
            grid - 2
        );
    }
    // --bytes is checked, then ignored: a halo message's size follows from --grid.
    let (length, _) = args.rank.resolve(RunLength::Count(DEFAULT_ITERATIONS))?;
    if ranks == 1 {
        return run_serial(&args, length);
    }

    let group = Group::join(&args.rank.group.config(
        PROGRAM,
        "",
        format!("grid={grid} omega={} length={length:?}", args.omega),
        Links::Neighbours,
    )?)?;
    let rank = group.rank;
    let (first, rows) = partition(grid, ranks, rank);
    let mut block = Block::new(grid, first, rows);
    let message = BODY + 8 * grid;
    let mut halo = Halo {
        up: (rank > 0).then(|| group.link(rank - 1)),
        down: (rank + 1 < ranks).then(|| group.link(rank + 1)),
        out_up: vec![0; message],
        out_down: vec![0; message],
        in_up: vec![0; message],
        in_down: vec![0; message],
        row: vec![0.0; grid],
    };
    let mut receiver = Receiver::new(args.rank.recv.mode);
    let mut iterations = LatencyRecorder::default();
    let mut tally = Tally::start(length);

    let outcome = tally.run_in_step(rank, ranks, &mut iterations, |done, stop_at| {
        let stop_at = halo.exchange(&mut block, &mut receiver, RED_PHASE, done, stop_at)?;
        block.sweep(0, args.omega);
        let stop_at = halo.exchange(&mut block, &mut receiver, BLACK_PHASE, done, stop_at)?;
        block.sweep(1, args.omega);
        Ok::<_, ExchangeError>(stop_at)
    });
    let done = tally.done;
    let stop_at = match outcome {
        Ok(agreed) => agreed,
        Err(ExchangeError::Comm(CommError::Stopped)) => {
            tally.status = Status::Stopped;
            NO_STOP
        }
        Err(e) => return Err(anyhow::anyhow!(e)).context(format!("rank {rank}, iteration {done}")),
    };

    // The checksum: fresh halos, then every rank's per-row sums to rank 0.
    let mut checksum = None;
    if tally.status == Status::Complete {
        match halo.exchange(&mut block, &mut receiver, FINAL_PHASE, done, stop_at) {
            Ok(_) => {}
            Err(ExchangeError::Comm(CommError::Stopped)) => tally.status = Status::Stopped,
            Err(e) => {
                return Err(anyhow::anyhow!(e)).context(format!("rank {rank}, final halo exchange"))
            }
        }
    }
    if tally.status == Status::Complete {
        checksum = gather_checksum(&group, &block, &mut receiver, done)?;
    }

    let line = tally
        .line(PROGRAM, rank, ranks)
        .waits(&receiver.mode(), receiver.stats)
        .latency("iteration", iterations.summary());
    Ok(describe(line, &args, first, rows, message, done, checksum))
}

/// Ranks ≥ 1 send `(Σ r², Σ u)` per row to rank 0, which combines them in row order.
fn gather_checksum(
    group: &Group,
    block: &Block,
    receiver: &mut Receiver,
    iterations: u64,
) -> Result<Option<Checksum>> {
    let sums = block.row_sums();
    let encode = |rows: &[(f64, f64)]| {
        let mut buf = vec![0u8; HEADER_BYTES + 16 * rows.len()];
        Header::data(ROW_SUMS, iterations).write(&mut buf);
        for (chunk, (r2, u)) in buf[HEADER_BYTES..].chunks_exact_mut(16).zip(rows) {
            chunk[..8].copy_from_slice(&r2.to_le_bytes());
            chunk[8..].copy_from_slice(&u.to_le_bytes());
        }
        buf
    };
    if group.rank != 0 {
        send_all(group.link(0), &encode(&sums)).context("sending row sums to rank 0")?;
        return Ok(None);
    }
    let members: Vec<&Link> = group.members().collect();
    let mut inboxes: Vec<Vec<u8>> = members
        .iter()
        .map(|l| vec![0u8; HEADER_BYTES + 16 * partition(block.grid, group.ranks, l.peer).1])
        .collect();
    let mut pending: Vec<(&Link, &mut [u8])> = members
        .iter()
        .copied()
        .zip(inboxes.iter_mut().map(|b| b.as_mut_slice()))
        .collect();
    receiver
        .recv_each(&mut pending)
        .context("gathering row sums")?;
    let mut all = sums;
    for (link, inbox) in members.iter().zip(&inboxes) {
        let header = Header::read(inbox)?;
        if header != Header::data(ROW_SUMS, iterations) {
            bail!(
                "rank {} sent {header:?} instead of its row sums after {iterations} iterations",
                link.peer
            );
        }
        all.extend(inbox[HEADER_BYTES..].chunks_exact(16).map(|c| {
            (
                f64::from_le_bytes(c[..8].try_into().unwrap()),
                f64::from_le_bytes(c[8..].try_into().unwrap()),
            )
        }));
    }
    Ok(Some(Checksum::from_rows(&all)))
}

fn describe(
    line: ResultLine,
    args: &StencilArgs,
    first: usize,
    rows: usize,
    message: usize,
    iterations: u64,
    checksum: Option<Checksum>,
) -> ResultLine {
    let mut line = line
        .with("grid", args.grid as u64)
        .with("omega", args.omega)
        .with("iterations", iterations)
        .with("first_row", first as u64)
        .with("rows", rows as u64)
        .with("halo_bytes", message as u64);
    if let Some(c) = checksum {
        line = line
            .with("residual_norm", c.residual_norm)
            .with("grid_sum", c.grid_sum)
            .with("checksum", c.hex());
    }
    line
}

/// `--ranks 1`: the serial reference, no network.
fn run_serial(args: &StencilArgs, length: RunLength) -> Result<ResultLine> {
    let group = &args.rank.group;
    if group.listen.is_some() || group.connect.is_some() || group.rank != 0 {
        bail!("--ranks 1 runs alone: drop --rank, --listen and --connect");
    }
    let Some(count) = length.expected() else {
        bail!("--ranks 1 (the serial reference) needs --count, not --duration-s");
    };
    let mut tally = Tally::start(length);
    let checksum = serial(args.grid, args.omega, count);
    tally.done = count;
    let line = tally.line(PROGRAM, 0, 1);
    Ok(describe(
        line,
        args,
        1,
        args.grid - 2,
        0,
        count,
        Some(checksum),
    ))
}
