//! How each benchmark program is placed on the emulated nodes: the command line of every node's process, and
//! how its one-line JSON result is read (`cosched_bench::result::ResultLine`, the struct the programs write).
//! This is the lab's whole contract with `cosched-bench`.
//!
//! One program is not ours: LAMMPS (`kind = "lammps"`), the system's `lmp` on its own `melt` example
//! ([`LAMMPS_EXAMPLE`], 4,000 Lennard-Jones atoms) with `run <count>`, two ranks over Open MPI's TCP transport.
//! Its result line is made from what LAMMPS itself prints at the end of the run — `Loop time of T on P procs for S
//! steps with A atoms` and `C% CPU use` — so the rate is timesteps per second of LAMMPS's own timed loop (MPI
//! start-up and the deck's setup excluded), and `cpu_s` is rank 0's share of that loop.

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
        ProgramKind::Lammps => LAMMPS_BINARY,
    }
}

/// LAMMPS's executable, from the system (Debian `lammps`), found on `PATH`.
pub const LAMMPS_BINARY: &str = "lmp";

/// The LAMMPS input the `lammps` program runs: the package's melt example, its `run` line set to the count.
pub const LAMMPS_EXAMPLE: &str = "/usr/share/lammps/examples/melt/in.melt";

/// `example` (a LAMMPS input) with its `run` command set to `steps` timesteps; an input without exactly one
/// `run` command is an error (the lab would not know what it times).
pub fn lammps_deck(example: &str, steps: u64) -> Result<String> {
    let is_run = |line: &str| line.split_whitespace().next() == Some("run");
    let runs = example.lines().filter(|l| is_run(l)).count();
    if runs != 1 {
        anyhow::bail!(
            "the LAMMPS input has {runs} `run` commands; the lab needs exactly one to set"
        );
    }
    Ok(example
        .lines()
        .map(|l| {
            if is_run(l) {
                format!("run\t\t{steps}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n")
}

/// The job's result line from LAMMPS's own report on stdout: `Loop time of T on P procs for S steps with A
/// atoms` (the last one) and, if printed, `C% CPU use`.
fn lammps_result(stdout: &str) -> Result<ResultLine> {
    let loop_line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("Loop time of "))
        .with_context(|| {
            format!(
                "no `Loop time of ...` line in LAMMPS's output (did the run end?): {:?}",
                stdout.lines().rev().take(5).collect::<Vec<_>>()
            )
        })?;
    // "Loop time of 1.55331 on 2 procs for 2000 steps with 4000 atoms"
    let words: Vec<&str> = loop_line.split_whitespace().collect();
    let field = |i: usize, what: &str| {
        words
            .get(i)
            .with_context(|| format!("LAMMPS's {loop_line:?} has no {what}"))
    };
    let seconds: f64 = field(3, "loop time")?
        .parse()
        .with_context(|| format!("LAMMPS's loop time in {loop_line:?}"))?;
    let procs: usize = field(5, "process count")?
        .parse()
        .with_context(|| format!("LAMMPS's process count in {loop_line:?}"))?;
    let steps: u64 = field(8, "step count")?
        .parse()
        .with_context(|| format!("LAMMPS's step count in {loop_line:?}"))?;
    if !(seconds.is_finite() && seconds > 0.0) {
        anyhow::bail!("LAMMPS's loop time {seconds} in {loop_line:?} is not a positive time");
    }
    // "92.7% CPU use with 2 MPI tasks x 1 OpenMP threads": rank 0's CPU over the loop.
    let cpu_use = stdout
        .lines()
        .rev()
        .find_map(|l| {
            l.split_once("% CPU use")
                .map(|(pct, _)| pct.trim().parse::<f64>())
        })
        .transpose()
        .context("LAMMPS's `% CPU use`")?
        .unwrap_or(0.0);
    let mut line = ResultLine::new(
        "lammps",
        0,
        procs,
        cosched_bench::result::Status::Complete,
        steps,
        std::time::Duration::from_secs_f64(seconds),
        cosched_bench::stats::CpuTimes {
            user_s: seconds * cpu_use / 100.0,
            sys_s: 0.0,
        },
    );
    line.latency_of = Some("timestep".into());
    Ok(line)
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
    if spec.kind.is_mpi() {
        let mpi = mpi.context("an MPI program needs the cluster's MPI launcher")?;
        let (program, args) = match spec.kind {
            ProgramKind::Lammps => {
                let deck = mpi
                    .lammps_deck()
                    .context("the cluster's MPI launcher has no LAMMPS input")?;
                let mut args: Vec<String> = ["-in", &deck.display().to_string(), "-log", "none"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                args.extend(spec.extra_args.iter().cloned());
                (PathBuf::from(LAMMPS_BINARY), args)
            }
            _ => (
                binaries.bench(program_binary(spec.kind)),
                common_args(spec, mode),
            ),
        };
        return Ok(vec![NodeProcess {
            node: 0,
            program: PathBuf::from("mpirun"),
            args: mpi.mpirun_args(nodes, &program, &args),
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

/// The job's result line from its reporting process's stdout: LAMMPS's own report, or our programs' JSON line.
pub fn read_job_result(kind: ProgramKind, stdout: &str) -> Result<ResultLine> {
    match kind {
        ProgramKind::Lammps => lammps_result(stdout),
        _ => read_result(stdout),
    }
}

/// A result line of one of our programs: the last JSON line of its stdout.
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
            if kind.is_mpi() {
                continue; // built by crates/bench/mpi/build.sh, or the system's (LAMMPS)
            }
            assert!(
                bins.join(format!("{binary}.rs")).is_file(),
                "{} runs {binary}, which crates/bench does not build",
                kind.name()
            );
        }
    }

    #[test]
    fn the_lammps_deck_sets_the_one_run_command_and_refuses_an_input_without_one() {
        let example = "units\t\tlj\nthermo\t\t50\nrun\t\t250\n";
        let deck = lammps_deck(example, 2000).unwrap();
        assert_eq!(deck, "units\t\tlj\nthermo\t\t50\nrun\t\t2000\n");
        // `run_style` or a comment is not a run command.
        let err = lammps_deck("run_style verlet\n# run 5\n", 10)
            .unwrap_err()
            .to_string();
        assert!(err.contains("0 `run` commands"), "{err}");
        let err = lammps_deck("run 1\nrun 2\n", 10).unwrap_err().to_string();
        assert!(err.contains("2 `run` commands"), "{err}");
    }

    #[test]
    fn lammps_output_becomes_a_result_line_of_timesteps_per_second() {
        let out = "Step Temp E_pair\n    2000   1.6 -4.7\n\
                   Loop time of 1.6 on 2 procs for 2000 steps with 4000 atoms\n\n\
                   Performance: 540000.000 tau/day, 1250.000 timesteps/s\n\
                   92.5% CPU use with 2 MPI tasks x 1 OpenMP threads\n";
        let r = read_job_result(ProgramKind::Lammps, out).unwrap();
        assert_eq!(
            (r.program.as_str(), r.ranks, r.work_done),
            ("lammps", 2, 2000)
        );
        assert_eq!(r.wall_s, 1.6);
        assert!((r.rate_per_s - 1250.0).abs() < 1e-9);
        assert!((r.cpu_s - 1.48).abs() < 1e-9, "{}", r.cpu_s);
        // A run that never reached its loop's end, or a malformed report, says what is missing.
        let err = format!(
            "{:#}",
            read_job_result(ProgramKind::Lammps, "ERROR: Lost atoms\n").unwrap_err()
        );
        assert!(err.contains("no `Loop time of ...` line"), "{err}");
        let err = format!(
            "{:#}",
            read_job_result(
                ProgramKind::Lammps,
                "Loop time of x on 2 procs for 2000 steps\n"
            )
            .unwrap_err()
        );
        assert!(err.contains("loop time"), "{err}");
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
