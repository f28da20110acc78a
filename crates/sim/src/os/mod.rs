//! The per-node OS scheduler seam.
//!
//! Every CPU of every node is run by a timesharing scheduler that the simulator does not own: it only tells the
//! scheduler what happened (a process was admitted, woke up, blocked, was preempted, used up its quantum, a
//! second passed) and asks it who runs next. Coscheduling policies act through the same interface
//! ([`OsScheduler::boost_to_max`]), exactly as the seed's DCS driver acted through Solaris kernel interfaces
//! (`000_e8004e1596fde6a5.txt` §3.3.2).
//!
//! Models: [`solaris_ts`] (Solaris 2.4 TS, seed `000` Table 1). Linux 2.2 goodness/epochs (seed `003`) and an
//! NT fixed quantum (seed `002`) plug in behind the same trait.
//!
//! ## Terminology
//! - `pid` — index of a simulated process (0..processes), `cpu` — global CPU index (node × cpus_per_node + k).
//!   A process is bound to one CPU for its whole life (no migration).
//! - run queue — the processes of a CPU that are runnable but not running (the running one is not in it).
//! - quantum — the CPU time a process may use before the scheduler demotes it.

use cosched_policy::Nanos;

pub mod solaris_ts;

/// A node OS scheduler model. The world calls these in a strict life cycle:
/// `admit` → (`pick_next` → running → one of `on_preempt` / `on_quantum_expiry` / `on_block` / `on_exit`)*,
/// with `on_wakeup` taking a blocked process back to its run queue.
pub trait OsScheduler {
    /// The model's short name, for logs.
    fn name(&self) -> &'static str;
    /// `Tq`: the shortest quantum any process can get (DCS fairness uses it).
    fn min_quantum(&self) -> Nanos;
    /// How often [`OsScheduler::periodic_update`] must run on each node, if at all.
    fn update_period(&self) -> Option<Nanos>;
    /// A new runnable process bound to `cpu`, put at the end of its run queue.
    fn admit(&mut self, pid: u32, cpu: u32);
    /// Removes the next process to run from `cpu`'s run queue and marks it running; `None` if the queue is empty.
    fn pick_next(&mut self, cpu: u32) -> Option<u32>;
    /// CPU time the running process `pid` may still use before its quantum expires.
    fn time_left(&self, pid: u32) -> Nanos;
    /// `pid` was taken off its CPU after running `ran` without using up its quantum; it stays runnable.
    fn on_preempt(&mut self, pid: u32, ran: Nanos);
    /// The running `pid` used up its quantum; it stays runnable (usually demoted).
    fn on_quantum_expiry(&mut self, pid: u32);
    /// The running `pid` blocked (sleeps) after running `ran`.
    fn on_block(&mut self, pid: u32, ran: Nanos);
    /// The running `pid` finished after running `ran`; it never runs again.
    fn on_exit(&mut self, pid: u32, ran: Nanos);
    /// The blocked `pid` becomes runnable again (message arrival, I/O completion).
    fn on_wakeup(&mut self, pid: u32);
    /// Raises the runnable, not running `pid` to the maximum user priority, first in its queue (seed `000`
    /// §3.3.2). The caller then preempts the running process if [`OsScheduler::should_preempt`] says so.
    fn boost_to_max(&mut self, pid: u32);
    /// The periodic housekeeping (Solaris `ts_update`) for the processes bound to `cpus`.
    fn periodic_update(&mut self, cpus: std::ops::Range<u32>);
    /// Whether the best process waiting on `cpu`'s run queue should preempt the running `running`.
    fn should_preempt(&self, cpu: u32, running: u32) -> bool;
    /// `R`: processes on `cpu`'s run queue (runnable, not running).
    fn run_queue_len(&self, cpu: u32) -> u32;
    /// The scheduling priority of `pid` (higher runs first), for logs and tests.
    fn priority(&self, pid: u32) -> u32;
    /// Counters worth reporting (name, value), e.g. wake-up boosts granted.
    fn counters(&self) -> Vec<(&'static str, u64)>;
}
