//! `cosched-masterslave` — the synthetic master-slave application of seed `003_d5c4b72e5fa91aa6.txt` §4:
//! "one master and six slave tasks ... two kinds of slaves, one that only receives messages (r_slave) and
//! other that performs both receiving and sending messages (rs_slave). ... In each iteration, the master sends
//! a message to all the slaves. All the slaves, after receiving the message, perform a simple floating-point
//! computation. In addition, the rs_slaves reply to the master with the computation result. After receiving
//! all the rs_slave messages, the master repeats the process again."
//!
//! Rank 0 is the master; every other rank is a slave with `--role r` or `--role rs` (default: odd ranks rs,
//! even ranks r, so ranks 1, 2 are one of each as on the seed's nodes). The computation is `--compute-us` of
//! calibrated floating-point work plus a fixed answer `flops(64, sequence)` that an rs_slave sends back and the
//! master recomputes: `replies_verified` counts the answers that matched bit for bit.

use crate::args::{RankArgs, RunLength};
use crate::channel::{send_all, send_each, Link};
use crate::compute::{flops, DelayLoop};
use crate::message::{check_from, fill, Header, HEADER_BYTES};
use crate::rank::{tell_stop, Tally};
use crate::result::ResultLine;
use crate::stats::LatencyRecorder;
use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};

pub const PROGRAM: &str = "masterslave";
const WORK: u32 = 1;
const REPLY: u32 = 2;
/// Iterations of the master's loop when no length is given.
pub const DEFAULT_ITERATIONS: u64 = 10_000;
/// The answer travels in bytes 16..24 of a reply.
const ANSWER_END: usize = HEADER_BYTES + 8;

/// What a slave does with the master's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// r_slave: receive and compute.
    R,
    /// rs_slave: receive, compute and reply with the result.
    Rs,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::R => "r",
            Role::Rs => "rs",
        }
    }

    /// The default role of a slave rank: odd ranks rs, even ranks r.
    pub fn default_for(rank: usize) -> Role {
        if rank % 2 == 1 {
            Role::Rs
        } else {
            Role::R
        }
    }
}

/// The answer a slave computes for message `sequence` (and the master checks).
pub fn answer(sequence: u64) -> f64 {
    flops(64, sequence as f64)
}

/// One master, slaves that only receive (r) or receive and reply (rs) (seed 003 master-slave).
/// Without --count or --duration-s: 10,000 master iterations.
#[derive(Parser, Debug)]
#[command(name = "cosched-masterslave", version)]
pub struct MasterSlaveArgs {
    #[command(flatten)]
    pub rank: RankArgs,
    /// Dedicated CPU time of a slave's computation per message, microseconds.
    #[arg(long, default_value_t = 100.0, value_name = "MICROSECONDS")]
    pub compute_us: f64,
    /// A slave's role (default: odd ranks rs, even ranks r). Not for rank 0, the master.
    #[arg(long, value_enum)]
    pub role: Option<Role>,
}

pub fn run(args: MasterSlaveArgs) -> Result<ResultLine> {
    if !(args.compute_us.is_finite() && args.compute_us >= 0.0) {
        bail!(
            "--compute-us {} must be a non-negative number of microseconds",
            args.compute_us
        );
    }
    let rank = args.rank.group.rank;
    if rank == 0 && args.role.is_some() {
        bail!("rank 0 is the master; --role is for the slaves (ranks 1..)");
    }
    let (length, bytes) = args.rank.resolve(RunLength::Count(DEFAULT_ITERATIONS))?;
    if bytes < ANSWER_END {
        bail!("--bytes {bytes} is too small: a master-slave reply carries a {HEADER_BYTES}-byte header and an 8-byte answer");
    }
    let role = args.role.unwrap_or(Role::default_for(rank));
    let role_name = if rank == 0 { "master" } else { role.name() };
    let delay = DelayLoop::calibrate();
    let compute_iterations = delay.iterations_for_us(args.compute_us);
    let (group, mut receiver) = args.rank.join(PROGRAM, role_name, length, bytes)?;
    let mut out = vec![0u8; bytes];
    let mut iterations = LatencyRecorder::default();
    let mut value = 0.0;
    let mut messages_sent: u64 = 0;
    let mut tally = Tally::start(length);

    let mut line_extra: Vec<(&str, serde_json::Value)> = Vec::new();
    if group.rank == 0 {
        let slaves: Vec<&Link> = group.members().collect();
        let repliers: Vec<&Link> = slaves
            .iter()
            .copied()
            .filter(|l| group.roles[l.peer] == "rs")
            .collect();
        let mut inbox = vec![0u8; bytes * repliers.len()];
        let mut replies_verified: u64 = 0;
        while let Some(began) = tally.next_unit() {
            let done = tally.done;
            fill(&mut out, Header::data(WORK, done));
            let outcome = send_each(&slaves, &out)
                .and_then(|()| receiver.recv_chunks(&repliers, &mut inbox, bytes));
            if !tally.completed(outcome, || format!("iteration {done}"))? {
                break;
            }
            messages_sent += slaves.len() as u64;
            let expected = answer(done);
            for (link, reply) in repliers.iter().zip(inbox.chunks(bytes)) {
                let header = check_from(reply, ANSWER_END)
                    .with_context(|| format!("iteration {done}: rs_slave {}'s reply", link.peer))?;
                let got = f64::from_le_bytes(reply[HEADER_BYTES..ANSWER_END].try_into().unwrap());
                if header != Header::data(REPLY, done) || got.to_bits() != expected.to_bits() {
                    bail!("iteration {done}: rs_slave {} replied {header:?} with {got}, expected {expected}", link.peer);
                }
                replies_verified += 1;
            }
            iterations.record_ns(began.elapsed().as_nanos() as u64);
            tally.done += 1;
        }
        tell_stop(&slaves, &mut out, tally.status, "slave")?;
        line_extra.push(("rs_slaves", (repliers.len() as u64).into()));
        line_extra.push(("r_slaves", ((slaves.len() - repliers.len()) as u64).into()));
        line_extra.push(("replies_verified", replies_verified.into()));
    } else {
        let link = group.link(0);
        let mut inbox = vec![0u8; bytes];
        while tally.await_root(&mut receiver, link, &mut inbox, WORK, "work message")? {
            let done = tally.done;
            value = flops(compute_iterations, value);
            if role == Role::Rs {
                fill(&mut out, Header::data(REPLY, done));
                out[HEADER_BYTES..ANSWER_END].copy_from_slice(&answer(done).to_le_bytes());
                if !tally.completed(send_all(link, &out), || {
                    format!("replying to message {done}")
                })? {
                    break;
                }
                messages_sent += 1;
            }
            tally.done += 1;
        }
    }

    let mut line = tally
        .line(PROGRAM, group.rank, group.ranks)
        .waits(&receiver.mode(), receiver.stats)
        .latency("master iteration", iterations.summary())
        .with("role", role_name)
        .with("bytes", bytes as u64)
        .with("iterations", tally.done)
        .with("messages_sent", messages_sent)
        .with("compute_us", args.compute_us)
        .with("compute_iterations", compute_iterations)
        .with("result", value);
    for (key, v) in line_extra {
        line = line.with(key, v);
    }
    Ok(line)
}
