//! Open MPI across the node namespaces: `mpirun` in node 0, `orted` started in node 1 through the lab's
//! `plm_rsh_agent` script, ranks talking TCP over the veth. Needs root and Open MPI (`mpicc`, `mpirun`);
//! skips with a message otherwise.

mod common;

use common::{fake_bench, leftovers, root_or_skip};
use cosched_lab::{run_experiment, LabExperiment};
use std::path::Path;
use std::process::Command;

/// A stand-in MPI ping-pong: 2000 round trips of 128 B between ranks 0 and 1, each rank reporting the
/// namespace-visible address it runs on; rank 0 prints the result line (`ResultLine`'s required fields; it does
/// not measure its CPU time).
const PROGRAM: &str = r#"
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char buf[128] = {0};
  int n = 2000;
  double t0 = MPI_Wtime();
  for (int i = 0; i < n; i++) {
    if (rank == 0) { MPI_Send(buf, 128, MPI_CHAR, 1, 0, MPI_COMM_WORLD); MPI_Recv(buf, 128, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
    else { MPI_Recv(buf, 128, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(buf, 128, MPI_CHAR, 0, 0, MPI_COMM_WORLD); }
  }
  double t = MPI_Wtime() - t0;
  if (rank == 0)
    printf("{\"program\":\"mpi_pingpong\",\"rank\":0,\"ranks\":2,\"status\":\"complete\",\"work_done\":%d,"
           "\"wall_s\":%f,\"cpu_s\":0.0,\"cpu_user_s\":0.0,\"cpu_sys_s\":0.0,\"cpu_share\":0.0,\"rate_per_s\":%f}\n",
           n, t, n / t);
  MPI_Finalize();
  return 0;
}
"#;

#[test]
#[cfg_attr(
    not(cosched_root),
    ignore = "privileged: needs root (BPF, cgroups, namespaces); run the tests as root, as CI does"
)]
fn mpi_ranks_run_in_different_namespaces() {
    if !root_or_skip("mpi_ranks_run_in_different_namespaces") {
        return;
    }
    let has = |c: &str| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("mpicc") || !has("mpirun") {
        cosched_testkit::cannot_run(
            "mpi_ranks_run_in_different_namespaces",
            "Open MPI not installed (apt-get install openmpi-bin libopenmpi-dev)",
        );
        return;
    }
    let binaries = fake_bench("mpi", 0.1, 0);
    let source = binaries.bench_dir.join("mpi_pingpong.c");
    std::fs::write(&source, PROGRAM).unwrap();
    let built = Command::new("mpicc")
        .args(["-O2", "-o"])
        .arg(binaries.bench_dir.join("mpi_pingpong"))
        .arg(&source)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let e = LabExperiment::parse(
        r#"
name = "mpi"
nodes = 2
competitors = [0]
receive_modes = ["block"]
[program]
kind = "mpi-pingpong"
count = 2000
timeout_s = 60.0
[[configurations]]
name = "no-agent"
[lab]
settle_ms = 0
rt_runtime_us = 10000
"#,
        Path::new("mpi.toml"),
    )
    .unwrap();
    let runs = run_experiment(&e, &binaries, &mut cosched_lab::runner::Quiet).unwrap();
    let records = cosched_lab::runner::records(&runs);
    let m = &records[0].measurement;
    assert_eq!(m.work_done, 2000);
    let job = m.parallel_job().unwrap();
    // Both nodes' cpuacct groups saw CPU: rank 1 really ran in node 1's cgroups (moved there by the launcher).
    assert!(job.fairness_min > 0.0, "{job:?}");
    assert!(leftovers().is_empty(), "left behind: {:?}", leftovers());
}
