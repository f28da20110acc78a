//! How each benchmark program is placed on the emulated nodes: the command line of every node's process, and
//! how its one-line JSON result is read (`cosched_bench::result::ResultLine`, the struct the programs write).
//! This is the lab's whole contract with `cosched-bench`.

use crate::binaries::Binaries;
use crate::experiment::{ProgramKind, ProgramSpec, RunLength};
use crate::mpi::MpiLauncher;
use crate::netns::Network;
use anyhow::{Context, Result};
use cosched_bench::result::{last_json_line, ResultLine};
use cosched_policy::spin::ReceiveMode;
use std::path::PathBuf;

/// TCP port the programs' root / server listens on inside its namespace.
pub const PORT: u16 = 7100;

/// The CPU-bound competitor (`cosched-calcula`), run for as long as the lab keeps it.
pub const COMPETITOR_BINARY: &str = "cosched-calcula";

/// The executable of each program.
pub fn program_binary(kind: ProgramKind) -> &'static str {
    match kind {
        ProgramKind::Pingpong => "cosched-pingpong",
        ProgramKind::Barrier => "cosched-barrier",
        ProgramKind::Stencil => "cosched-stencil",
        ProgramKind::Masterslave => "cosched-masterslave",
        ProgramKind::Alltoall => "cosched-alltoall",
        ProgramKind::Multigrid => "cosched-multigrid",
        ProgramKind::MpiPingpong => "mpi_pingpong",
    }
}

/// One process the lab starts for the parallel job.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeProcess {
    /// The node it starts on.
    pub node: u32,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Whether this process prints the job's result line.
    pub reports: bool,
}

/// Every program places one rank on each node; `N` in `F = N × Tc / Te` counts them with the competitors.
pub const RANKS_PER_NODE: u32 = 1;

/// The arguments every rank of every program gets: receive mode, run length, message size, the file's extras.
fn common_args(spec: &ProgramSpec, mode: &ReceiveMode) -> Vec<String> {
    let mut common = vec!["--recv".to_string(), mode.as_arg()];
    match spec.length {
        RunLength::Duration { seconds } => {
            common.extend(["--duration-s".into(), seconds.to_string()])
        }
        RunLength::Count { units } => common.extend(["--count".into(), units.to_string()]),
    }
    common.extend(["--bytes".into(), spec.message_bytes.to_string()]);
    common.extend(spec.extra_args.iter().cloned());
    common
}

/// The processes of one run of `spec` in receive mode `mode` on `network`, in start order (root first).
/// MPI programs are one `mpirun` on node 0 that starts a rank on every node through `mpi`.
pub fn plan(
    spec: &ProgramSpec,
    mode: &ReceiveMode,
    network: &Network,
    binaries: &Binaries,
    mpi: Option<&MpiLauncher>,
) -> Result<Vec<NodeProcess>> {
    let nodes = network.nodes();
    if spec.kind == ProgramKind::MpiPingpong {
        let program = binaries.bench(program_binary(spec.kind));
        let mpi = mpi.context("an MPI program needs the cluster's MPI launcher")?;
        return Ok(vec![NodeProcess {
            node: 0,
            program: PathBuf::from("mpirun"),
            args: mpi.mpirun_args(nodes, &program, &common_args(spec, mode)),
            reports: true,
        }]);
    }
    let (program, prefix) = binaries.bench_invocation(program_binary(spec.kind));
    let root = format!("{}:{PORT}", network.node_address(0));
    Ok((0..nodes)
        .map(|node| {
            let mut args = prefix.clone();
            args.extend([
                "--rank".to_string(),
                node.to_string(),
                "--ranks".to_string(),
                nodes.to_string(),
            ]);
            if node == 0 {
                args.extend(["--listen".to_string(), root.clone()]);
            } else {
                args.extend(["--connect".to_string(), root.clone()]);
            }
            args.extend(common_args(spec, mode));
            NodeProcess {
                node,
                program: program.clone(),
                args,
                reports: node == 0,
            }
        })
        .collect())
}

/// The job's result line: the last JSON line of the reporting process's stdout.
pub fn read_result(stdout: &str) -> Result<ResultLine> {
    let line = last_json_line(stdout).with_context(|| {
        format!(
            "no JSON result line in the program's output: {:?}",
            stdout.trim()
        )
    })?;
    ResultLine::parse(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_bench::result::Status;
    use cosched_bench::stats::CpuTimes;
    use std::time::Duration;

    /// The line a pingpong root writes after `work_done` round trips in `wall_s`, without its latency.
    fn line(work_done: u64, wall_s: f64) -> ResultLine {
        ResultLine::new(
            "pingpong",
            0,
            2,
            Status::Complete,
            work_done,
            Duration::from_secs_f64(wall_s),
            CpuTimes {
                user_s: 0.25,
                sys_s: 0.0,
            },
        )
    }

    #[test]
    fn reads_the_last_json_line_and_its_fields() {
        let mut last = line(1000, 0.5);
        last.rtt_p50_us = Some(40.0);
        let out = format!("starting\n{}\n{}\n", line(1, 1.0).to_json(), last.to_json());
        let r = read_result(&out).unwrap();
        assert_eq!(r, last);
        assert_eq!(r.work_done, 1000);
        assert_eq!(r.wall_s, 0.5);
        assert_eq!(r.rtt_p50_us, Some(40.0));
        assert_eq!(r.rtt_p99_us, None);
        assert_eq!(r.rtt_under_100us_s, None);
    }

    #[test]
    fn every_program_kind_names_a_binary_cosched_bench_builds() {
        let bins = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/src/bin");
        for kind in ProgramKind::ALL {
            let binary = program_binary(kind);
            if kind == ProgramKind::MpiPingpong {
                continue; // built by crates/bench/mpi/build.sh
            }
            assert!(
                bins.join(format!("{binary}.rs")).is_file(),
                "{} runs {binary}, which crates/bench does not build",
                kind.name()
            );
        }
    }

    #[test]
    fn missing_result_is_a_clear_error() {
        let err = read_result("panic: oops\n").unwrap_err().to_string();
        assert!(err.contains("no JSON result line"), "{err}");
        let err = format!("{:#}", read_result("{\"x\": 1}").unwrap_err());
        assert!(err.contains("missing field"), "{err}");
        // A negative count is not a count.
        let negative = line(1, 0.5)
            .to_json()
            .replace("\"work_done\":1,", "\"work_done\":-1,");
        let err = format!("{:#}", read_result(&negative).unwrap_err());
        assert!(err.contains("reading result line"), "{err}");
    }
}
