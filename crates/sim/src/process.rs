//! Programs and processes: what a simulated process executes, and where it is in it.
//!
//! ## Approach
//! A program is a small instruction list (its *body*) repeated a number of times — no closures, so a process
//! is plain data and a run is reproducible. A process runs its body only while it is on a CPU: `Compute`
//! takes CPU time and survives preemption (the remaining time is kept), `Send` is instantaneous (the network
//! model carries the cost), `Recv` waits for messages on one of the process's ports with the scenario's
//! receive mode (`cosched_policy::spin::ReceiveMode`: spin-only, spin-block, block), `Iteration` counts one
//! unit of the job's work and records its duration.
//!
//! ## Terminology
//! - `pid` — process index; `port` — a per-process mailbox slot (0..[`PORTS`]); a message names its receiver's
//!   port, so a process can tell its two stencil neighbours apart.
//! - `phase` — progress inside the current instruction: not started, computing (`left` ns of CPU still to
//!   use), or spinning on a receive (`left` = ns spun so far in this wait).

use crate::os::CpuSet;
use cosched_policy::Nanos;

/// Mailbox slots per process.
pub const PORTS: usize = 2;

/// One instruction of a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Use `ns` of CPU time.
    Compute(Nanos),
    /// Use an exponentially distributed CPU burst with this mean, cut to what is left of the program's CPU
    /// budget (sequential jobs).
    ComputeExp { mean_ns: Nanos },
    /// Sleep for an exponentially distributed I/O wait with this mean; wakes through the OS model.
    IoWait { mean_ns: Nanos },
    /// Send `bytes` to process `to`, port `port`.
    Send { to: u32, port: u8, bytes: u32 },
    /// Wait until `count` messages are in port `port`, then consume them.
    Recv { port: u8, count: u32 },
    /// One unit of the job's work is done (a round trip, a barrier, an SOR iteration).
    Iteration,
    /// Compute forever (a CPU-bound competitor's spin loop).
    SpinForever,
    /// A system call that moves U[`min_bytes`, `max_bytes`] bytes to memory (seed `004`'s `local`
    /// benchmark): CPU time and cache misses from the cache model ([`crate::cache::Caches::stream`]).
    Syscall { min_bytes: u64, max_bytes: u64 },
    /// Sleep so that the last `ComputeExp` burst was `cpu_permille` ‰ of the cycle: `burst × (1000 − p) / p`
    /// (seed `004`'s `local` benchmark holds its CPU share); wakes through the OS model.
    DutySleep { cpu_permille: u32 },
}

/// A program: a body repeated `repeat` times, optionally stopped once it has computed `cpu_budget_ns`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub body: Vec<Op>,
    pub repeat: u64,
    pub cpu_budget_ns: Option<Nanos>,
}

/// Where a process is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Its job has not started yet (batch mode, or a job that arrives later).
    NotStarted,
    /// Runnable: on a CPU or on its run queue.
    Runnable,
    /// Asleep until a message arrives on `port`.
    BlockedOnReceive,
    /// Asleep until its I/O completes.
    BlockedOnIo,
    /// Finished.
    Done,
}

/// Progress inside the current instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Start,
    Computing,
    Spinning,
}

/// One simulated process.
#[derive(Clone, Debug)]
pub struct Process {
    pub node: u32,
    /// The CPU it runs on, or is queued or asleep for (global index); it changes only when a hook moves it, or,
    /// with a shared run queue, when another CPU of its node picks it (then it is the CPU it last ran on).
    pub cpu: u32,
    /// The CPUs of its node it may run on (at first only its own CPU).
    pub allowed_cpus: CpuSet,
    /// Index of its job (see `world::Job`).
    pub job: u32,
    /// Index of its program.
    pub program: u32,
    pub pc: u32,
    pub rounds_done: u64,
    pub status: Status,
    pub phase: Phase,
    /// Computing: CPU time still to use. Spinning: time spun so far in this wait.
    pub left: Nanos,
    /// Progress in the current phase is accounted up to this time.
    pub progress_from: Nanos,
    pub mailbox: [u32; PORTS],
    /// All CPU time (including context-switch time charged to it).
    pub cpu_ns: Nanos,
    /// CPU time spent computing (the useful part).
    pub compute_ns: Nanos,
    /// CPU time spent spinning on receives.
    pub spin_ns: Nanos,
    /// Earliest message arrival not yet followed by this process getting a CPU (for reaction times).
    pub waiting_since: Option<Nanos>,
    /// Time of the previous `Iteration` (or the job start).
    pub last_iteration: Nanos,
    pub started_at: Nanos,
    pub finished_at: Option<Nanos>,
    /// How many processes share its CPU (the `N` of fairness); with a shared run queue, its node's CPUs.
    pub sharing: u32,
    /// How many CPUs those `sharing` processes share: 1, or with a shared run queue the node's CPUs (at most
    /// one each), so a fair share of a window `Te` is `sharing_cpus × Te / sharing`.
    pub sharing_cpus: u32,
    /// Time spent waiting on communication: from a receive that finds too few messages until it completes
    /// (seed `004`'s MWT).
    pub comm_wait_ns: Nanos,
    /// When the receive it waits in began, while it waits.
    pub recv_since: Option<Nanos>,
    /// The CPU burst its last `ComputeExp` drew.
    pub last_burst_ns: Nanos,
}

impl Process {
    /// A process of `job` on `cpu` of `node` (whose CPUs are `node × cpus_per_node ..`), allowed only there,
    /// running `program`, not yet started.
    pub fn new(node: u32, cpu: u32, cpus_per_node: u32, job: u32, program: u32) -> Self {
        debug_assert!(
            cpu / cpus_per_node == node,
            "CPU {cpu} is not on node {node}"
        );
        Process {
            node,
            cpu,
            allowed_cpus: CpuSet::single(cpu % cpus_per_node),
            job,
            program,
            pc: 0,
            rounds_done: 0,
            status: Status::NotStarted,
            phase: Phase::Start,
            left: 0,
            progress_from: 0,
            mailbox: [0; PORTS],
            cpu_ns: 0,
            compute_ns: 0,
            spin_ns: 0,
            waiting_since: None,
            last_iteration: 0,
            started_at: 0,
            finished_at: None,
            sharing: 1,
            sharing_cpus: 1,
            comm_wait_ns: 0,
            recv_since: None,
            last_burst_ns: 0,
        }
    }
}
