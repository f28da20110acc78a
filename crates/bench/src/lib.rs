//! # cosched-bench — the real benchmark programs
//!
//! The parallel workloads of the seed papers as real Linux programs over TCP, plus the local load they compete
//! with. The lab (`cosched lab`) starts them inside network namespaces on pinned CPUs and reads their one JSON
//! result line; they are just as easy to run by hand on loopback.
//!
//! | binary | workload | seed |
//! |---|---|---|
//! | `cosched-pingpong` | 2 ranks exchange a 128-byte token (Latency) | `000_e8004e1596fde6a5.txt` §4.1.2 |
//! | `cosched-barrier` | root broadcasts "passed", all compute ~78 µs, all report "at barrier" (Barrier) | `000` §4.1.2 |
//! | `cosched-stencil` | red-black SOR on a 2-D grid in row blocks, halo exchange (Mixed's SOR) | `000` §4.1.2 |
//! | `cosched-masterslave` | 1 master; r_slaves receive, rs_slaves receive and reply | `003_d5c4b72e5fa91aa6.txt` §4 |
//! | `cosched-alltoall` | compute, all-to-all personalized exchange of key blocks, reduction via rank 0 (NAS IS) | `003` §4 |
//! | `cosched-multigrid` | V-cycles over L levels: compute and ring halo exchange, both halving per level (NAS MG) | `003` §4 |
//! | `cosched-calcula` | floating-point loop; prints its CPU share | `003` §4 |
//! | `cosched-local` | interactive stand-in: bursts of memory, CPU and system calls at exponential intervals | `004_3903357666129396.txt` §3 |
//! | `mpi/mpi_pingpong.c` | unmodified Open MPI ping-pong (`mpi/build.sh`) | `000` §4.1.2 |
//!
//! ## Shared pieces
//! - [`net`] — connection setup among N ranks (rank 0 listens; retry while peers start; TCP_NODELAY): the star,
//!   neighbour links (a ring with the star) or a full mesh.
//! - [`channel`] — the three receive modes of `cosched_policy::spin::ReceiveMode`; `--recv` parses with its `FromStr`;
//!   an exchange that sends while it receives (no deadlock on full socket buffers).
//! - [`message`] — framing and content checks; [`stats`] — percentiles, histogram, CPU time;
//!   [`compute`] — the calibrated floating-point delay loop; [`result`] — the JSON result line.
//! - [`args`] — the flags ([`args::RankArgs`]: those of every program whose ranks exchange messages);
//!   [`rank`] — the clocks, count and status of a run and the result line they make; a follower's wait for
//!   rank 0; rank 0's stop message.
//!
//! `cosched bench <program> ...` runs the same programs from the one `cosched` binary ([`cli`]).
//!
//! ## Exit codes
//! 0: the run completed, or SIGTERM/SIGINT ended it and the result line says `"status":"stopped"`;
//! 1: the run failed (a peer vanished, a message was corrupt, setup timed out) — the reason is on stderr;
//! 2: bad flags (clap's usage error).

pub mod args;
pub mod channel;
pub mod cli;
pub mod compute;
pub mod message;
pub mod net;
pub mod programs;
pub mod rank;
pub mod result;
pub mod signals;
pub mod stats;
pub mod stencil;

use clap::Parser;
use std::process::ExitCode;

/// The `main` of every benchmark binary: parse flags, install the stop handlers, run, print the result line.
pub fn main_with<A: Parser>(
    program: &str,
    run: fn(A) -> anyhow::Result<result::ResultLine>,
) -> ExitCode {
    let args = A::parse();
    if let Err(e) = signals::install() {
        eprintln!("{program}: error: {e:#}");
        return ExitCode::from(1);
    }
    match run(args) {
        Ok(line) => {
            println!("{}", line.to_json());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{program}: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
