//! `--policy pred` and `--policy dyn`: predictive coscheduling — boost the waiting threads of a process whose
//! sockets have held data lately, within the same CPU-time budget as `dcs`.
//!
//! ## Problem
//! Seed `003_d5c4b72e5fa91aa6.txt` favours a task in proportion to a moving average of the data queued on its
//! sockets, received and not read plus sent and not acknowledged (PRED), or received only (DYN): a task whose
//! queues hold data is one whose correspondents run now, so running it soon coschedules it with them — even
//! before the next message arrives, which is what DCS waits for. The rule is the policy core's
//! ([`cosched_policy::predictive::Freq`], also applied by the simulator's Linux 2.2 model); this module applies it
//! on today's kernel, where there is no `goodness()` to add a bonus to.
//!
//! ## Approach
//! The seed adds `freq` to `goodness()` only while the task's `counter` is positive, and advances `freq` at each
//! such evaluation. Here:
//! - *the evaluation* is the agent's tick (`--tick-ms`, 10 ms): each managed process's socket queues are read
//!   ([`crate::sockets`]) and folded into its `freq` by [`Freq::evaluate`];
//! - *`counter > 0`* is the job's CPU-time budget allowing a boost (the `dcs` policy's budget, one per account):
//!   a job that had its share has its average frozen and gets no favour, as a task with `counter = 0` waits for
//!   the epoch;
//! - *the favour* is a boost window (`--boost-us`, the selected mechanism), given at the tick to every thread of a
//!   process with `freq > 0` that waits for its CPU behind another task (the prediction), and at a message
//!   arrival to its receiver when the process's `freq > 0` (where `dcs` asks `2^E (Tc − Tp) + C ≥ Tq R`).
//!
//! Everything else — extension while arrivals keep coming, the budget, demotion and parking, the local user's
//! yield — is the `dcs` policy's ([`super::dcs`], built with [`RuleConfig::Predictive`]).
//!
//! ## Parameters
//! `--p-percent` 90 (`P`, the weight of the past: the seed's best for IS and MG; P ≈ 0 for master–slave),
//! `--ceiling` (any queued byte counts one 4 KB packet: small messages count), and the boost and budget flags of
//! `dcs` ([`BoostFlags`]).

use crate::policy::dcs::{BoostFlags, Dcs, RuleConfig};
use crate::policy::{Host, Policy, PolicyFlags};
use cosched_policy::config::{DynConfig, PredConfig};
use cosched_policy::predictive::FreqParams;

/// The registry's line for `pred`.
pub const PRED_SUMMARY: &str =
    "PRED + CPU-time budget: boost the waiting threads of processes whose sockets held data lately (sent or received)";
/// The registry's line for `dyn`.
pub const DYN_SUMMARY: &str =
    "DYN + CPU-time budget: as pred, counting only data received and not yet read";

/// Their flags that are the agent's alone (no parameter of the `pred`, `dyn` or `budget` kinds), and why.
pub const AGENT_ONLY: &[(&str, &str)] = &[
    (
        "boost_us",
        "length of a boost window (the seed's favour lasts while goodness is evaluated)",
    ),
    (
        "max_extend_us",
        "longest extension of a boost while arrivals keep coming",
    ),
    (
        "max_boost_ms",
        "longest a boost lasts, extensions included: what the local user waits at most",
    ),
    (
        "no_demote",
        "only refuse boosts past the budget, never lower an overdrawn job",
    ),
    (
        "no_hold_busy",
        "end a boost at its window without an arrival even while its thread computes",
    ),
];

/// The predictive rule's flags: the `pred` and `dyn` kinds' parameters (also `dynamicq --over pred`'s).
#[derive(clap::Args, Debug, Clone)]
pub struct PredRuleFlags {
    /// P, the weight of the past average in percent (seed 003: P ≈ 1 (90) for IS and MG, P ≈ 0 (10) for
    /// master–slave).
    #[arg(long, default_value_t = PredConfig::default().p_percent)]
    pub p_percent: u32,
    /// Round each socket's queue up to whole 4 KB packets instead of down, so that small messages count.
    #[arg(long)]
    pub ceiling: bool,
}

impl PredRuleFlags {
    /// PRED's rule (queues sent and received), checked by the policy core.
    pub fn pred(&self) -> anyhow::Result<RuleConfig> {
        Self::rule(
            PredConfig {
                p_percent: self.p_percent,
                ceiling: self.ceiling,
            }
            .to_params(),
        )
    }

    /// DYN's rule (queues received only).
    pub fn dyn_(&self) -> anyhow::Result<RuleConfig> {
        Self::rule(
            DynConfig {
                p_percent: self.p_percent,
                ceiling: self.ceiling,
            }
            .to_params(),
        )
    }

    fn rule(
        params: Result<FreqParams, cosched_policy::config::PolicyConfigError>,
    ) -> anyhow::Result<RuleConfig> {
        let params = params.map_err(|e| anyhow::anyhow!("--p-percent: {}", e.message))?;
        Ok(RuleConfig::Predictive(params))
    }
}

/// `cosched agent --policy pred` flags.
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Policies pred and dyn (predictive coscheduling + budget)")]
pub struct PredFlags {
    #[command(flatten)]
    pub boost: BoostFlags,
    #[command(flatten)]
    pub rule: PredRuleFlags,
}

/// `cosched agent --policy dyn` flags.
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Policies pred and dyn (predictive coscheduling + budget)")]
pub struct DynFlags {
    #[command(flatten)]
    pub boost: BoostFlags,
    #[command(flatten)]
    pub rule: PredRuleFlags,
}

impl PolicyFlags for PredFlags {
    fn build(self, _host: &Host) -> anyhow::Result<Box<dyn Policy>> {
        Ok(Box::new(Dcs::new(self.boost.resolve(self.rule.pred()?)?)))
    }
}

impl PolicyFlags for DynFlags {
    fn build(self, _host: &Host) -> anyhow::Result<Box<dyn Policy>> {
        Ok(Box::new(Dcs::new(self.boost.resolve(self.rule.dyn_()?)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tests::{arrival, engine, FakeActuator, FakeProbe};
    use crate::engine::Engine;
    use crate::policy::dcs::{PREDICTED_BOOSTS, REFUSED_PRED};
    use crate::tracker::Mode;
    use cosched_policy::predictive::{Counted, Rounding};
    use cosched_policy::predictive::{FreqTable, SocketQueue};
    use cosched_policy::MILLIS;

    fn flags<F: PolicyFlags>(args: &[&str]) -> F {
        let cmd = F::augment_args(clap::Command::new("t"));
        let m = cmd
            .try_get_matches_from(std::iter::once("t").chain(args.iter().copied()))
            .unwrap();
        F::from_arg_matches(&m).unwrap()
    }

    fn pred_engine(tgids: &[u32]) -> Engine<FakeActuator, FakeProbe> {
        let host = Host {
            kernel_tick_ns: 4 * MILLIS,
        };
        let policy = flags::<PredFlags>(&["--p-percent", "50"])
            .build(&host)
            .unwrap();
        let e = engine(policy, tgids);
        for &tid in tgids {
            let mut tasks = e.probe.tasks.borrow_mut();
            let t = tasks.get_mut(&tid).unwrap();
            t.r_milli = 2000;
            t.preempted = 1;
        }
        e
    }

    fn queued(e: &Engine<FakeActuator, FakeProbe>, tgid: u32, rmem: u64, wmem: u64) {
        e.probe
            .sockets
            .borrow_mut()
            .insert(tgid, vec![SocketQueue { rmem, wmem }]);
    }

    fn boosted(e: &Engine<FakeActuator, FakeProbe>, tid: u32) -> bool {
        matches!(e.tracker.thread(tid).unwrap().mode, Mode::Boosted { .. })
    }

    fn count(e: &Engine<FakeActuator, FakeProbe>, counter: &str) -> u64 {
        e.counters.policy.get(counter).copied().unwrap_or(0)
    }

    #[test]
    fn the_average_advances_only_while_counter_is_positive_and_follows_the_seeds_warm_up() {
        let mut p = FreqTable::new(FreqParams::pred(50));
        let q = |packets: u64| {
            [SocketQueue {
                rmem: packets * 4096,
                wmem: 0,
            }]
        };
        // Warm-up: the mean of the first samples (8, then (8 + 0) / 2 = 4).
        assert_eq!(p.evaluate(1, 1, &q(8)), 8);
        assert_eq!(p.evaluate(1, 1, &q(0)), 4);
        // counter = 0 (the agent: out of budget): no sample, no change.
        assert_eq!(p.evaluate(1, 0, &q(100)), 4);
        assert_eq!(p.evaluate(1, 1, &q(4)), 4); // (8 + 0 + 4) / 3
        assert_eq!(p.evaluate(1, 1, &q(4)), 4); // (8 + 0 + 4 + 4) / 4
                                                // Past the warm-up: (50 × 4 + 50 × 0) / 100.
        assert_eq!(p.evaluate(1, 1, &q(0)), 2);
        p.forget(1);
        assert_eq!(p.freq(1), 0);
    }

    #[test]
    fn pred_counts_sent_data_and_dyn_only_received() {
        let host = Host {
            kernel_tick_ns: 4 * MILLIS,
        };
        for (policy, want_sent_counted) in [
            (flags::<PredFlags>(&[]).build(&host).unwrap(), true),
            (flags::<DynFlags>(&[]).build(&host).unwrap(), false),
        ] {
            let mut e = engine(policy, &[10]);
            {
                let mut tasks = e.probe.tasks.borrow_mut();
                let t = tasks.get_mut(&10).unwrap();
                t.r_milli = 2000;
                t.preempted = 1;
            }
            // 8 KB sent and not acknowledged, nothing unread.
            queued(&e, 10, 0, 8192);
            e.on_tick(10 * MILLIS);
            assert_eq!(boosted(&e, 10), want_sent_counted);
        }
        assert_eq!(FreqParams::dyn_(90).counted, Counted::ReceiveOnly);
        assert_eq!(FreqParams::pred(90).rounding, Rounding::Floor);
    }

    #[test]
    fn a_tick_boosts_the_waiting_threads_of_a_process_with_data_queued_and_none_other() {
        let mut e = pred_engine(&[10, 11]);
        // 10 has 8 KB unread on its socket; 11 has 100 bytes (under one 4 KB packet: floor counts 0).
        queued(&e, 10, 8192, 0);
        queued(&e, 11, 100, 0);
        e.on_tick(10 * MILLIS);
        assert!(boosted(&e, 10));
        assert!(!boosted(&e, 11));
        assert_eq!(count(&e, PREDICTED_BOOSTS), 1);
    }

    #[test]
    fn an_arrival_is_boosted_only_for_a_process_whose_average_is_positive() {
        let mut e = pred_engine(&[10, 11]);
        queued(&e, 10, 8192, 0);
        e.on_tick(10 * MILLIS);
        // The tick boosted 10; it reads its data and blocks for more, and its window ends.
        e.probe.tasks.borrow_mut().get_mut(&10).unwrap().preempted = 0;
        e.on_timer(10 * MILLIS + MILLIS / 2);
        assert!(!boosted(&e, 10));
        e.on_arrival(&arrival(10, 2, 11 * MILLIS), 11 * MILLIS);
        assert!(boosted(&e, 10));
        e.on_arrival(&arrival(11, 2, 11 * MILLIS), 11 * MILLIS);
        assert!(!boosted(&e, 11));
        assert_eq!(count(&e, REFUSED_PRED), 1);
    }

    #[test]
    fn a_thread_on_its_cpu_or_blocked_or_alone_is_not_boosted_at_the_tick() {
        let mut e = pred_engine(&[10, 11, 12]);
        for tgid in [10, 11, 12] {
            queued(&e, tgid, 8192, 0);
        }
        {
            let mut tasks = e.probe.tasks.borrow_mut();
            tasks.get_mut(&10).unwrap().on_cpu = 1;
            tasks.get_mut(&11).unwrap().preempted = 0;
            tasks.get_mut(&12).unwrap().r_milli = 1000;
        }
        e.on_tick(10 * MILLIS);
        assert!(!boosted(&e, 10) && !boosted(&e, 11) && !boosted(&e, 12));
    }

    #[test]
    fn the_tick_runs_fast_only_while_a_managed_thread_shares_its_cpu() {
        let mut e = pred_engine(&[10]);
        e.on_tick(10 * MILLIS);
        assert!(e.tick_needed(), "R = 2: samples can change a decision");
        {
            let mut tasks = e.probe.tasks.borrow_mut();
            let t = tasks.get_mut(&10).unwrap();
            t.r_milli = 1000;
        }
        e.on_tick(20 * MILLIS);
        assert!(!e.tick_needed(), "alone on its CPU: the idle tick will do");
    }

    #[test]
    fn a_bad_p_names_its_flag() {
        let host = Host {
            kernel_tick_ns: 4 * MILLIS,
        };
        let err = flags::<PredFlags>(&["--p-percent", "101"])
            .build(&host)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("--p-percent"), "{err}");
    }
}
