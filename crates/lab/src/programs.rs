//! How each benchmark program is placed on the emulated nodes: the command line of every node's process, and
//! how its one-line JSON result is read. This is the lab's whole contract with `cosched-bench`.

use crate::experiment::{ProgramKind, ProgramSpec, RunLength};
use crate::mpi::MpiLauncher;
use crate::netns::Network;
use crate::runner::Binaries;
use anyhow::{bail, Context, Result};
use cosched_policy::spin::ReceiveMode;
use serde_json::Value;
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

/// What the job's result line says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProgramResult {
    /// Round trips / barriers / iterations completed.
    pub work_done: u64,
    /// The program's own elapsed time for that work, seconds.
    pub elapsed_s: Option<f64>,
    pub rtt_p50_us: Option<f64>,
    pub rtt_p99_us: Option<f64>,
    pub histogram: Option<cosched_report::Histogram>,
    /// Seconds spent in round trips under 100 µs, and their mean (µs): how long a spinning job was coscheduled.
    pub under_100us_s: Option<f64>,
    pub under_100us_mean_us: Option<f64>,
    /// The whole line, kept for the raw record.
    pub raw: Value,
}

fn number(v: &Value, keys: &[&str]) -> Option<f64> {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_f64))
}

/// Read the last JSON object line of a program's stdout.
pub fn parse_result(stdout: &str) -> Result<ProgramResult> {
    let line = stdout
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'))
        .with_context(|| {
            format!(
                "no JSON result line in the program's output: {:?}",
                stdout.trim()
            )
        })?;
    let raw: Value =
        serde_json::from_str(line).with_context(|| format!("parsing result line {line}"))?;
    let work_done = number(
        &raw,
        &[
            "work_done",
            "round_trips",
            "iterations",
            "barriers",
            "messages",
        ],
    )
    .with_context(|| {
        format!("result line has no work count (work_done / round_trips / iterations): {line}")
    })?;
    if work_done < 0.0 {
        bail!("negative work count in {line}");
    }
    let histogram = raw
        .get("rtt_histogram")
        .and_then(|h| serde_json::from_value(h.clone()).ok());
    Ok(ProgramResult {
        work_done: work_done as u64,
        elapsed_s: number(&raw, &["elapsed_s", "wall_s", "duration_s"]),
        rtt_p50_us: number(&raw, &["rtt_p50_us", "p50_us"]),
        rtt_p99_us: number(&raw, &["rtt_p99_us", "p99_us"]),
        histogram,
        under_100us_s: number(&raw, &["rtt_under_100us_s"]),
        under_100us_mean_us: number(&raw, &["rtt_under_100us_mean_us"]),
        raw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_last_json_line_and_its_fields() {
        let out = "starting\n{\"old\":1}\n{\"round_trips\": 1000, \"elapsed_s\": 0.5, \"rtt_p50_us\": 40.0}\n";
        let r = parse_result(out).unwrap();
        assert_eq!(r.work_done, 1000);
        assert_eq!(r.elapsed_s, Some(0.5));
        assert_eq!(r.rtt_p50_us, Some(40.0));
        assert_eq!(r.rtt_p99_us, None);
        assert_eq!(r.under_100us_s, None);
        let out =
            "{\"round_trips\": 10, \"rtt_under_100us_s\": 1.5, \"rtt_under_100us_mean_us\": 12.5}";
        let r = parse_result(out).unwrap();
        assert_eq!(r.under_100us_s, Some(1.5));
        assert_eq!(r.under_100us_mean_us, Some(12.5));
    }

    #[test]
    fn missing_result_is_a_clear_error() {
        let err = parse_result("panic: oops\n").unwrap_err().to_string();
        assert!(err.contains("no JSON result line"), "{err}");
        let err = parse_result("{\"x\": 1}").unwrap_err().to_string();
        assert!(err.contains("no work count"), "{err}");
    }
}
