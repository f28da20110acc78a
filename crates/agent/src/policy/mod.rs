//! Policies: what the agent decides, apart from how it carries it out.
//!
//! ## Problem
//! The seeds differ in *when* a thread should get its CPU (DCS on message arrivals, periodic boosts, budgets
//! of CPU time, slices per job) but not in *how*: every one of them changes a thread's scheduling attributes
//! for a while and puts them back. The how (BPF, `sched_setattr`, pidfds, the guardian, timers, the control
//! socket) is the mechanism; each when is a policy.
//!
//! ## Approach
//! A policy is one module behind the one trait [`Policy`] (the shape of scx_rustland's core/policy split).
//! Events come in as calls — an arrival flagged by BPF (the receiver's wake-up as BPF reports it), the end of a
//! boost window, a deadline the policy armed, the periodic tick, a process arriving or leaving, a thread
//! leaving — each with a [`Ctx`]: a read-only view of the tracked tasks (per-thread [`Mode`], per-process CPU
//! time and `R`, BPF's per-thread state such as `on_cpu`, `pending`, `r_milli`, the poll times behind
//! [`spin_waiting`]) and the actions (`boost` for a window, `restore`, `nice`, `slice`, `affinity`, `arm` a
//! deadline, `note` a counted decision). Context switches reach a policy as that BPF state, not as calls: BPF sees
//! thousands a second, and none of the seeds decides on one alone. The mechanism carries each action out at
//! once and says whether it happened; a policy does no I/O and reads no clock (`Ctx::now`), so its decisions
//! are unit-tested with made-up tasks and no root ([`crate::engine`]'s test doubles).
//!
//! Adding a policy: write its module (a flags struct deriving `clap::Args` that implements [`PolicyFlags`],
//! the policy implementing [`Policy`]), then its `mod` line and its row in `rows()` here. `cosched agent
//! --policy NAME` picks it; its flags and its counters (the `policy` section of the statistics) come with it.
//! A policy-core kind that does nothing (`cosched_policy::config::PolicyParameters::does_nothing`) needs neither:
//! [`registry()`] adds it under its kind, run as no coscheduling.
//!
//! | policy | module | seed |
//! |---|---|---|
//! | `dcs` | [`dcs`]: DCS fairness rule + CPU-time budget, extend / demote / park / restore | `000_e8004e1596fde6a5.txt`, `002_53dfbd94bd660dc4.txt` |
//! | `pb` | [`pb`]: Periodic Boost, one waiting receiver with an unread message per period, round robin | `001_cc73854eda2a0ea6.txt` |
//! | `pred`, `dyn` | [`pred`]: predictive coscheduling — the waiting threads of processes whose sockets held data lately, under `dcs`'s budget | `003_d5c4b72e5fa91aa6.txt` |
//! | `gang` | [`gang`]: gang scheduling, the reference — every managed thread together for one slot in `R` | `000_e8004e1596fde6a5.txt` §1, §3 |
//! | `dynamicq` | [`dynamicq`]: DYNAMICQ — each thread's slice adapted every epoch from the node's cache miss rate, over `pred` | `004_3903357666129396.txt` |

pub mod dcs;
pub mod dynamicq;
pub mod gang;
#[cfg(test)]
pub mod idle;
pub mod pb;
pub mod pred;
pub mod registry;

pub use registry::{find, registry, Entry, DEFAULT_POLICY};

/// The agent's policies, one row each, in the order `cosched policies` lists them: its name, summary, the policy
/// core's kinds whose parameters are its flags, and its agent-only flags ([`Entry::of`]). [`registry()`] adds the
/// policy core's kinds that do nothing.
fn rows() -> Vec<Entry> {
    vec![
        Entry::of::<dcs::DcsFlags>("dcs", dcs::SUMMARY, &["dcs", "budget"], dcs::AGENT_ONLY),
        Entry::of::<pb::PbFlags>("pb", pb::SUMMARY, &["pb"], pb::AGENT_ONLY),
        Entry::of::<pred::PredFlags>(
            "pred",
            pred::PRED_SUMMARY,
            &["pred", "budget"],
            pred::AGENT_ONLY,
        ),
        Entry::of::<pred::DynFlags>(
            "dyn",
            pred::DYN_SUMMARY,
            &["dyn", "budget"],
            pred::AGENT_ONLY,
        ),
        Entry::of::<dynamicq::DynamicqFlags>(
            "dynamicq",
            dynamicq::SUMMARY,
            &["dcs", "pred", "budget"],
            &dynamicq::AGENT_ONLY,
        ),
        Entry::of::<gang::GangFlags>("gang", gang::SUMMARY, &[], gang::AGENT_ONLY),
        #[cfg(test)]
        Entry::of::<idle::IdleFlags>(
            "idle",
            "does nothing (a test of the seam)",
            &[],
            &[("idle_every_ms", "a test's deadline period")],
        ),
    ]
}

pub use crate::ctx::{Ctx, ProcessView, Sample, ThreadView};
pub use crate::stats::Counter;
pub use crate::tracker::Mode;

use crate::intf;
use cosched_policy::Nanos;

/// A message arrival BPF flagged: the receiver is off its CPU and has not run for the grace time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    pub tid: u32,
    pub tgid: u32,
    /// `R` of the receiver's CPU at the arrival, in thousandths (weighted across groups, read in BPF:
    /// [`intf::Task::r_milli`]).
    pub r_milli: u32,
    /// When BPF saw it (CLOCK_MONOTONIC ns).
    pub time_ns: Nanos,
}

/// A scheduling policy. Every method gets the [`Ctx`] of the moment: the view and the actions.
pub trait Policy {
    /// Its resolved parameters, as `key=value` strings (the statistics' `config`, the start-up line).
    fn describe(&self) -> Vec<String>;
    /// The counters it notes with [`Ctx::note`] (shown with zeros before the first).
    fn counters(&self) -> &'static [Counter];
    /// A process became managed (registered, or forked by a managed one).
    fn on_process_arrival(&mut self, _ctx: &mut Ctx, _tgid: u32) {}
    /// A process is gone (its threads went first, through [`on_thread_exit`](Self::on_thread_exit)).
    fn on_process_exit(&mut self, _tgid: u32) {}
    /// A managed thread created thread `tid` (of its own process or a new one), adopted with its creator's
    /// own attributes; `creator_mode`: what the agent had made of the creator then.
    fn on_thread_start(&mut self, _ctx: &mut Ctx, _tid: u32, _creator_mode: Mode) {}
    /// A managed thread exited.
    fn on_thread_exit(&mut self, _tid: u32) {}
    /// The last process of a job is gone.
    fn on_job_end(&mut self, _job: u64) {}
    /// BPF flagged a message arrival for a thread that waits for its CPU.
    fn on_arrival(&mut self, ctx: &mut Ctx, arrival: &Arrival);
    /// The boost window of `tid` ended (windows ending within a millisecond of each other are handed over at
    /// one timer wake-up). Extend it (`boost` again), or say what comes next; a thread still boosted with its
    /// window over after this call is restored by the mechanism.
    fn on_window_end(&mut self, ctx: &mut Ctx, tid: u32);
    /// The deadline armed with [`Ctx::arm`] came.
    fn on_deadline(&mut self, _ctx: &mut Ctx) {}
    /// The periodic tick (`--tick-ms`), while any process is managed; the processes' CPU time and `R` were
    /// sampled just before ([`Ctx::process`]).
    fn on_tick(&mut self, _ctx: &mut Ctx) {}
    /// Whether the tick has something to decide even with no managed thread lowered and no boost paused (the
    /// mechanism knows those; a live boost's window end wakes the agent by itself): while not, it runs at
    /// `--idle-tick-ms` instead of `--tick-ms`.
    fn tick_needed(&self) -> bool {
        true
    }
    /// The longest the idle tick may be for this policy's own periodic work (an epoch it takes at a tick):
    /// `None` when the tick may idle at `--idle-tick-ms`.
    fn idle_tick_at_most(&self) -> Option<Nanos> {
        None
    }
}

/// What a policy may read about the machine when it is built.
#[derive(Clone, Copy, Debug)]
pub struct Host {
    /// The kernel tick, ns (`CONFIG_HZ`).
    pub kernel_tick_ns: Nanos,
}

/// A policy's own flags (a struct deriving `clap::Args`), and how they become the policy.
pub trait PolicyFlags: clap::Args + clap::FromArgMatches + 'static {
    /// Validates the flags into the policy; a bad value is an error that names the flag.
    fn build(self, host: &Host) -> anyhow::Result<Box<dyn Policy>>;

    /// Checks which flags were given on the command line (`matches`), for what the parsed values alone cannot
    /// tell: a flag that does not apply with the other flags given is an error, not ignored.
    fn check_given(_matches: &clap::ArgMatches) -> anyhow::Result<()> {
        Ok(())
    }
}

/// How recently a thread must have polled an empty socket to count as spin-waiting for a message.
pub const POLL_RECENT_NS: Nanos = 2_000_000;

/// Whether a thread is spin-waiting for a message: it is runnable (on its CPU, or preempted while runnable),
/// its last receive found nothing, it polled within [`POLL_RECENT_NS`] of its last moment on a CPU, and nothing
/// has arrived since its last successful receive. Such a thread's CPU time is wasted while its peer is off its
/// CPU. One that blocked (a spin-block receiver past its spin time, a blocking one) spends nothing while it
/// waits, and its wake-up at the next arrival preempts by the kernel's own rule unless it is lowered.
pub fn spin_waiting(task: &intf::Task, now: Nanos) -> bool {
    let runnable = task.on_cpu != 0 || task.preempted != 0;
    let last_on_cpu = if task.on_cpu != 0 {
        now
    } else {
        task.last_ran_ns
    };
    runnable
        && task.last_poll_ns > task.last_got_ns
        && task.last_poll_ns + POLL_RECENT_NS >= last_on_cpu
        && !has_unread(task)
}

/// How long a thread that blocked counts as one that gives its CPU back by itself: longer than a coscheduled
/// burst, in which a spin-block receiver answered within its spin time does not block at all (a 160 ms burst
/// spent at half a CPU's share lasts about 320 ms).
pub const GIVES_BACK_MEMORY_NS: Nanos = 1_000_000_000;

/// Whether a thread gives its CPU back by itself when it waits: it gave up spinning for a message (fell asleep
/// after an empty poll) twice within [`GIVES_BACK_MEMORY_NS`]. A spin-block receiver does, every time its peer
/// takes longer than its spin time. A spin-only one blocks in its start-up's blocking reads (not counted: no
/// empty poll before them) and, under the agent, now and then mid-run (the kernel counted 3–5 voluntary
/// switches in a 2 s run, start-up included): counting a single sleep spared its demotions 8–45 times a run.
/// Lowering a thread that gives its CPU back to nice 19 to make its job repay a boost only starves its spin
/// phase: it cannot reach the point where it would block (at about 1.5 % of a CPU beside one nice-0 task, a
/// 1.6 ms spin takes 100 ms), and its job makes no progress meanwhile.
pub fn gives_cpu_back(task: &intf::Task, now: Nanos) -> bool {
    task.prev_block_ns != 0 && task.prev_block_ns + GIVES_BACK_MEMORY_NS >= now
}

/// Whether a message arrived for a thread after its last successful receive (it has something to read).
pub fn has_unread(task: &intf::Task) -> bool {
    task.last_arrival_ns > task.last_got_ns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_gives_its_cpu_back_for_a_second_after_it_gave_up_spinning_twice() {
        let blocked_at = |prev, last| intf::Task {
            prev_block_ns: prev,
            last_block_ns: last,
            ..Default::default()
        };
        let second = GIVES_BACK_MEMORY_NS;
        assert!(!gives_cpu_back(&blocked_at(0, 0), 5_000_000)); // never gave up spinning
        assert!(!gives_cpu_back(&blocked_at(0, 5_000_000), 5_000_000)); // once is not a habit
        assert!(gives_cpu_back(&blocked_at(4_000_000, 5_000_000), 5_000_000));
        assert!(gives_cpu_back(
            &blocked_at(4_000_000, 5_000_000),
            4_000_000 + second
        ));
        assert!(!gives_cpu_back(
            &blocked_at(4_000_000, 5_000_000),
            4_000_001 + second
        ));
    }

    #[test]
    fn spin_waiting_needs_an_empty_poll_near_its_last_run_and_nothing_unread() {
        // Polled at 10 ms (found nothing), last got a message at 5 ms, ran until 11 ms and was preempted:
        // 10 + 2 >= 11.
        let task = intf::Task {
            last_poll_ns: 10_000_000,
            last_got_ns: 5_000_000,
            last_ran_ns: 11_000_000,
            preempted: 1,
            ..Default::default()
        };
        assert!(spin_waiting(&task, 50_000_000));
        // It ran on until 13 ms after that poll: 10 + 2 < 13, it was computing.
        let computing = intf::Task {
            last_ran_ns: 13_000_000,
            ..task
        };
        assert!(!spin_waiting(&computing, 50_000_000));
        // A message came at 12 ms and is unread: it has work.
        let unread = intf::Task {
            last_arrival_ns: 12_000_000,
            ..task
        };
        assert!(has_unread(&unread) && !spin_waiting(&unread, 50_000_000));
        // On its CPU now (50 ms): 10 + 2 < 50.
        let running = intf::Task { on_cpu: 1, ..task };
        assert!(!spin_waiting(&running, 50_000_000));
        // The same thread blocked at 11 ms instead of being preempted: it waits without spending CPU.
        let blocked = intf::Task {
            preempted: 0,
            ..task
        };
        assert!(!spin_waiting(&blocked, 50_000_000));
    }
}
