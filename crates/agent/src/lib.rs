//! # cosched-agent — the Linux coscheduling agent
//!
//! Dynamic coscheduling (DCS, seed `000_e8004e1596fde6a5.txt`; on Windows NT, `002_53dfbd94bd660dc4.txt`) on a
//! stock Linux kernel: BPF tracepoints watch message arrivals and context switches of *managed* jobs; when a
//! message arrives for a thread that is waiting for its CPU, the default policy ([`policy::dcs`]) applies the
//! DCS fairness rule `2^E (Tc - Tp) + C >= Tq R` ([`cosched_policy::dcs`]) and the CPU-time boost budget
//! ([`cosched_policy::budget`]), and if both agree boosts the thread to `SCHED_FIFO` for a short window, then
//! restores its original policy and nice. This is the one crate of the workspace with `unsafe` and C.
//!
//! The mechanism (observe, track, act, serve) is kept apart from the policy (decide): a policy is one module
//! behind [`policy::Policy`], sees the tracked tasks read-only and asks for actions through [`ctx::Ctx`], does
//! no I/O, and is unit-tested with made-up tasks and no root. Dependencies point one way (no cycle between
//! files): `daemon` → `engine` → `policy` → `ctx` → `actuator`, `tracker`, `stats`; `cli` → `policy::registry`
//! → each policy.
//!
//! | module | role |
//! |---|---|
//! | `src/bpf/intf.h`, [`intf`] | the one interface shared by C and Rust (constants, layouts, stat indices) |
//! | `src/bpf/cosched.bpf.c`, `bpf` | observation: socket owners, on-CPU state, flagged arrivals, reaction histogram |
//! | `daemon` | the event loop: epoll over the ring buffer, timers, signals, pidfds and the control socket; registration; the watch gate |
//! | [`control`] | the control socket's server side: accept, read request lines without blocking, reply |
//! | [`tracker`] | threads, processes and jobs, with an index from each process to its threads |
//! | [`ctx`] | the seam: [`ctx::Ctx`], a policy's read-only view of the tasks and its actions, carried out at once |
//! | [`engine`] | hands each event to the policy with a `Ctx`; window ends, deadlines, the tick's samples |
//! | [`actuator`] | every attribute change (SCHED_FIFO window, nice, slice, CPU affinity), guarded by the guardian and pidfds |
//! | [`stats`] | the mechanism's counters, the policy's section, per-job CPU share and fairness |
//! | [`policy`] | the `Policy` trait and the registry (`--policy NAME`); [`policy::dcs`]: DCS + budget, the default |
//! | [`config`] | the mechanism's resolved configuration |
//! | [`node`] | what DYNAMICQ reads about the node: the cache miss rate (perf counters, a file) and an interactive user |
//! | [`sched`] | `sched_setattr` / `sched_getattr` / affinity, pidfd-guarded targets (no pid-reuse accidents) |
//! | [`guardian`] | a forked process that restores every changed task if the agent dies in any way |
//! | [`proto`] | the control-socket protocol, [`proto::AgentStats`], and [`proto::Client`] |
//! | [`cli`] | `cosched agent` (the mechanism's flags plus every policy's) and `cosched run` |
//!
//! Adding a policy: a new module under `src/policy/` (its flags struct implementing [`policy::PolicyFlags`],
//! its [`policy::Policy`]), its `mod` line and its row beside it in `policy/mod.rs` (what [`policy::registry()`]
//! lists). A policy-core kind that does nothing needs none of these.
//!
//! ## Using it (lab, scripts)
//! - Start: `cosched agent [--socket PATH] [--policy dcs] [--boost-us 500] ...` as root, in the ROOT cpu cgroup or in a cpu
//!   cgroup with `cpu.rt_runtime_us > 0` for the managed jobs (RT group scheduling is on here). It refuses to
//!   start without root, BTF or a BPF-enabled build, saying what is missing.
//! - Register: `cosched run [--socket PATH] [--name N] -- cmd args...` starts `cmd` held before `exec`,
//!   registers it (it and every descendant are managed), then runs it and exits with its code — as the user
//!   who invoked `sudo` when started through sudo (`SUDO_UID`/`SUDO_GID`; `--as-root` keeps root); or
//!   `cosched run --pid PID` to manage a running process from now on. In Rust: [`proto::Client::connect`],
//!   [`proto::Client::register`], [`cli::run_managed`].
//! - Statistics: `cosched agent --stats` (JSON, [`proto::AgentStats`]), `cosched agent --monitor`, or
//!   [`proto::Client::stats`]; [`proto::AgentStats::fill_measurement`] copies them into the shared result
//!   schema. Stop the agent with SIGTERM/SIGINT: it restores every task it changed and removes its socket.
//!
//! ## Measured (2026-11-24, this 2-vCPU VM; the full tables are `docs/lab-dcs.md`)
//! Lab ping-pong, 2 nodes, 128 B over TCP, K CPU-bound competitors per node, 4 s runs, 5 repetitions, one run
//! of 180: with the default flags spin-only reaches 0.91 / 0.86 / 0.98 of the fair-coscheduling bound
//! (K=0 rate / (K+1)) at K = 1, 2, 4 — 1.88× / 3.12× / 4.51× the no-agent rate — with job F 1.04–1.12 and
//! competitor F ≥ 0.94; spin-block and block are 7.24× / 5.42× faster at K = 4 and never slower elsewhere; with
//! nothing to coschedule (K = 0) 1.05–1.15×, since the message hooks are detached while no managed thread shares
//! its CPU (the watch gate). At K = 1 the fair agent is at its ceiling (the ranks together for all of their fair
//! half against a quarter of the time without it, the coscheduled round trip 10 % slower for the attached
//! message hooks): 1.9–2.0× in every run that day; `--slack-ppm 1100000` (10 % over the share, seed 000 §4.2.2)
//! gave 1.97–2.22× at job F ≤ 1.17. Agent CPU 0.4–1.4 % of a core. Boosted reaction (flagged arrival →
//! receiver on its CPU) p50 36–89 µs, p99 99–378 µs over the day's runs: the agent's wake-up across CPUs and its
//! guarded `sched_setattr` on this VM, whose floor for any user-space boost probes put at 35–40 µs; waking the
//! agent straight from the receiver's socket on its own CPU was built and measured no faster (the doc's "The
//! reaction"). An unmodified Open MPI ping-pong under `cosched run`: 1.75× / 1.19× / 3.68× (2026-11-23).
//!
//! ## Safety properties (each has a privileged test in `tests/privileged.rs`)
//! - No managed task stays boosted after the agent ends, however it ends (guardian, real-time above every boost),
//!   nor after agent and guardian are killed together (the next agent sweeps their slot table), nor for more
//!   than the lease while the agent is stopped or wedged (the guardian's watchdog); a thread that exec'd while
//!   boosted is restored; a restore re-reads the task and keeps what others changed since (`docs/safety.md`).
//! - One job holds at most `tracker::MAX_THREADS_PER_JOB` managed threads (a quarter of the guardian's slots),
//!   and at most `tracker::MAX_LIVE_JOBS` jobs are managed at once.
//! - Boosts are not inherited (`SCHED_FLAG_RESET_ON_FORK`).
//! - A reused pid never makes the agent touch a stranger (pidfds, BPF exit tracking).
//! - A flooding process cannot get more than its fair CPU share (budget), and a blocking receiver is charged the
//!   CPU time the kernel booked for it (`se.sum_exec_runtime`), not the time between switch tracepoints.
//! - The agent only ever touches tasks it was asked to manage, and their descendants.

pub mod actuator;
pub mod autogroup;
#[cfg(cosched_bpf)]
mod bpf;
pub mod cli;
pub mod config;
pub mod control;
pub mod cpu_cgroup;
pub mod ctx;
#[cfg(cosched_bpf)]
pub mod daemon;
pub mod engine;
pub mod guardian;
pub mod intf;
pub mod node;
pub mod nudge;
pub mod policy;
pub mod proto;
pub mod sched;
pub mod sockets;
pub mod stats;
pub mod tracker;

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
