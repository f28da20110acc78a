//! `cosched bench <program> ...`: the same programs as the `cosched-*` binaries, reachable from the one
//! `cosched` binary (the CLI crate dispatches here). The flags, result line and exit codes are identical.

use crate::programs::{
    alltoall, barrier, calcula, local, masterslave, multigrid, pingpong, stencil,
};
use crate::result::ResultLine;
use anyhow::Result;
use clap::{Args, Subcommand};

/// Run one benchmark program in this process.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub program: Program,
}

/// The programs.
#[derive(Subcommand, Debug)]
pub enum Program {
    /// Two ranks exchange a token (seed 000 Latency).
    Pingpong(pingpong::PingpongArgs),
    /// Root broadcasts, all compute, all report back (seed 000 Barrier).
    Barrier(barrier::BarrierArgs),
    /// Red-black SOR with halo exchange (seed 000 Mixed's SOR).
    Stencil(stencil::StencilArgs),
    /// Master with r / rs slaves (seed 003).
    Masterslave(masterslave::MasterSlaveArgs),
    /// All-to-all exchange of key blocks, then a reduction (seed 003 NAS IS).
    Alltoall(alltoall::AlltoallArgs),
    /// V-cycles with halo exchanges around a ring (seed 003 NAS MG).
    Multigrid(multigrid::MultigridArgs),
    /// Floating-point loop; prints its CPU share (seed 003 calcula).
    Calcula(calcula::CalculaArgs),
    /// Interactive stand-in with exponential bursts (seed 004 local).
    Local(local::LocalArgs),
}

impl Program {
    fn name(&self) -> &'static str {
        match self {
            Program::Pingpong(_) => pingpong::PROGRAM,
            Program::Barrier(_) => barrier::PROGRAM,
            Program::Stencil(_) => stencil::PROGRAM,
            Program::Masterslave(_) => masterslave::PROGRAM,
            Program::Alltoall(_) => alltoall::PROGRAM,
            Program::Multigrid(_) => multigrid::PROGRAM,
            Program::Calcula(_) => calcula::PROGRAM,
            Program::Local(_) => local::PROGRAM,
        }
    }

    fn run(self) -> Result<ResultLine> {
        match self {
            Program::Pingpong(a) => pingpong::run(a),
            Program::Barrier(a) => barrier::run(a),
            Program::Stencil(a) => stencil::run(a),
            Program::Masterslave(a) => masterslave::run(a),
            Program::Alltoall(a) => alltoall::run(a),
            Program::Multigrid(a) => multigrid::run(a),
            Program::Calcula(a) => calcula::run(a),
            Program::Local(a) => local::run(a),
        }
    }
}

/// Install the stop handlers, run the program, print its result line. An error is returned (the caller exits
/// non-zero), and no result line is printed.
pub fn run(args: BenchArgs) -> Result<()> {
    crate::signals::install()?;
    let name = args.program.name();
    let line = args
        .program
        .run()
        .map_err(|e| e.context(format!("{name} failed")))?;
    println!("{}", line.to_json());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};
    use cosched_policy::spin::ReceiveMode;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        bench: BenchArgs,
    }

    #[test]
    fn every_program_parses_under_cosched_bench() {
        // clap's own consistency checks over every flattened flag group.
        Wrapper::command().debug_assert();
        let w = Wrapper::try_parse_from([
            "cosched",
            "pingpong",
            "--listen",
            "127.0.0.1:0",
            "--recv",
            "block",
        ])
        .unwrap();
        match w.bench.program {
            Program::Pingpong(a) => assert_eq!(a.rank.recv.mode, ReceiveMode::Block),
            other => panic!("parsed as {other:?}"),
        }
        for program in [
            "barrier",
            "stencil",
            "masterslave",
            "alltoall",
            "multigrid",
            "calcula",
            "local",
        ] {
            let w = Wrapper::try_parse_from(["cosched", program, "--count", "3"]).unwrap();
            assert_eq!(w.bench.program.name(), program);
        }
    }
}
