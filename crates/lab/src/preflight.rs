//! Checks made before anything is created: every missing capability is named with what to do about it, all at
//! once.

use crate::binaries::Binaries;
use crate::cgroup::CGROUP_ROOT;
use crate::experiment::{LabExperiment, ProgramKind};
use crate::programs::{self, COMPETITOR_BINARY};
use std::path::Path;
use std::process::Command;
use thiserror::Error;

/// Something the machine lacks for this experiment.
#[derive(Debug, Error)]
#[error("the lab cannot run here:\n  - {}", problems.join("\n  - "))]
pub struct PreflightError {
    pub problems: Vec<String>,
}

/// Whether we run as root.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn has_command(name: &str, arg: &str) -> bool {
    Command::new(name)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The machine-level checks every lab run needs: root, iproute2, cgroup v1 cpu/cpuacct/cpuset with RT group
/// scheduling.
pub fn machine_problems() -> Vec<String> {
    let mut problems = Vec::new();
    if !is_root() {
        problems.push("not running as root: network namespaces, cgroups and CPU pinning need root (run with sudo)".into());
    }
    if !has_command("ip", "-V") {
        problems.push(
            "`ip` (iproute2) is not installed or not on PATH: apt-get install iproute2".into(),
        );
    }
    for (controller, file) in [
        ("cpu", "cpu.shares"),
        ("cpuacct", "cpuacct.usage"),
        ("cpuset", "cpuset.cpus"),
    ] {
        let path = Path::new(CGROUP_ROOT).join(controller).join(file);
        if !path.exists() {
            problems.push(format!(
                "cgroup v1 controller `{controller}` is not mounted at {}/{controller} ({} missing); the lab needs cgroup v1",
                CGROUP_ROOT,
                path.display()
            ));
        }
    }
    let rt = Path::new(CGROUP_ROOT).join("cpu/cpu.rt_runtime_us");
    if Path::new(CGROUP_ROOT).join("cpu").exists() && !rt.exists() {
        problems.push(format!("{} is missing: the kernel has no RT group scheduling, so the lab's cgroup layout does not apply", rt.display()));
    }
    problems
}

/// What running program `kind` needs: its benchmark binary (ours) with how to build it, `mpirun` for MPI
/// programs, the system's LAMMPS and its example input for `lammps`.
pub fn program_problems(kind: ProgramKind, binaries: &Binaries) -> Vec<String> {
    let mut problems = Vec::new();
    // LAMMPS is the system's, not a benchmark of ours (checked below).
    if kind != ProgramKind::Lammps {
        let (path, _) = binaries.bench_invocation(programs::program_binary(kind));
        if !path.is_file() {
            let hint = if kind == ProgramKind::MpiPingpong {
                "build it with `mpicc -O2 -o <dir>/mpi_pingpong crates/bench/mpi/mpi_pingpong.c` and pass --mpi-dir <dir>"
            } else {
                BUILD_BENCHMARKS
            };
            problems.push(format!(
                "benchmark program {} not found: {hint}",
                path.display()
            ));
        }
    }
    if kind.is_mpi() && !has_command("mpirun", "--version") {
        problems.push("`mpirun` not found: apt-get install openmpi-bin".into());
    }
    if kind == ProgramKind::Lammps {
        if !has_command(programs::LAMMPS_BINARY, "-h") {
            problems.push(format!(
                "`{}` (LAMMPS) not found: apt-get install lammps",
                programs::LAMMPS_BINARY
            ));
        }
        if !std::path::Path::new(programs::LAMMPS_EXAMPLE).is_file() {
            problems.push(format!(
                "LAMMPS's example input {} not found: apt-get install lammps",
                programs::LAMMPS_EXAMPLE
            ));
        }
    }
    problems
}

const BUILD_BENCHMARKS: &str =
    "build the benchmarks with `cargo build --release -p cosched-bench` (or pass --bench-dir)";

/// Every check for `experiment`, given where the binaries are.
pub fn check(experiment: &LabExperiment, binaries: &Binaries) -> Result<(), PreflightError> {
    let mut problems = machine_problems();
    let mut needed: Vec<&str> = Vec::new();
    if experiment.competitors.iter().any(|&k| k > 0) {
        needed.push(COMPETITOR_BINARY);
    }
    if experiment.lab.local_probe {
        needed.push(crate::experiment::LOCAL_PROBE_BINARY);
    }
    for name in needed {
        let (path, _) = binaries.bench_invocation(name);
        if !path.is_file() {
            problems.push(format!(
                "benchmark program {} not found: {BUILD_BENCHMARKS}",
                path.display()
            ));
        }
    }
    problems.extend(program_problems(experiment.program.kind, binaries));
    if experiment.configurations.iter().any(|c| c.agent.is_some()) {
        let help = Command::new(&binaries.cosched)
            .args(["agent", "--help"])
            .output();
        match help {
            Err(e) => problems.push(format!(
                "cannot run {} for the agent: {e}",
                binaries.cosched.display()
            )),
            Ok(o) if !o.status.success() => problems.push(format!(
                "`{} agent --help` fails, so the agent configurations cannot run: {}",
                binaries.cosched.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Ok(_) => {}
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(PreflightError { problems })
    }
}
