//! # cosched-lab — an emulated cluster on one Linux machine, running real experiments
//!
//! N nodes, each a network namespace (`cosched-<run id>-n<i>`) joined by veth (point-to-point for 2 nodes, a
//! bridge otherwise), each pinned to its own CPU (node i on CPU i mod CPUs) inside one experiment cgroup (cgroup
//! v1: high `cpu.shares` against foreign load, `cpu.rt_runtime_us` so the agent's SCHED_FIFO boosts work).
//! K CPU-bound competitors per node share the node's CPU with the job, as in the seed's experiments
//! (`000_e8004e1596fde6a5.txt` §4.1: 0–N spin-loop competitors per node; metrics §4.1.1: response time, CPU
//! time, fairness `F = N × Tc / Te`). Results are `cosched_report::RunRecord`s with source `Real`, so a lab
//! run and a simulated run compare field by field.
//!
//! | module | what |
//! |---|---|
//! | [`experiment`] | experiment files (`experiments/lab/*.toml`), validated |
//! | [`binaries`] | where the bench programs, `cosched` and the MPI ping-pong are |
//! | [`preflight`] | root, `ip`, cgroup v1, binaries, agent: checked before anything is created |
//! | [`netns`] | namespaces, veth, bridge, addresses (guard) |
//! | [`cgroup`] | experiment cgroups: cpu, cpuacct, per-node cpusets (guard) |
//! | [`cluster`] | both under one run id; removal of leftovers of killed labs |
//! | [`cleanup`] | everything a killed lab leaves: `cosched lab --cleanup`, the reaper that runs it when the lab dies |
//! | [`process`] | processes placed in a node before `exec`, reaped with their CPU time, killed on drop |
//! | [`mpi`] | Open MPI across the node namespaces (hostfile + `plm_rsh_agent` script) |
//! | [`programs`] | each benchmark's per-node command lines and result line |
//! | [`agent`] | `cosched agent` / `cosched run` in a run, its statistics and CPU use |
//! | [`cpustat`] | foreign CPU load from `/proc/stat` |
//! | [`kernlog`] | the kernel's starvation warnings (`/dev/kmsg`) during each run |
//! | [`runner`] | one run: spawn, sample, measure; a whole experiment ([`run_experiment`]) |
//! | [`measure`] | a run's samples and result line → its `RunRecord` (pure) |
//! | [`output`] | tables, `results/<experiment>/` files and plots |
//! | [`signals`] | SIGINT/SIGTERM → orderly cleanup |
//! | [`stream`] | a stream of jobs on this machine: fifo / SCS (`cosched manager`) / time sharing, with and without the agent (seed 001) |
//!
//! Cleanup: every resource has a guard (processes are killed by process group, then anything left in the
//! experiment cgroups; then the cgroups and the namespaces are removed), SIGINT/SIGTERM make the waiting
//! loops return an error that unwinds through the guards, and a panic unwinds the same way. A lab killed
//! outright: its processes get a signal from the kernel (`PR_SET_PDEATHSIG`), its reaper removes the rest at
//! once, and leftovers of any earlier run are recognised by the dead pid in their run id and removed at every
//! start ([`cleanup`]).

pub mod agent;
pub mod binaries;
pub mod cgroup;
pub mod cleanup;
pub mod cli;
pub mod cluster;
pub mod cpustat;
pub mod experiment;
pub mod kernlog;
pub mod measure;
pub mod mpi;
pub mod netns;
pub mod output;
pub mod preflight;
pub mod process;
pub mod programs;
pub mod runner;
pub mod signals;
pub mod stream;

pub use binaries::Binaries;
pub use experiment::LabExperiment;
pub use runner::run_experiment;
