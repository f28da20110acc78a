//! Dynamic coscheduling (DCS): the fairness rule that decides whether a message arrival may preempt.
//!
//! Seed: `000_e8004e1596fde6a5.txt` (Sobalvarro, Pakin, Weihl, Chien — dynamic coscheduling on Solaris 2.4 and
//! Myrinet), §3.3 and Figure 2; the same decision `!threadIsRunning && fairToPreempt()` is used on Windows NT in
//! `002_53dfbd94bd660dc4.txt` with `Tq = 120 ms`.
//!
//! ## Problem
//! A message arrives for a process that is not running. Boosting it at once coschedules it with its sender, but
//! boosting on *every* arrival would let a chatty parallel job starve the local work on the node.
//!
//! ## Approach
//! Limit the *frequency* of boosts per process: allow one only when the time since the previous boost, scaled by
//! `2^E` and offset by `C`, is at least the "length of the run queue in time", `Tq × R`.
//!
//! ## Terminology
//! - `Tc` — now (ns).
//! - `Tp` — time of the previous priority boost / preemption attempt for this process (ns); none yet = fair.
//! - `E` — exponent, an integer; `E = -1` allows a boost only if the gap is at least *twice* `Tq R`.
//! - `C` — constant offset (ns); the paper gives it in milliseconds.
//! - `Tq` — length of the minimum time quantum (ns): 20 ms on Solaris 2.4, 120 ms on NT Server; on Linux the
//!   agent passes the scheduler's slice.
//! - `R` — number of jobs in the run queue of the receiver's CPU.
//!
//! ## Algorithm
//! ```text
//! on arrival for process p at time Tc:
//!     if p is running: nothing to do
//!     elif 2^E (Tc - Tp[p]) + C >= Tq R:  boost p to the maximum user priority, preempt, Tp[p] = Tc
//!     else: refuse (p waits for its turn)
//! ```
//! The comparison is done exactly in 128-bit integers: for `E < 0` both sides are multiplied by `2^-E`.
//!
//! ## The state: `Tp` per process ([`DcsState`])
//! Both halves keep `Tp` in one [`DcsState`]: the simulator keyed by its process index, the agent by tgid.
//! `Tp` is the time of the previous boost *carried out* (the seed: "time of previous priority boost and
//! preemption attempt", and "`Tc - Tp` is the time since the last preemption"). A refusal — by the fairness
//! rule itself, or by a veto outside DCS such as the agent's CPU budget — preempts nobody, so it leaves `Tp`
//! where it was: [`DcsState::consider`] decides without recording, [`DcsState::record_boost`] records the boost
//! once it has happened. (Before this type the agent set `Tp` before its budget check, so a budget refusal
//! restarted the DCS clock; the simulator never did. The simulator's reading is the seed's.)
//!
//! ## Parameters
//! The paper's runs: `E = -1, C = 0` for spin-only receive; `E = 2, C = 100 ms` for spin-block.

use crate::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::hash::Hash;

/// Tuning constants of the DCS fairness rule (`E`, `C`). `Tq` and `R` are read from the node at decision time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DcsParams {
    /// `E`: the exponent applied to the time since the previous boost.
    pub exponent: i32,
    /// `C`: constant offset, in nanoseconds.
    pub constant_ns: Nanos,
}

impl DcsParams {
    /// The paper's setting for spin-only receive: `E = -1, C = 0`.
    pub const SPIN_ONLY: DcsParams = DcsParams {
        exponent: -1,
        constant_ns: 0,
    };
    /// The paper's setting for spin-block receive: `E = 2, C = 100 ms`.
    pub const SPIN_BLOCK: DcsParams = DcsParams {
        exponent: 2,
        constant_ns: 100 * crate::MILLIS,
    };
    /// The widest exponent accepted; `2^±40` is already far beyond any useful setting.
    pub const MAX_ABS_EXPONENT: i32 = 40;

    /// Checks the parameters, so a bad value is reported once, up front, instead of saturating silently.
    pub fn validate(&self) -> Result<(), DcsError> {
        if self.exponent.abs() > Self::MAX_ABS_EXPONENT {
            return Err(DcsError::ExponentOutOfRange(self.exponent));
        }
        Ok(())
    }
}

impl Default for DcsParams {
    fn default() -> Self {
        Self::SPIN_ONLY
    }
}

/// What the node tells the rule at the moment of an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DcsInputs {
    /// `Tc`: now.
    pub now: Nanos,
    /// `Tp`: when this process was last boosted, if ever.
    pub previous_boost: Option<Nanos>,
    /// `Tq`: the minimum quantum of the node's scheduler.
    pub min_quantum: Nanos,
    /// `R`: the run-queue length of the receiver's CPU.
    pub run_queue_len: u32,
}

/// Errors in DCS parameters.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DcsError {
    #[error("DCS exponent E = {0} is out of range; use an integer in -40..=40 (the paper used -1 and 2)")]
    ExponentOutOfRange(i32),
}

/// The fairness inequality `2^E (Tc - Tp) + C >= Tq R` (seed `000`, equation 1).
///
/// A process never boosted before is always fair to boost. A `Tp` in the future (clock skew between CPUs in the
/// agent) counts as a gap of zero.
pub fn fair_to_preempt(params: &DcsParams, inputs: &DcsInputs) -> bool {
    let Some(previous) = inputs.previous_boost else {
        return true;
    };
    let gap = inputs.now.saturating_sub(previous) as i128;
    let constant = params.constant_ns as i128;
    let run_queue_time = inputs.min_quantum as i128 * inputs.run_queue_len as i128;
    let e = params
        .exponent
        .clamp(-DcsParams::MAX_ABS_EXPONENT, DcsParams::MAX_ABS_EXPONENT);
    if e >= 0 {
        (gap << e) + constant >= run_queue_time
    } else {
        // Multiply both sides by 2^-E to stay in integers: gap + C 2^-E >= Tq R 2^-E.
        let scale = -e;
        gap + (constant << scale) >= (run_queue_time << scale)
    }
}

/// The earliest `Tc` at which the fairness inequality holds for a process last boosted at `previous_boost`, on
/// a node with quantum `min_quantum` and run-queue length `run_queue_len`: `Tp + (Tq R - C) / 2^E`, rounded up
/// (at once for a process never boosted, or when `C` alone covers `Tq R`). [`fair_to_preempt`] holds from it on.
pub fn fair_from(
    params: &DcsParams,
    previous_boost: Option<Nanos>,
    min_quantum: Nanos,
    run_queue_len: u32,
) -> Nanos {
    let Some(previous) = previous_boost else {
        return 0;
    };
    let short = min_quantum as i128 * run_queue_len as i128 - params.constant_ns as i128;
    let e = params
        .exponent
        .clamp(-DcsParams::MAX_ABS_EXPONENT, DcsParams::MAX_ABS_EXPONENT);
    let gap = if short <= 0 {
        0
    } else if e >= 0 {
        // ceil(short / 2^E)
        (short + (1i128 << e) - 1) >> e
    } else {
        // 2^-E (Tq R - C), as the inequality scaled by 2^-E reads it.
        short << -e
    };
    let at = previous as i128 + gap;
    at.min(Nanos::MAX as i128) as Nanos
}

/// The whole DCS decision of Figure 2: whether an arrival should boost its receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DcsDecision {
    /// The receiver is already on a CPU: the message will be seen without help.
    AlreadyRunning,
    /// Boost the receiver to the maximum user priority and preempt the running process.
    Boost,
    /// Not fair to preempt now: the receiver waits for its turn.
    Refuse,
}

/// `if (running != receiver) { if (fair to preempt) boost }` — seed `000` Figure 2.
pub fn decide(params: &DcsParams, receiver_running: bool, inputs: &DcsInputs) -> DcsDecision {
    if receiver_running {
        DcsDecision::AlreadyRunning
    } else if fair_to_preempt(params, inputs) {
        DcsDecision::Boost
    } else {
        DcsDecision::Refuse
    }
}

/// What the node reads at an arrival besides the receiver's identity: `Tc`, `Tq`, `R`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeNow {
    /// `Tc`: now.
    pub now: Nanos,
    /// `Tq`: the minimum quantum of the node's scheduler.
    pub min_quantum: Nanos,
    /// `R`: the run-queue length of the receiver's CPU.
    pub run_queue_len: u32,
}

/// DCS on one node: the constants `E`, `C` and `Tp` for every process that was ever boosted, keyed by `K` (the
/// simulator's process index, the agent's tgid). See the module doc for when `Tp` moves.
#[derive(Clone, Debug)]
pub struct DcsState<K> {
    params: DcsParams,
    previous_boost: HashMap<K, Nanos>,
}

impl<K: Copy + Eq + Hash> DcsState<K> {
    /// No process boosted yet.
    pub fn new(params: DcsParams) -> Self {
        DcsState {
            params,
            previous_boost: HashMap::new(),
        }
    }

    /// The constants `E`, `C`.
    pub fn params(&self) -> &DcsParams {
        &self.params
    }

    /// `Tp` of `process`: when its last boost was carried out, if ever.
    pub fn previous_boost(&self, process: K) -> Option<Nanos> {
        self.previous_boost.get(&process).copied()
    }

    /// The earliest moment the rule allows a boost of `process` ([`fair_from`]).
    pub fn fair_from(&self, process: K, min_quantum: Nanos, run_queue_len: u32) -> Nanos {
        fair_from(
            &self.params,
            self.previous_boost(process),
            min_quantum,
            run_queue_len,
        )
    }

    /// Figure 2 for an arrival at `process`: what DCS says, without recording anything.
    pub fn consider(&self, process: K, receiver_running: bool, node: NodeNow) -> DcsDecision {
        let inputs = DcsInputs {
            now: node.now,
            previous_boost: self.previous_boost(process),
            min_quantum: node.min_quantum,
            run_queue_len: node.run_queue_len,
        };
        decide(&self.params, receiver_running, &inputs)
    }

    /// `Tp = Tc`: a boost of `process` was carried out at `now`.
    pub fn record_boost(&mut self, process: K, now: Nanos) {
        self.previous_boost.insert(process, now);
    }

    /// Drops `process`'s `Tp` (it exited; a new process at the same key starts fresh).
    pub fn forget(&mut self, process: K) {
        self.previous_boost.remove(&process);
    }
}

/// Seed `002`'s Fairness monitor: `R` for the rule as an *average* of the run-queue length, published once a
/// window, instead of the length at the arrival (notes §002: the monitor "periodically writes the average
/// run-queue length to the NIC"; its period is not given).
///
/// Each sample holds since the previous one (or since the monitor started): once the samples cover
/// `window_ns`, the monitor publishes `round(Σ value × Δt / Σ Δt)` (half up, in the value's own units) and starts
/// a new window. Until the first publication there is nothing to read. Sampled every tick of equal length, this
/// is the plain mean of the window's samples (the NT model's monitor).
#[derive(Clone, Debug)]
pub struct QueueLengthMonitor {
    window_ns: Nanos,
    /// Time of the previous sample (the monitor's start before the first).
    last_at: Nanos,
    /// `Σ value × Δt` over the current window.
    weighted: u128,
    /// `Σ Δt` over the current window.
    covered: Nanos,
    published: Option<u64>,
}

impl QueueLengthMonitor {
    /// A monitor started at `start_ns` that publishes every `window_ns` (at least 1 ns).
    pub fn new(window_ns: Nanos, start_ns: Nanos) -> Self {
        QueueLengthMonitor {
            window_ns: window_ns.max(1),
            last_at: start_ns,
            weighted: 0,
            covered: 0,
            published: None,
        }
    }

    /// The run-queue length seen at `now` (samples older than the previous one are ignored).
    pub fn sample(&mut self, now: Nanos, value: u64) {
        let Some(held) = now.checked_sub(self.last_at).filter(|&d| d > 0) else {
            return;
        };
        self.last_at = now;
        self.weighted += u128::from(value) * u128::from(held);
        self.covered += held;
        if self.covered >= self.window_ns {
            let covered = u128::from(self.covered);
            self.published = Some(((self.weighted + covered / 2) / covered) as u64);
            self.weighted = 0;
            self.covered = 0;
        }
    }

    /// The last published average, if a window has completed.
    pub fn published(&self) -> Option<u64> {
        self.published
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MILLIS;

    fn node(now_ms: u64, r: u32) -> NodeNow {
        NodeNow {
            now: now_ms * MILLIS,
            min_quantum: 20 * MILLIS,
            run_queue_len: r,
        }
    }

    /// What a caller that carries out every boost DCS allows does with an arrival.
    fn arrive(
        dcs: &mut DcsState<u32>,
        process: u32,
        receiver_running: bool,
        node: NodeNow,
    ) -> DcsDecision {
        let decision = dcs.consider(process, receiver_running, node);
        if decision == DcsDecision::Boost {
            dcs.record_boost(process, node.now);
        }
        decision
    }

    #[test]
    fn state_records_only_boosts_carried_out() {
        // E = -1, C = 0, Tq = 20 ms, R = 2: a boost needs 80 ms since the previous one.
        let mut dcs = DcsState::new(DcsParams::SPIN_ONLY);
        assert_eq!(arrive(&mut dcs, 7, false, node(10, 2)), DcsDecision::Boost); // first: fair, Tp = 10
        assert_eq!(dcs.previous_boost(7), Some(10 * MILLIS));
        assert_eq!(arrive(&mut dcs, 7, false, node(50, 2)), DcsDecision::Refuse); // 40 ms: refused
        assert_eq!(dcs.previous_boost(7), Some(10 * MILLIS)); // a refusal leaves Tp
                                                              // At 90 ms DCS says yes, but the caller vetoes (the agent's budget): considered, not recorded.
        assert_eq!(dcs.consider(7, false, node(90, 2)), DcsDecision::Boost);
        // So at 95 ms the gap is still 85 ms from the boost at 10: still fair.
        assert_eq!(arrive(&mut dcs, 7, false, node(95, 2)), DcsDecision::Boost);
        assert_eq!(dcs.previous_boost(7), Some(95 * MILLIS));
        // A running receiver needs nothing, and its Tp does not move.
        assert_eq!(
            arrive(&mut dcs, 7, true, node(500, 2)),
            DcsDecision::AlreadyRunning
        );
        assert_eq!(dcs.previous_boost(7), Some(95 * MILLIS));
        // Processes are independent; a forgotten one starts fresh.
        assert_eq!(arrive(&mut dcs, 8, false, node(96, 2)), DcsDecision::Boost);
        dcs.forget(7);
        assert_eq!(arrive(&mut dcs, 7, false, node(97, 2)), DcsDecision::Boost);
    }

    fn inputs(now_ms: u64, previous_ms: Option<u64>, r: u32) -> DcsInputs {
        DcsInputs {
            now: now_ms * MILLIS,
            previous_boost: previous_ms.map(|p| p * MILLIS),
            min_quantum: 20 * MILLIS,
            run_queue_len: r,
        }
    }

    #[test]
    fn first_arrival_is_always_fair() {
        assert!(fair_to_preempt(&DcsParams::SPIN_ONLY, &inputs(0, None, 8)));
    }

    #[test]
    fn spin_only_needs_twice_the_run_queue_in_time() {
        // E = -1, C = 0, Tq = 20 ms, R = 2: Tq R = 40 ms, so the gap must reach 2 × 40 = 80 ms.
        let p = DcsParams::SPIN_ONLY;
        assert!(!fair_to_preempt(&p, &inputs(179, Some(100), 2))); // 79 ms / 2 = 39.5 < 40
        assert!(fair_to_preempt(&p, &inputs(180, Some(100), 2))); // 80 ms / 2 = 40 >= 40
    }

    #[test]
    fn spin_block_constant_makes_short_queues_always_fair() {
        // E = 2, C = 100 ms, Tq = 20 ms: with R = 5, Tq R = 100 ms <= C, so even a zero gap is fair.
        let p = DcsParams::SPIN_BLOCK;
        assert!(fair_to_preempt(&p, &inputs(50, Some(50), 5)));
        // R = 9: Tq R = 180 ms; need 4 × gap + 100 >= 180, gap >= 20 ms.
        assert!(!fair_to_preempt(&p, &inputs(69, Some(50), 9))); // 4 × 19 + 100 = 176 < 180
        assert!(fair_to_preempt(&p, &inputs(70, Some(50), 9))); // 4 × 20 + 100 = 180 >= 180
    }

    #[test]
    fn empty_run_queue_is_always_fair() {
        // R = 0: Tq R = 0 and 2^E × gap + C >= 0 always.
        assert!(fair_to_preempt(
            &DcsParams::SPIN_ONLY,
            &inputs(1, Some(1), 0)
        ));
    }

    #[test]
    fn negative_exponent_is_exact_on_odd_gaps() {
        // E = -3: gap / 8 >= Tq R. Tq = 20 ms, R = 1: need gap >= 160 ms; 159.999999 ms must be refused.
        let p = DcsParams {
            exponent: -3,
            constant_ns: 0,
        };
        let mut i = inputs(0, Some(0), 1);
        i.now = 160 * MILLIS - 1;
        assert!(!fair_to_preempt(&p, &i));
        i.now = 160 * MILLIS;
        assert!(fair_to_preempt(&p, &i));
    }

    #[test]
    fn previous_boost_in_the_future_counts_as_zero_gap() {
        // Tp > Tc (cross-CPU clock skew): gap 0, E = -1, C = 0, R = 1 → 0 >= 20 ms is false.
        assert!(!fair_to_preempt(
            &DcsParams::SPIN_ONLY,
            &inputs(10, Some(11), 1)
        ));
    }

    #[test]
    fn decision_follows_figure_two() {
        let p = DcsParams::SPIN_ONLY;
        assert_eq!(
            decide(&p, true, &inputs(0, None, 3)),
            DcsDecision::AlreadyRunning
        );
        assert_eq!(decide(&p, false, &inputs(0, None, 3)), DcsDecision::Boost);
        assert_eq!(
            decide(&p, false, &inputs(1, Some(0), 3)),
            DcsDecision::Refuse
        );
    }

    #[test]
    fn exponent_range_is_validated() {
        assert!(DcsParams {
            exponent: 41,
            constant_ns: 0
        }
        .validate()
        .is_err());
        assert!(DcsParams {
            exponent: -5,
            constant_ns: 0
        }
        .validate()
        .is_ok());
    }

    #[test]
    fn the_monitor_publishes_the_time_weighted_mean_once_a_window() {
        let mut m = QueueLengthMonitor::new(100, 0);
        // Ticks every 10: values 1 ×5 then 2 ×4 cover 90 < 100: nothing yet.
        for (i, v) in [1, 1, 1, 1, 1, 2, 2, 2, 2].into_iter().enumerate() {
            m.sample(10 * (i as u64 + 1), v);
        }
        assert_eq!(m.published(), None);
        // The tenth tick completes the window: mean (5 × 1 + 5 × 2) / 10 = 1.5, rounded half up to 2.
        m.sample(100, 2);
        assert_eq!(m.published(), Some(2));
        // Uneven samples: 3 held 20, 0 held 80 → (60 + 0) / 100 = 0.6 → 1; published stays until then.
        m.sample(120, 3);
        assert_eq!(m.published(), Some(2));
        m.sample(200, 0);
        assert_eq!(m.published(), Some(1));
        // A sample not after the previous one is ignored.
        m.sample(200, 50);
        m.sample(150, 50);
        m.sample(300, 0);
        assert_eq!(m.published(), Some(0));
    }

    proptest::proptest! {
        /// `fair_from` is exactly where the inequality starts to hold: at it a boost is fair, a nanosecond
        /// before it (when that is after `Tp`) it is not.
        #[test]
        fn fair_from_is_the_first_moment_the_inequality_holds(
            exponent in -6i32..=6,
            constant_ns in 0u64..50_000_000,
            quantum_ns in 1u64..20_000_000,
            r in 1u32..8,
            previous in 0u64..1_000_000_000,
        ) {
            let params = DcsParams { exponent, constant_ns };
            let at = fair_from(&params, Some(previous), quantum_ns, r);
            let inputs = |now| DcsInputs {
                now,
                previous_boost: Some(previous),
                min_quantum: quantum_ns,
                run_queue_len: r,
            };
            proptest::prop_assert!(at >= previous);
            proptest::prop_assert!(fair_to_preempt(&params, &inputs(at)));
            if at > previous {
                proptest::prop_assert!(!fair_to_preempt(&params, &inputs(at - 1)));
            }
        }
    }

    #[test]
    fn a_process_never_boosted_is_fair_from_the_start() {
        assert_eq!(fair_from(&DcsParams::SPIN_ONLY, None, 4 * MILLIS, 3), 0);
        // E = 2, C = 0, Tq = 4 ms, R = 2: Tp + 2 ms.
        let params = DcsParams {
            exponent: 2,
            constant_ns: 0,
        };
        assert_eq!(
            fair_from(&params, Some(10 * MILLIS), 4 * MILLIS, 2),
            12 * MILLIS
        );
    }
}
