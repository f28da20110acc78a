//! # cosched-agent — the Linux coscheduling agent
//!
//! Dynamic coscheduling (DCS, seed `000_e8004e1596fde6a5.txt`; on Windows NT, `002_53dfbd94bd660dc4.txt`) on a
//! stock Linux kernel: BPF tracepoints watch message arrivals and context switches of *managed* jobs; when a
//! message arrives for a thread that is waiting for its CPU, the agent applies the DCS fairness rule
//! `2^E (Tc - Tp) + C >= Tq R` ([`cosched_policy::dcs`]) and the CPU-time boost budget
//! ([`cosched_policy::budget`]), and if both agree boosts the thread to `SCHED_FIFO` for a short window, then
//! restores its original policy and nice. This is the one crate of the workspace with `unsafe` and C.
//!
//! | module | role |
//! |---|---|
//! | `src/bpf/intf.h`, [`intf`] | the one interface shared by C and Rust (constants, layouts, stat indices) |
//! | `src/bpf/cosched.bpf.c`, `bpf` | observation: socket owners, on-CPU state, flagged arrivals, reaction histogram |
//! | `daemon` | decide (DCS + budget) and act; the fairness-monitor tick; the control socket |
//! | [`sched`] | `sched_setattr` / `sched_getattr`, pidfd-guarded targets (no pid-reuse accidents) |
//! | [`guardian`] | a forked process that restores every boosted task if the agent dies in any way |
//! | [`proto`] | the control-socket protocol, [`proto::AgentStats`], and [`proto::Client`] |
//! | [`cli`] | `cosched agent` and `cosched run` |
//!
//! ## Using it (lab, scripts)
//! - Start: `cosched agent [--socket PATH] [--boost-us 500] ...` as root, in the ROOT cpu cgroup or in a cpu
//!   cgroup with `cpu.rt_runtime_us > 0` for the managed jobs (RT group scheduling is on here). It refuses to
//!   start without root, BTF or a BPF-enabled build, saying what is missing.
//! - Register: `cosched run [--socket PATH] [--name N] -- cmd args...` starts `cmd` held before `exec`,
//!   registers it (it and every descendant are managed), then runs it and exits with its code; or
//!   `cosched run --pid PID` to manage a running process from now on. In Rust: [`proto::Client::connect`],
//!   [`proto::Client::register`], [`cli::run_managed`].
//! - Statistics: `cosched agent --stats` (JSON, [`proto::AgentStats`]), `cosched agent --monitor`, or
//!   [`proto::Client::stats`]; [`proto::AgentStats::fill_measurement`] copies them into the shared result
//!   schema. Stop the agent with SIGTERM/SIGINT: it restores every task it changed and removes its socket.
//!
//! ## Measured (2026-11-22, this 2-vCPU VM, shared with other builds; medians of 3 interleaved runs)
//! TCP ping-pong over loopback, 128 B, 40,000 round trips, spin-only receive, each rank pinned to its own CPU
//! with K CPU-bound spinners pinned beside it, all in one cpu cgroup (shares 262144, rt_runtime 0.8 s/s);
//! default flags. Rates in round trips/s; "bound" = K=0 rate / (K+1).
//!
//! | K | no agent | agent | agent / none | bound / agent | job F | competitor F (min) |
//! |---|---|---|---|---|---|---|
//! | 0 | 69.6 k | 62.1 k | 0.89 | — | 1.00 | — |
//! | 1 | 17.6 k | 27.3 k | 1.55 | 1.27 | 1.07 | 0.89 |
//! | 2 | 8.1 k | 28.4 k | 3.52 | 0.82 | 1.22 | 0.87 |
//! | 4 | 3.0 k | 9.0 k | 3.03 | 1.55 | 1.06 | 0.96 |
//!
//! Reaction (arrival → boosted receiver on its CPU, BPF): p50 10–26 µs, p99 121–233 µs; flagged arrival →
//! `sched_setattr` done: p50 60–98 µs (agent wake-up p50 22–47 µs). Agent CPU during the runs: 0.9–1.8 % of a
//! core. Job F above 1 in these 1–2 s runs is mostly the budget's starting credit (80 ms burst × (K+1) / run
//! time); at K = 0 the agent costs about 10 % (per-message BPF hooks; it never boosts there, R = 1).
//!
//! ## Safety properties (each has a privileged test in `tests/privileged.rs`)
//! - No managed task stays boosted after the agent ends, however it ends (guardian).
//! - Boosts are not inherited (`SCHED_FLAG_RESET_ON_FORK`).
//! - A reused pid never makes the agent touch a stranger (pidfds, BPF exit tracking).
//! - A flooding process cannot get more than its fair CPU share (budget).
//! - The agent only ever touches tasks it was asked to manage, and their descendants.

#[cfg(cosched_bpf)]
mod bpf;
pub mod cli;
#[cfg(cosched_bpf)]
pub mod daemon;
pub mod guardian;
pub mod intf;
pub mod proto;
pub mod sched;

#[cfg(cosched_bpf)]
#[allow(
    clippy::all,
    unsafe_op_in_unsafe_fn,
    non_camel_case_types,
    dead_code,
    unused_imports
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/cosched.skel.rs"));
}

/// Whether this build contains the BPF program.
pub const HAS_BPF: bool = cfg!(cosched_bpf);

/// Why `cosched agent` cannot start in a build without BPF.
pub const BPF_MISSING_MESSAGE: &str = concat!(
    "this cosched was built without its BPF program (",
    env!("COSCHED_BPF_MISSING"),
    "); install clang, llvm, libbpf-dev, bpftool, libelf-dev, zlib1g-dev and pkg-config (Debian/Ubuntu: \
     apt-get install clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config) on a kernel with BTF, then \
     rebuild"
);
