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

use crate::args::{BytesArgs, GroupArgs, LengthArgs, RecvArgs, RunLength};
use crate::channel::{completed, send_all, Link, Receiver};
use crate::compute::{flops, DelayLoop};
use crate::message::{check, check_from, fill, Header, Kind, HEADER_BYTES};
use crate::net::Group;
use crate::result::{ResultLine, Status};
use crate::signals::stop_requested;
use crate::stats::{CpuTimes, LatencyRecorder};
use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use std::time::Instant;

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
    pub group: GroupArgs,
    #[command(flatten)]
    pub recv: RecvArgs,
    #[command(flatten)]
    pub length: LengthArgs,
    #[command(flatten)]
    pub bytes: BytesArgs,
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
    if args.group.rank == 0 && args.role.is_some() {
        bail!("rank 0 is the master; --role is for the slaves (ranks 1..)");
    }
    let length = args.length.resolve(RunLength::Count(DEFAULT_ITERATIONS))?;
    let bytes = args.bytes.resolve()?;
    if bytes < ANSWER_END {
        bail!("--bytes {bytes} is too small: a master-slave reply carries a {HEADER_BYTES}-byte header and an 8-byte answer");
    }
    let role = args.role.unwrap_or(Role::default_for(args.group.rank));
    let role_name = if args.group.rank == 0 {
        "master"
    } else {
        role.name()
    };
    let delay = DelayLoop::calibrate();
    let compute_iterations = delay.iterations_for_us(args.compute_us);
    let group = Group::join(&args.group.config(
        PROGRAM,
        role_name,
        format!("bytes={bytes} length={length:?}"),
        false,
    )?)?;
    let mut receiver = Receiver::new(args.recv.mode);
    let mut out = vec![0u8; bytes];
    let mut iterations = LatencyRecorder::default();
    let mut done: u64 = 0;
    let mut status = Status::Complete;
    let mut value = 0.0;
    let mut messages_sent: u64 = 0;
    let cpu_start = CpuTimes::now();
    let start = Instant::now();

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
        loop {
            let began = Instant::now();
            if !length.keep_going(done, began - start) {
                break;
            }
            if stop_requested() {
                status = Status::Stopped;
                break;
            }
            fill(&mut out, Header::data(WORK, done));
            let outcome = slaves
                .iter()
                .try_for_each(|link| send_all(link, &out))
                .and_then(|()| {
                    let mut pending: Vec<(&Link, &mut [u8])> = repliers
                        .iter()
                        .copied()
                        .zip(inbox.chunks_mut(bytes))
                        .collect();
                    receiver.recv_each(&mut pending)
                });
            if !completed(outcome, || format!("iteration {done}"))? {
                status = Status::Stopped;
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
            done += 1;
        }
        fill(&mut out, Header::stop());
        for link in &slaves {
            let told = send_all(link, &out);
            if status == Status::Complete {
                told.with_context(|| format!("telling slave {} to stop", link.peer))?;
            }
        }
        line_extra.push(("rs_slaves", (repliers.len() as u64).into()));
        line_extra.push(("r_slaves", ((slaves.len() - repliers.len()) as u64).into()));
        line_extra.push(("replies_verified", replies_verified.into()));
    } else {
        let link = group.link(0);
        let mut inbox = vec![0u8; bytes];
        loop {
            if !completed(receiver.recv(link, &mut inbox), || {
                format!("waiting for message {done}")
            })? {
                status = Status::Stopped;
                break;
            }
            let work = check(&inbox).with_context(|| format!("message {done} from the master"))?;
            if work.kind == Kind::Stop {
                break;
            }
            if work != Header::data(WORK, done) {
                bail!("expected work message {done}, got {work:?}");
            }
            value = flops(compute_iterations, value);
            if role == Role::Rs {
                fill(&mut out, Header::data(REPLY, done));
                out[HEADER_BYTES..ANSWER_END].copy_from_slice(&answer(done).to_le_bytes());
                if !completed(send_all(link, &out), || {
                    format!("replying to message {done}")
                })? {
                    status = Status::Stopped;
                    break;
                }
                messages_sent += 1;
            }
            done += 1;
        }
    }

    let wall = start.elapsed();
    let cpu = CpuTimes::now().since(cpu_start);
    let mut line = ResultLine::new(PROGRAM, group.rank, group.ranks, status, done, wall, cpu)
        .waits(&receiver.mode(), receiver.stats)
        .latency("master iteration", iterations.summary())
        .with("role", role_name)
        .with("bytes", bytes as u64)
        .with("iterations", done)
        .with("messages_sent", messages_sent)
        .with("compute_us", args.compute_us)
        .with("compute_iterations", compute_iterations)
        .with("result", value);
    for (key, v) in line_extra {
        line = line.with(key, v);
    }
    line.work_expected = length.expected();
    Ok(line)
}
