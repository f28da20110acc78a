//! `--policy pb`: Periodic Boost — every period, boost the next managed process (round robin) that holds an
//! unread message and waits for its CPU.
//!
//! ## Problem
//! Seed `001_cc73854eda2a0ea6.txt` compares Self Co-Scheduling against Periodic Boost (PB), a monitor that
//! "wakes periodically and boosts a process that holds unconsumed messages" (`../shared/notes/seeds-001-004.md`
//! §001; the simulator's PB is [`cosched_policy::predictive::next_to_boost`] in `crates/sim`). DCS reacts to each
//! arrival; PB looks once a period, whatever arrived, so its cost does not grow with the message rate, and it
//! needs no fairness rule: it boosts at most one process per period, for one window.
//!
//! ## Approach
//! The rule is the policy core's [`next_to_boost`] over the managed processes in ascending pid order: a process
//! is a candidate when one of its threads has an unread message (a message arrived after its last successful
//! receive, [`has_unread`]) and waits for its CPU (runnable, preempted, off its CPU). The monitor boosts that
//! thread for `--pb-window-us`, then gives it its own attributes back (no extension: the next boost is the next
//! period's). The scan resumes after the process boosted last. Arrivals the BPF hooks hand over are not acted on
//! (counted as `arrivals_ignored`): PB does not react to them.
//!
//! ## Bound
//! At most one window per period on the whole machine: a managed job gets at most `window / period` of one CPU
//! beyond what the kernel gives it (0.5 ms / 10 ms = 5 % by default), whatever it sends — no budget needed.
//!
//! ## Algorithm
//! ```text
//! every period (a deadline armed while any process is managed):
//!     candidates = for each managed process p (ascending pid):
//!         unconsumed = some thread t of p: has_unread(t) and t off its CPU and preempted (runnable)
//!     i = next_to_boost(candidates, last)                 (round robin from the process after `last`)
//!     if i: boost that thread until now + window; last = i      else: count an idle scan
//! on window end: restore
//! ```
//!
//! ## Parameters
//! `--period-ms` 10 (the simulator's PB period, [`cosched_policy::config::PbConfig`]: seed `001` gives none) and
//! `--pb-window-us` 500 (the DCS policy's window).

use crate::config::us;
use crate::policy::{has_unread, Arrival, Counter, Ctx, Host, Policy, PolicyFlags};
use cosched_policy::predictive::{next_to_boost, PbCandidate};
use cosched_policy::Nanos;

/// The registry's one line.
pub const SUMMARY: &str =
    "Periodic Boost: every period, boost the next process (round robin) holding an unread message while it waits to run";

/// Its flags that are the agent's alone (no parameter of the `pb` kind), and why.
pub const AGENT_ONLY: &[(&str, &str)] = &[(
    "pb_window_us",
    "how long a picked process is boosted (SCHED_FIFO); the simulator's PB boosts to the next quantum",
)];

/// `cosched agent --policy pb` flags.
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Policy pb (Periodic Boost)")]
pub struct PbFlags {
    /// How often the monitor looks for a process to boost.
    #[arg(long, default_value_t = 10.0)]
    pub period_ms: f64,
    /// How long a process it picks is boosted.
    #[arg(long, default_value_t = 500)]
    pub pb_window_us: u64,
}

impl PbFlags {
    /// The flags as checked values; a bad one names its flag.
    pub fn resolve(&self) -> anyhow::Result<(Nanos, Nanos)> {
        let config = cosched_policy::config::PbConfig {
            period_ms: self.period_ms,
        };
        let period = config
            .to_params()
            .map_err(|e| anyhow::anyhow!("--period-ms: {}", e.message))?
            .period_ns;
        let window = us(self.pb_window_us, "pb-window-us")?;
        if window == 0 || window >= period {
            anyhow::bail!(
                "--pb-window-us must be positive and shorter than --period-ms ({} ms), got {} us",
                self.period_ms,
                self.pb_window_us
            );
        }
        Ok((period, window))
    }
}

impl PolicyFlags for PbFlags {
    fn build(self, _host: &Host) -> anyhow::Result<Box<dyn Policy>> {
        let (period_ns, window_ns) = self.resolve()?;
        Ok(Box::new(Pb {
            period_ns,
            window_ns,
            last: None,
            armed: false,
        }))
    }
}

/// Counter: a periodic scan boosted a process.
pub const PERIODIC_BOOSTS: &str = "periodic_boosts";
/// Counter: a periodic scan found no process to boost.
pub const IDLE_SCANS: &str = "idle_scans";
/// Counter: an arrival BPF handed over, not acted on (PB does not react to arrivals).
pub const ARRIVALS_IGNORED: &str = "arrivals_ignored";

const COUNTERS: &[Counter] = &[
    Counter {
        name: PERIODIC_BOOSTS,
        refusal: false,
        description: "processes the periodic scan boosted",
    },
    Counter {
        name: IDLE_SCANS,
        refusal: false,
        description:
            "periodic scans that found no process holding an unread message and waiting to run",
    },
    Counter {
        name: ARRIVALS_IGNORED,
        refusal: true,
        description: "arrivals handed over and not acted on (PB looks only once a period)",
    },
];

/// The policy.
pub struct Pb {
    period_ns: Nanos,
    window_ns: Nanos,
    /// The pid of the process boosted last (the scan resumes after it).
    last: Option<u32>,
    /// Whether the next scan is armed.
    armed: bool,
}

impl Pb {
    /// The thread of `tgid` a boost would help: one holding an unread message while it waits for its CPU.
    fn waiting_receiver(ctx: &Ctx, tgid: u32) -> Option<u32> {
        ctx.tids_of(tgid).into_iter().find(|&tid| {
            ctx.task(tid)
                .is_some_and(|t| has_unread(&t) && t.on_cpu == 0 && t.preempted != 0)
        })
    }

    fn arm(&mut self, ctx: &mut Ctx) {
        ctx.arm(ctx.now() + self.period_ns);
        self.armed = true;
    }
}

impl Policy for Pb {
    fn describe(&self) -> Vec<String> {
        vec![
            format!("period_ms={}", self.period_ns as f64 / 1e6),
            format!("pb_window_us={}", self.window_ns / 1000),
        ]
    }

    fn counters(&self) -> &'static [Counter] {
        COUNTERS
    }

    fn on_process_arrival(&mut self, ctx: &mut Ctx, _tgid: u32) {
        if !self.armed {
            self.arm(ctx);
        }
    }

    fn on_arrival(&mut self, ctx: &mut Ctx, a: &Arrival) {
        ctx.note(a.tgid, a.tid, ARRIVALS_IGNORED, format_args!(""));
    }

    fn on_window_end(&mut self, ctx: &mut Ctx, tid: u32) {
        ctx.restore(tid);
    }

    fn on_deadline(&mut self, ctx: &mut Ctx) {
        self.armed = false;
        let tgids = ctx.tgids();
        if tgids.is_empty() {
            return; // armed again by the next process that arrives
        }
        let receivers: Vec<Option<u32>> = tgids
            .iter()
            .map(|&tgid| Self::waiting_receiver(ctx, tgid))
            .collect();
        let candidates: Vec<PbCandidate> = receivers
            .iter()
            .map(|r| PbCandidate {
                unconsumed: u32::from(r.is_some()),
                waiting: r.is_some(),
            })
            .collect();
        // The scan resumes after the process boosted last (or the one before where it would stand, if it left).
        let last = self.last.map(|pid| {
            tgids
                .partition_point(|&t| t <= pid)
                .checked_sub(1)
                .unwrap_or(tgids.len() - 1)
        });
        match next_to_boost(&candidates, last) {
            Some(i) => {
                let (tgid, tid) = (tgids[i], receivers[i].expect("a candidate has a receiver"));
                if ctx.boost(tid, ctx.now() + self.window_ns) {
                    ctx.note(tgid, tid, PERIODIC_BOOSTS, format_args!(""));
                }
                self.last = Some(tgid);
            }
            None => {
                let first = tgids[0];
                ctx.note(first, first, IDLE_SCANS, format_args!(""));
            }
        }
        self.arm(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tests::{arrival, engine, FakeActuator, FakeProbe};
    use crate::engine::Engine;
    use crate::tracker::Mode;
    use cosched_policy::MILLIS;

    fn pb() -> Box<dyn Policy> {
        Box::new(Pb {
            period_ns: 10 * MILLIS,
            window_ns: MILLIS / 2,
            last: None,
            armed: false,
        })
    }

    /// Processes 10, 11, 12 (one thread each); `unread` hold a message that arrived after their last receive
    /// and wait, preempted, for their CPU.
    fn node(unread: &[u32]) -> Engine<FakeActuator, FakeProbe> {
        let e = engine(pb(), &[10, 11, 12]);
        for &tid in unread {
            let mut tasks = e.probe.tasks.borrow_mut();
            let t = tasks.get_mut(&tid).unwrap();
            t.last_arrival_ns = 1;
            t.preempted = 1;
        }
        e
    }

    fn boosted(e: &Engine<FakeActuator, FakeProbe>) -> Vec<u32> {
        [10, 11, 12]
            .into_iter()
            .filter(|&t| matches!(e.tracker.thread(t).unwrap().mode, Mode::Boosted { .. }))
            .collect()
    }

    fn count(e: &Engine<FakeActuator, FakeProbe>, counter: &str) -> u64 {
        e.counters.policy.get(counter).copied().unwrap_or(0)
    }

    #[test]
    fn each_period_boosts_the_next_waiting_receiver_round_robin_for_one_window() {
        let mut e = node(&[10, 12]);
        // The first scan is armed one period after the first process arrived (at 0).
        assert_eq!(e.next_deadline(), Some(10 * MILLIS));
        e.on_timer(10 * MILLIS);
        assert_eq!(boosted(&e), vec![10]);
        // Its window (0.5 ms) ends: restored, no extension.
        e.on_timer(10 * MILLIS + MILLIS / 2);
        assert!(boosted(&e).is_empty());
        // The next scan starts after 10: 11 holds nothing, 12 is next.
        e.on_timer(20 * MILLIS);
        assert_eq!(boosted(&e), vec![12]);
        e.on_timer(20 * MILLIS + MILLIS / 2);
        // And round again to 10.
        e.on_timer(30 * MILLIS);
        assert_eq!(boosted(&e), vec![10]);
        assert_eq!(count(&e, PERIODIC_BOOSTS), 3);
    }

    #[test]
    fn a_receiver_on_its_cpu_or_blocked_or_with_nothing_unread_is_not_boosted() {
        let mut e = node(&[10, 11, 12]);
        {
            let mut tasks = e.probe.tasks.borrow_mut();
            tasks.get_mut(&10).unwrap().on_cpu = 1; // running already
            tasks.get_mut(&11).unwrap().preempted = 0; // blocked: its wake-up preempts by itself
            tasks.get_mut(&12).unwrap().last_got_ns = 2; // read what came
        }
        e.on_timer(10 * MILLIS);
        assert!(boosted(&e).is_empty());
        assert_eq!(count(&e, IDLE_SCANS), 1);
        // Still armed: the monitor looks again next period.
        assert_eq!(e.next_deadline(), Some(20 * MILLIS));
    }

    #[test]
    fn arrivals_are_counted_not_acted_on() {
        let mut e = node(&[10]);
        e.on_arrival(&arrival(10, 2, MILLIS), MILLIS);
        assert!(boosted(&e).is_empty());
        assert_eq!(count(&e, ARRIVALS_IGNORED), 1);
        assert_eq!(e.counters.boosts_granted, 0);
    }

    #[test]
    fn flags_are_checked_and_name_the_bad_one() {
        let flags = |period_ms: f64, pb_window_us: u64| PbFlags {
            period_ms,
            pb_window_us,
        };
        assert_eq!(
            flags(10.0, 500).resolve().unwrap(),
            (10 * MILLIS, MILLIS / 2)
        );
        let err = flags(0.0, 500).resolve().unwrap_err().to_string();
        assert!(err.contains("--period-ms"), "{err}");
        let err = flags(1.0, 2000).resolve().unwrap_err().to_string();
        assert!(err.contains("--pb-window-us"), "{err}");
        let err = flags(f64::MAX, 500).resolve().unwrap_err().to_string();
        assert!(err.contains("period"), "{err}");
    }
}
