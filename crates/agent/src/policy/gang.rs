//! `--policy gang`: gang scheduling, the classic reference — every managed thread runs together for one slot,
//! then steps aside for its CPU's other tasks for `R - 1` slots.
//!
//! ## Problem
//! Seed `000_e8004e1596fde6a5.txt` (§1, §3) sets dynamic coscheduling against gang scheduling: coordinated
//! context switches across processors, which coschedules every communicating process by construction but needs
//! the kernel's help and jobs named in advance. Here it is the yardstick the other policies are measured
//! against: how fast a parallel job runs on *this* machine when all of its running time is coscheduled and it
//! gets exactly its fair share. The computed fair bound, `dedicated rate / (K + 1)`, takes sharing a CPU to cost
//! nothing; a job that shares one finds its caches and branch predictors cold after each competitor's turn, and
//! gang scheduling measures what is left.
//!
//! ## Approach
//! Every managed thread belongs to the one gang: on one machine one agent sees every rank (the lab's nodes, one
//! job each), as a gang scheduler with one global clock would. A cycle is `R` slots of `--slot-ms`: in the first
//! every managed thread is boosted (`SCHED_FIFO`) until the slot ends; in the other `R - 1` every one is parked
//! at nice 19, and the CPUs' other tasks run. `R` is read at the cycle's start: the most tasks that share a
//! managed thread's CPU (each counted by its weight, rounded: [`intf::r_tasks`]). With `R = 1` nothing else wants
//! those CPUs: the threads keep their own attributes for the slot. Arrivals are not acted on. A thread whose
//! boost is held back at the slot's start because a local task is having its turn on its CPU (the mechanism's
//! rule, [`Ctx::boost`]) is tried again every `--yield-us` while the slot lasts: left out, it missed the whole
//! slot while its peers spun for it (a third of the slots in one K = 1 run in this sandbox).
//!
//! ## Bound
//! Each managed thread gets its slot in every `R`: `1 / R` of its CPU, its fair share, plus what the kernel
//! gives a nice-19 task beside nice-0 ones (weight 15 against 1024 each: about 1.5 % at `R = 2`).
//!
//! ## Algorithm
//! ```text
//! cycle start t (a deadline; the first at the first process's arrival):
//!     R = max over managed threads of r_tasks(r_milli of its CPU), at least 1
//!     R == 1: restore every managed thread; next cycle at t + slot
//!     else:   boost every managed thread until t + slot; next cycle at t + R × slot
//!             a thread held back for a local task: try again every --yield-us until t + slot
//! window end (t + slot): park the thread at nice 19 (its gang's slot is over)
//! ```
//!
//! ## Parameters
//! `--slot-ms` 20: a Solaris 2.4 quantum (seed `000`), about five Linux ticks at HZ = 250.

use crate::config::ms;
use crate::intf;
use crate::policy::{Arrival, Counter, Ctx, Host, Mode, Policy, PolicyFlags};
use cosched_policy::Nanos;

/// The registry's one line.
pub const SUMMARY: &str =
    "gang scheduling (the reference): every managed thread together for one slot in R, parked for the rest";

/// Its flags that are the agent's alone, and why.
pub const AGENT_ONLY: &[(&str, &str)] = &[(
    "slot_ms",
    "the gang's time slot; the simulator has no gang scheduler (the reference is measured, not modelled)",
)];

/// `cosched agent --policy gang` flags.
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Policy gang (gang scheduling, the reference)")]
pub struct GangFlags {
    /// Length of the gang's slot: every managed thread runs for one slot in R (R: the most tasks sharing a
    /// managed thread's CPU).
    #[arg(long, default_value_t = 20.0)]
    pub slot_ms: f64,
}

impl PolicyFlags for GangFlags {
    fn build(self, _host: &Host) -> anyhow::Result<Box<dyn Policy>> {
        let slot_ns = ms(self.slot_ms, "slot-ms")?;
        if !(cosched_policy::MILLIS..=10_000 * cosched_policy::MILLIS).contains(&slot_ns) {
            anyhow::bail!("--slot-ms must be in 1..=10000 (ms), got {}", self.slot_ms);
        }
        Ok(Box::new(Gang {
            slot_ns,
            started: false,
            next_cycle: 0,
            slot_end: 0,
            held: Vec::new(),
        }))
    }
}

/// Counter: a cycle whose slot boosted the gang.
pub const GANG_SLOTS: &str = "gang_slots";
/// Counter: a cycle with nobody else on the gang's CPUs (R = 1): no boost.
pub const ALONE_SLOTS: &str = "alone_slots";
/// Counter: an arrival handed over and not acted on.
pub const ARRIVALS_IGNORED: &str = "arrivals_ignored";
/// Counter: a thread boosted late in its slot, once the local task that held its boost back had its turn.
pub const LATE_BOOSTS: &str = "late_boosts";

const COUNTERS: &[Counter] = &[
    Counter {
        name: GANG_SLOTS,
        refusal: false,
        description: "cycles whose slot boosted every managed thread together",
    },
    Counter {
        name: ALONE_SLOTS,
        refusal: false,
        description: "cycles with nobody else on the managed threads' CPUs (R = 1): no boost",
    },
    Counter {
        name: LATE_BOOSTS,
        refusal: false,
        description:
            "threads boosted late in their slot, once a local task on their CPU had had its turn",
    },
    Counter {
        name: ARRIVALS_IGNORED,
        refusal: true,
        description: "arrivals handed over and not acted on (the gang runs by the clock)",
    },
];

/// The policy.
pub struct Gang {
    slot_ns: Nanos,
    /// The cycle deadline is armed.
    started: bool,
    /// When the next cycle starts.
    next_cycle: Nanos,
    /// When the current slot ends.
    slot_end: Nanos,
    /// Threads whose boost a local task held back at the slot's start, tried again until the slot ends.
    held: Vec<u32>,
}

impl Gang {
    /// The threads held back for a local task are boosted for the rest of the slot once it has had its turn.
    fn retry_held(&mut self, ctx: &mut Ctx) {
        let slot_end = self.slot_end;
        let now = ctx.now();
        self.held.retain(|&tid| {
            if now >= slot_end || ctx.thread(tid).is_none() {
                return false;
            }
            if ctx.boost(tid, slot_end) {
                if let Some(t) = ctx.thread(tid) {
                    ctx.note(t.tgid, tid, LATE_BOOSTS, format_args!(""));
                }
                return false;
            }
            ctx.local_task_waits_for(tid)
        });
        ctx.arm(self.next_cycle);
        self.arm_retry(ctx);
    }

    /// The next try for the held threads, a pause from now, while the slot has time left.
    fn arm_retry(&self, ctx: &mut Ctx) {
        let at = ctx.now() + ctx.yield_ns().max(1);
        if !self.held.is_empty() && at < self.slot_end {
            ctx.arm(at);
        }
    }

    /// Every managed thread, as (its process, itself).
    fn gang(ctx: &Ctx) -> Vec<(u32, u32)> {
        ctx.tgids()
            .into_iter()
            .flat_map(|tgid| ctx.tids_of(tgid).into_iter().map(move |tid| (tgid, tid)))
            .collect()
    }
}

impl Policy for Gang {
    fn describe(&self) -> Vec<String> {
        vec![format!("slot_ms={}", self.slot_ns as f64 / 1e6)]
    }

    fn counters(&self) -> &'static [Counter] {
        COUNTERS
    }

    fn on_process_arrival(&mut self, ctx: &mut Ctx, _tgid: u32) {
        if !self.started {
            self.started = true;
            ctx.arm(ctx.now());
        }
    }

    fn on_arrival(&mut self, ctx: &mut Ctx, a: &Arrival) {
        ctx.note(a.tgid, a.tid, ARRIVALS_IGNORED, format_args!(""));
    }

    fn on_window_end(&mut self, ctx: &mut Ctx, tid: u32) {
        // The gang's slot is over: the CPU's other tasks have theirs.
        if matches!(ctx.thread(tid).map(|t| t.mode), Some(Mode::Boosted { .. }))
            && !ctx.nice(tid, 19)
        {
            ctx.restore(tid);
        }
    }

    fn on_deadline(&mut self, ctx: &mut Ctx) {
        let now = ctx.now();
        if now < self.next_cycle {
            self.retry_held(ctx);
            return;
        }
        self.held.clear();
        let gang = Gang::gang(ctx);
        let Some(&(first, _)) = gang.first() else {
            // Nothing managed: the next process's arrival starts the clock again.
            self.started = false;
            return;
        };
        let r = gang
            .iter()
            .filter_map(|&(_, tid)| ctx.task(tid))
            .map(|t| intf::r_tasks(t.r_milli)) // at least 1 each
            .max()
            .unwrap_or(1);
        let slot_end = now + self.slot_ns;
        if r == 1 {
            for &(_, tid) in &gang {
                ctx.restore(tid);
            }
            ctx.note(first, first, ALONE_SLOTS, format_args!(""));
            self.next_cycle = slot_end;
            ctx.arm(slot_end);
            return;
        }
        for &(_, tid) in &gang {
            if !ctx.boost(tid, slot_end) && ctx.local_task_waits_for(tid) {
                self.held.push(tid);
            }
        }
        ctx.note(first, first, GANG_SLOTS, format_args!("R={r}"));
        self.slot_end = slot_end;
        self.next_cycle = now + u64::from(r) * self.slot_ns;
        ctx.arm(self.next_cycle);
        self.arm_retry(ctx);
    }

    fn tick_needed(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tests::{engine, FakeActuator, FakeProbe};
    use crate::engine::Engine;
    use cosched_policy::MILLIS;

    fn gang(r_milli: u32) -> Engine<FakeActuator, FakeProbe> {
        let e = engine(
            Box::new(Gang {
                slot_ns: 20 * MILLIS,
                started: false,
                next_cycle: 0,
                slot_end: 0,
                held: Vec::new(),
            }),
            &[10, 11],
        );
        for tid in [10, 11] {
            e.probe.tasks.borrow_mut().get_mut(&tid).unwrap().r_milli = r_milli;
        }
        e
    }

    fn mode(e: &Engine<FakeActuator, FakeProbe>, tid: u32) -> Mode {
        e.tracker.thread(tid).unwrap().mode
    }

    #[test]
    fn the_gang_runs_together_for_one_slot_in_r() {
        // R = 3 (two competitors on each CPU): a cycle is 60 ms, the gang's slot its first 20.
        let mut e = gang(3000);
        e.on_timer(0); // the first process's arrival armed the first cycle at 0
        for tid in [10, 11] {
            assert_eq!(
                mode(&e, tid),
                Mode::Boosted {
                    since: 0,
                    until: 20 * MILLIS
                }
            );
        }
        assert_eq!(e.next_deadline(), Some(20 * MILLIS));
        // The slot ends: both parked at nice 19 for the other two slots.
        e.on_timer(20 * MILLIS);
        for tid in [10, 11] {
            assert_eq!(mode(&e, tid), Mode::Niced { nice: 19 });
        }
        assert_eq!(e.next_deadline(), Some(60 * MILLIS));
        // The next cycle boosts both again.
        e.on_timer(60 * MILLIS);
        assert!(matches!(mode(&e, 10), Mode::Boosted { since, .. } if since == 60 * MILLIS));
        assert!(matches!(mode(&e, 11), Mode::Boosted { .. }));
        assert_eq!(e.counters.policy.get(GANG_SLOTS).copied(), Some(2));
    }

    #[test]
    fn a_thread_held_back_for_a_local_task_joins_the_slot_once_the_task_has_had_its_turn() {
        let mut e = gang(2000);
        // A local task woke on the threads' CPU just before the slot: their boosts are held back.
        e.probe.waiting.borrow_mut().replace(0);
        e.on_timer(0);
        assert_eq!(mode(&e, 10), Mode::Normal);
        assert_eq!(e.counters.boosts_held_for_local, 2);
        // Tried again a pause later (0.5 ms), while the slot lasts; still its turn then.
        assert_eq!(e.next_deadline(), Some(500_000));
        e.on_timer(500_000);
        assert_eq!(mode(&e, 10), Mode::Normal);
        assert_eq!(e.next_deadline(), Some(MILLIS));
        // It has had its turn: both join the slot for the rest of it.
        e.probe.waiting.borrow_mut().take();
        e.on_timer(MILLIS);
        for tid in [10, 11] {
            assert_eq!(
                mode(&e, tid),
                Mode::Boosted {
                    since: MILLIS,
                    until: 20 * MILLIS
                }
            );
        }
        assert_eq!(e.counters.policy.get(LATE_BOOSTS).copied(), Some(2));
        // The cycle goes on by the clock: the slot ends at 20 ms, the next starts at 40.
        e.on_timer(20 * MILLIS);
        assert_eq!(mode(&e, 10), Mode::Niced { nice: 19 });
        assert_eq!(e.next_deadline(), Some(40 * MILLIS));
    }

    #[test]
    fn alone_on_their_cpus_the_threads_keep_their_own_attributes() {
        let mut e = gang(1000);
        e.on_timer(0); // the first process's arrival armed the first cycle at 0
        assert_eq!(mode(&e, 10), Mode::Normal);
        assert!(e.act.calls.is_empty());
        assert_eq!(e.next_deadline(), Some(20 * MILLIS));
        assert_eq!(e.counters.policy.get(ALONE_SLOTS).copied(), Some(1));
    }
}
